//! [`HedgeMiddleware`]: the `reqwest_middleware::Middleware` that hedges requests.

use std::convert::Infallible;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use async_trait::async_trait;
use hedging::timer::Timer;
use hedging::{Attempt, Hedgeable, Policy};
use hedging_http_rules::{HedgedMethods, InvalidOrigin};
use http::Extensions;
use reqwest::{Method, Request, Response};
use reqwest_middleware::{Middleware, Next};

use crate::classify::{ClassifyResponse, DefaultClassify};
use crate::key::{target, KeyBy};
use crate::replicas::Replicas;

/// Hedges the requests of a `reqwest_middleware` client by a [`Policy`]: when a request
/// has not answered within the policy's delay, a copy is sent, and the first answer
/// that wins is returned; the others are dropped (their connections closed).
///
/// ```
/// use std::time::Duration;
/// use hedging::{timer::TokioTimer, Policy};
/// use reqwest_hedging::HedgeMiddleware;
/// use reqwest_middleware::ClientBuilder;
///
/// let policy = Policy::builder()
///     .delay(Duration::from_millis(20))
///     .timer(TokioTimer::new())
///     .build();
/// let client = ClientBuilder::new(reqwest::Client::new())
///     .with(HedgeMiddleware::new(policy))
///     .build();
/// ```
///
/// # Which requests
///
/// GET, HEAD and OPTIONS by default ([`methods`](Self::methods) replaces the list), and
/// not those carrying [`NoHedge`](crate::NoHedge). Any other request is outside the
/// middleware's scope: it passes on to `Next` as if the middleware were not there, and
/// is counted in the policy's [`out_of_scope`](hedging::Stats::out_of_scope), not in its
/// `calls`. While the policy is disabled ([`Policy::set_enabled`]) or has one copy, a
/// request of a hedged method is sent as it was given (neither it nor its extensions
/// copied) and counted in `calls`. A request of a hedged method whose body cannot be
/// copied (a stream) is a call sent once, unhedged, and counted in `calls`; a
/// `Retry-After` on its answer returns that answer at once, as no copy can follow it. The rule is every
/// integration's: [which requests are counted](https://docs.rs/hedging-http-rules/latest/hedging_http_rules/#which-requests-are-counted).
///
/// # Copies
///
/// Each copy is `Request::try_clone` of the original, sent through a clone of `Next`
/// (the rest of the middleware chain, then the client) with its own clone of the
/// request's `Extensions`; the extensions of the copy whose answer is returned are
/// written back. A copy is won by its response headers: the body streams from that copy
/// alone.
///
/// # Replicas
///
/// With [`replicas`](Self::replicas), copy k of a call goes to base URL
/// `(first + k) mod n` instead of the request's own host, its path and query kept, and
/// `first` moves on by one from call to call: a hedge does not follow its original to
/// the replica that is slow, and one that refuses connections fails only its own copy
/// (the next starts at once).
///
/// # Keys
///
/// On a policy with [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys), each call
/// is keyed by its target, so one client over a fast API and a slow one learns a delay
/// per host: the key is `(scheme, authority)`, two `&str`, the authority as the URL keeps
/// it (host, and port unless it is the scheme's default; credentials left out), taken
/// before [`replicas`](Self::replicas) sends a copy elsewhere, so every replica of one
/// target shares its delay. `policy.delay_for(&("http", "10.0.0.1:8080"))` is the delay
/// such a call gets now. [`key_by`](Self::key_by) keys otherwise. On a policy without
/// keys the key is never hashed.
pub struct HedgeMiddleware<T, C = DefaultClassify> {
    policy: Policy<T>,
    methods: HedgedMethods,
    classify: C,
    replicas: Option<Arc<Replicas>>,
    key_by: KeyBy<T>,
}

impl<T> HedgeMiddleware<T> {
    /// Hedges GET, HEAD and OPTIONS requests by `policy`, with [`DefaultClassify`].
    pub fn new(policy: Policy<T>) -> Self {
        HedgeMiddleware {
            policy,
            methods: HedgedMethods::default(),
            classify: DefaultClassify::new(),
            replicas: None,
            key_by: KeyBy::default(),
        }
    }
}

impl<T, C> HedgeMiddleware<T, C> {
    /// The methods to hedge, replacing the default GET, HEAD and OPTIONS. Hedge only
    /// requests that are safe to send twice; an empty list hedges nothing.
    pub fn methods(mut self, methods: impl IntoIterator<Item = Method>) -> Self {
        self.methods = HedgedMethods::new(methods);
        self
    }

    /// Decides what each copy's answer means, in place of [`DefaultClassify`].
    pub fn classify<K: ClassifyResponse>(self, classify: K) -> HedgeMiddleware<T, K> {
        HedgeMiddleware {
            policy: self.policy,
            methods: self.methods,
            classify,
            replicas: self.replicas,
            key_by: self.key_by,
        }
    }

