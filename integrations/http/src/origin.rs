//! [`Origin`]: one HTTP client made one replica of a [`Replicas`] set, by the origin it
//! sends every request to.

use core::fmt;
use core::task::{Context, Poll};

use hedging::tower::Replicas;
use hedging_http_rules::InvalidOrigin;
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{Request, Uri};
use tower_service::Service;

/// Sends every request to one origin (scheme, host and port), keeping its path and query:
/// a client, such as a hyper-util `Client`, made one replica of a [`Replicas`] set, so
/// that [`HttpHedgeLayer`](crate::HttpHedgeLayer) sends copy k of a call to origin
/// `(first + k) mod n`.
///
/// ```
/// use std::time::Duration;
/// use hedging_http::hedging::{timer::TokioTimer, Policy};
/// use hedging_http::{HttpHedgeLayer, Origin};
/// use hyper_util::{client::legacy::Client, rt::TokioExecutor};
/// use tower::Layer;
///
/// let policy = Policy::builder().delay(Duration::from_millis(20)).timer(TokioTimer::new()).build();
/// let client = Client::builder(TokioExecutor::new()).build_http::<http_body_util::Empty<bytes::Bytes>>();
/// let origins = ["http://10.0.0.1:8080", "http://10.0.0.2:8080", "http://10.0.0.3:8080"];
/// let hedged = HttpHedgeLayer::new(policy).layer(Origin::replicas(client, origins)?);
/// // A request for `http://catalog/items?page=2` goes to `http://10.0.0.1:8080/items?page=2`,
/// // its hedge to 10.0.0.2; the next call starts at 10.0.0.2.
/// # let _ = hedged;
/// # Ok::<(), hedging_http::InvalidOrigin>(())
/// ```
///
/// The request's headers are kept as they are: a `Host` header it carries goes to every
/// origin (hyper sets one from the new URI when there is none).
#[derive(Clone)]
pub struct Origin<S> {
    inner: S,
    scheme: Scheme,
    authority: Authority,
}

impl<S> Origin<S> {
    /// Sends every request through `inner` to `origin`: `http://host:port`, or `https://`;
    /// a path of `/` is allowed, any other path or a query is not
    /// ([`hedging_http_rules::origin`], the rule `reqwest-hedging` follows too).
    pub fn new(inner: S, origin: &str) -> Result<Self, InvalidOrigin> {
        let (scheme, authority) = hedging_http_rules::origin(origin)?;
        Ok(Origin {
            inner,
            scheme,
            authority,
        })
    }

    /// A [`Replicas`] set of `inner`, one replica per origin, in order: see
    /// [`Origin::new`] for what an origin may be.
    pub fn replicas<I>(inner: S, origins: I) -> Result<Replicas<Origin<S>>, InvalidOrigin>
    where
        S: Clone,
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let replicas = hedging_http_rules::origins(origins)?;
        Ok(Replicas::new(replicas.into_iter().map(
            |(scheme, authority)| Origin {
                inner: inner.clone(),
                scheme,
                authority,
            },
        )))
    }

    /// The origin requests go to, as `scheme://host:port`.
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme, self.authority)
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, B> Service<Request<B>> for Origin<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> S::Future {
        let mut parts = core::mem::take(request.uri_mut()).into_parts();
        parts.scheme = Some(self.scheme.clone());
        parts.authority = Some(self.authority.clone());
        parts
            .path_and_query
            .get_or_insert(PathAndQuery::from_static("/"));
        *request.uri_mut() =
            Uri::from_parts(parts).expect("a scheme, an authority and a path make a URI");
        self.inner.call(request)
    }
}

impl<S> fmt::Debug for Origin<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Origin")
            .field("origin", &self.origin())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_origin_or_none_is_an_error() {
        let error = Origin::new((), "http://h/api").unwrap_err().to_string();
        assert!(error.contains("a path or query"), "{error}");
        let none: [&str; 0] = [];
        let error = Origin::replicas((), none).unwrap_err().to_string();
        assert!(error.contains("no origin given"), "{error}");
    }

    #[test]
    fn a_request_keeps_its_path_and_query_and_takes_the_origin() {
        let mut origin = Origin::new(
            tower::service_fn(|r: Request<()>| async move { Ok::<_, ()>(r.uri().clone()) }),
            "http://10.0.0.2:9000",
        )
        .unwrap();
        let mut sent = |uri: &str| -> Uri {
            let request = Request::get(uri).body(()).unwrap();
            futures::executor::block_on(origin.call(request)).unwrap()
        };
        assert_eq!(
            sent("https://catalog/items?page=2"),
            "http://10.0.0.2:9000/items?page=2"
        );
        assert_eq!(sent("/relative"), "http://10.0.0.2:9000/relative");
    }
}
