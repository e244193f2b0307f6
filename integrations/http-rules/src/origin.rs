//! What a replica's address may be: an origin, scheme, host and port.

use std::fmt;

use http::uri::{Authority, Scheme};
use http::Uri;

/// Reads `text` as an origin a copy may be sent to: `http://host:port` or
/// `https://host:port` (a path of `/` allowed), its scheme and authority. Anything else
/// (no scheme, another scheme, no host, a path, a query) is an [`InvalidOrigin`] naming
/// the text and why. The rule of `hedging_http::Origin` and of
/// `reqwest_hedging::HedgeMiddleware::replicas`.
///
/// ```
/// use hedging_http_rules::origin;
///
/// let (scheme, authority) = origin("http://10.0.0.1:8080").unwrap();
/// assert_eq!((scheme.as_str(), authority.as_str()), ("http", "10.0.0.1:8080"));
/// assert!(origin("http://10.0.0.1:8080/api").unwrap_err().to_string().contains("a path"));
/// ```
pub fn origin(text: &str) -> Result<(Scheme, Authority), InvalidOrigin> {
    let invalid = |why| InvalidOrigin {
        origin: text.into(),
        why,
    };
    let uri: Uri = text.parse().map_err(|_| invalid("not a URI"))?;
    let parts = uri.into_parts();
    let scheme = parts.scheme.ok_or(invalid("no scheme"))?;
    if scheme != Scheme::HTTP && scheme != Scheme::HTTPS {
        return Err(invalid("not http or https"));
    }
    let authority = parts.authority.ok_or(invalid("no host"))?;
    if authority.host().is_empty() {
        return Err(invalid("no host"));
    }
    if parts.path_and_query.is_some_and(|p| p.as_str() != "/") {
        return Err(invalid(
            "a path or query; an origin is scheme, host and port",
        ));
    }
    Ok((scheme, authority))
}

/// Reads each of `texts` as an [`origin`], in order: the set a call's copies go round.
/// The first that is not an origin, or an empty list, is an [`InvalidOrigin`].
pub fn origins<I>(texts: I) -> Result<Vec<(Scheme, Authority)>, InvalidOrigin>
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    let origins = texts
        .into_iter()
        .map(|text| origin(text.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    if origins.is_empty() {
        return Err(InvalidOrigin {
            origin: String::new(),
            why: NO_ORIGIN,
        });
    }
    Ok(origins)
}

/// The error of a list of origins that is empty.
const NO_ORIGIN: &str = "no origin given; a set needs at least one";

/// An origin a copy cannot be sent to, with why; see [`origin`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidOrigin {
    origin: String,
    why: &'static str,
}

impl fmt::Display for InvalidOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid origin {:?}: {}", self.origin, self.why)
    }
}

impl std::error::Error for InvalidOrigin {}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<String, String> {
        origin(text)
            .map(|(scheme, authority)| format!("{scheme}://{authority}"))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn an_origin_is_a_scheme_a_host_and_a_port() {
        assert_eq!(
            read("http://10.0.0.1:8080").unwrap(),
            "http://10.0.0.1:8080"
        );
        assert_eq!(read("https://db.example/").unwrap(), "https://db.example");
    }

    #[test]
    fn anything_else_is_refused_naming_it_and_why() {
        for (text, why) in [
            ("10.0.0.1:8080", "no scheme"),
            ("/items", "no scheme"),
            ("ftp://h/", "not http or https"),
            ("http://h/api", "a path or query"),
            ("http://h/?a=1", "a path or query"),
            ("not a uri", "not a URI"),
        ] {
            let error = read(text).unwrap_err();
            assert!(error.contains(why), "{text}: {error}");
            assert!(error.contains(text), "{text}: {error}");
        }
        let none: [&str; 0] = [];
        assert!(origins(none).unwrap_err().to_string().contains(NO_ORIGIN));
    }
}