    /// Sends the copies of each call to these base URLs, copy k to base
    /// `(first + k) mod n` with `first` moving on by one per call, each keeping the
    /// request's path and query: `["http://10.0.0.1:8080", "http://10.0.0.2:8080"]`.
    /// Every request then goes to one of them, whatever host its URL names: one outside
    /// the middleware's scope, or one sent once, goes to the next call's first.
    ///
    /// A base is an origin, `http` or `https`, a host and a port; one with a path (other
    /// than `/`) or a query, one that is no URL, and an empty list are an
    /// [`InvalidOrigin`] naming the base and why (the rule of
    /// [`hedging_http_rules::origin`], which `hedging-http`'s `Origin` follows too).
    ///
    /// ```
    /// # use hedging::{timer::TokioTimer, Policy};
    /// # use reqwest_hedging::HedgeMiddleware;
    /// # let policy = Policy::builder().timer(TokioTimer::new()).build();
    /// let hedge = HedgeMiddleware::new(policy)
    ///     .replicas(["http://10.0.0.1:8080", "http://10.0.0.2:8080", "http://10.0.0.3:8080"])?;
    /// // client.get("http://catalog/items?page=2"): copy 0 to 10.0.0.1:8080/items?page=2,
    /// // its hedge to 10.0.0.2; the next call starts at 10.0.0.2.
    /// # Ok::<(), reqwest_hedging::InvalidOrigin>(())
    /// ```
    pub fn replicas<I>(mut self, bases: I) -> Result<Self, InvalidOrigin>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        self.replicas = Some(Arc::new(Replicas::new(bases)?));
        Ok(self)
    }

    /// Keys each call by what `key` makes of its request, replacing the default key, the
    /// request's target `(scheme, authority)` (see [Keys](Self#keys)). Called for every
    /// call the middleware hedges, before any copy is sent; its key is hashed only on a
    /// policy with keys.
    ///
    /// ```
    /// # use hedging::{timer::TokioTimer, Policy};
    /// # use reqwest_hedging::HedgeMiddleware;
    /// let policy = Policy::builder()
    ///     .adaptive_delay(0.95)
    ///     .adaptive_keys(64)
    ///     .timer(TokioTimer::new())
    ///     .build();
    /// // A delay per host and first path segment: `/search` and `/items` of one API.
    /// let hedge = HedgeMiddleware::new(policy).key_by(|request: &reqwest::Request| {
    ///     let url = request.url();
    ///     let segment = url.path_segments().and_then(|mut s| s.next()).unwrap_or("");
    ///     (url.host_str().unwrap_or("").to_owned(), segment.to_owned())
    /// });
    /// ```
    pub fn key_by<Q, F>(mut self, key: F) -> Self
    where
        Q: Hash,
        F: Fn(&Request) -> Q + Send + Sync + 'static,
        T: 'static,
    {
        self.key_by = KeyBy::custom(key);
        self
    }

    /// The policy requests are hedged by; its [`stats`](Policy::stats) count them.
    pub fn policy(&self) -> &Policy<T> {
        &self.policy
    }
}

impl<T: fmt::Debug, C> fmt::Debug for HedgeMiddleware<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgeMiddleware")
            .field("policy", &self.policy)
            .field("methods", &self.methods.as_slice())
            .field("replicas", &self.replicas.as_ref().map(|r| r.bases()))
            .field("key", &self.key_by)
            .finish_non_exhaustive()
    }
}

/// One copy's answer, with the extensions the chain below left on it.
struct Answer {
    result: reqwest_middleware::Result<Response>,
    extensions: Extensions,
}

#[async_trait]
impl<T, C> Middleware for HedgeMiddleware<T, C>
where
    T: Timer + Send + Sync + 'static,
    T::Sleep: Send,
    C: ClassifyResponse,
{
    async fn handle(
        &self,
        mut request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let first = self.replicas.as_ref().map(|replicas| replicas.first());
        let send_to = |request: &mut Request, copy: usize| {
            if let (Some(replicas), Some(first)) = (&self.replicas, first) {
                replicas.send_to(request.url_mut(), first, copy);
            }
        };
        if !self.methods.hedges(request.method(), extensions) {
            self.policy.count_out_of_scope();
            send_to(&mut request, 0);
            return next.run(request, extensions).await;
        }
        // A call that may not hedge (the policy disabled, or one copy) sends its request
        // and extensions as it was given. `None` for a streaming body too: the original
        // goes alone, and no copy follows it.
        let allowed = self.policy.copies_allowed(usize::MAX);
        // Read before a replica rewrites the URL: the key names the logical target.
        let policy = &self.policy;
        let key = self.key_by.key(policy, &request, |request| {
            policy.key_hash(&target(request.url()))
        });
        let template = (allowed > 1).then(|| request.try_clone()).flatten();
        // Told to the race, not found out when a copy is due: a pushback on the only
        // copy then ends the call at once.
        let max_copies = if template.is_some() { allowed } else { 1 };
        let mut original = Some(request);
        let mut caller_extensions = match template.is_some() {
            true => extensions.clone(),
            false => std::mem::take(extensions),
        };
        let answer = (|attempt: Attempt| {
            let mut request = match original.take() {
                Some(request) => request,
                None => template.as_ref()?.try_clone()?,
            };
            send_to(&mut request, attempt.index());
            let mut copy_extensions = match template.is_some() {
                true => caller_extensions.clone(),
                false => std::mem::take(&mut caller_extensions),
            };
            let next = next.clone();
            Some(async move {
                let result = next.run(request, &mut copy_extensions).await;
                Ok::<_, Infallible>(Answer {
                    result,
                    extensions: copy_extensions,
                })
            })
        })
        .hedged(&self.policy)
        .key_hash(key)
        .max_copies(max_copies)
        .classify(|answer: &Result<Answer, Infallible>| match answer {
            Ok(answer) => self.classify.verdict(&answer.result),
            Err(never) => match *never {},
        })
        .await;
        let Ok(answer) = answer;
        *extensions = answer.extensions;
        answer.result
    }
}
