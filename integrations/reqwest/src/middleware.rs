//! [`HedgeMiddleware`]: the `reqwest_middleware::Middleware` that hedges requests.

use std::convert::Infallible;
use std::fmt;

use async_trait::async_trait;
use hedging::timer::Timer;
use hedging::{Attempt, Hedgeable, Policy};
use hedging_http_rules::HedgedMethods;
use http::Extensions;
use reqwest::{Method, Request, Response};
use reqwest_middleware::{Middleware, Next};

use crate::classify::{ClassifyResponse, DefaultClassify};

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
/// `calls`. A request of a hedged method whose body cannot be copied (a stream) is a
/// call sent once, unhedged, and counted in `calls`; a `Retry-After` on its answer
/// returns that answer at once, as no copy can follow it. The rule is every
/// integration's: [which requests are counted](https://docs.rs/hedging-http-rules/latest/hedging_http_rules/#which-requests-are-counted).
///
/// # Copies
///
/// Each copy is `Request::try_clone` of the original, sent through a clone of `Next`
/// (the rest of the middleware chain, then the client) with its own clone of the
/// request's `Extensions`; the extensions of the copy whose answer is returned are
/// written back. A copy is won by its response headers: the body streams from that copy
/// alone.
pub struct HedgeMiddleware<T, C = DefaultClassify> {
    policy: Policy<T>,
    methods: HedgedMethods,
    classify: C,
}

impl<T> HedgeMiddleware<T> {
    /// Hedges GET, HEAD and OPTIONS requests by `policy`, with [`DefaultClassify`].
    pub fn new(policy: Policy<T>) -> Self {
        HedgeMiddleware {
            policy,
            methods: HedgedMethods::default(),
            classify: DefaultClassify::new(),
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
        }
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
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        if !self.methods.hedges(request.method(), extensions) {
            self.policy.count_out_of_scope();
            return next.run(request, extensions).await;
        }
        // `None` for a streaming body: the original goes alone, and no copy follows it.
        let template = request.try_clone();
        // Told to the race, not found out when a copy is due: a pushback on the only
        // copy then ends the call at once.
        let max_copies = if template.is_some() { usize::MAX } else { 1 };
        let mut original = Some(request);
        let caller_extensions = extensions.clone();
        let answer = (|_: Attempt| {
            let request = match original.take() {
                Some(request) => request,
                None => template.as_ref()?.try_clone()?,
            };
            let mut copy_extensions = caller_extensions.clone();
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
