//! [`HedgedHttpClient`]: the smithy `HttpClient` that hedges the reads it is sent, and its
//! connector.

use std::borrow::Cow;
use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use hedging::timer::Timer;
use hedging::{Attempt, Hedgeable, Policy, Verdict};
use http::header::RETRY_AFTER;
use http::{HeaderMap, HeaderValue, StatusCode};

use crate::key::{has_keys, KeyBy};
use crate::operation::{Operation, OperationInterceptor, Operations};

/// The longest `Retry-After` a call waits for before its next copy (a longer one stops
/// further copies), as in every integration's default.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(1);

/// A smithy [`HttpClient`] that hedges reads by a [`Policy`]: when a request of a hedged
/// operation has not answered within the policy's delay, the same signed request is sent
/// again through the client it wraps, and the first answer that wins is returned; the
/// others are dropped (their connections closed).
///
/// ```
/// # use hedging_aws::hedging::{timer::ManualTimer, Policy};
/// # use hedging_aws::HedgedHttpClient;
/// # fn any_client() -> hedging_aws::SharedHttpClient { unimplemented!() }
/// # fn build(http_client: hedging_aws::SharedHttpClient) {
/// # let policy = Policy::builder().timer(ManualTimer::new()).build();
/// let client = HedgedHttpClient::new(http_client, policy).operations(["GetObject", "GetItem"]);
/// // builder.http_client(client.clone()).interceptor(client.interceptor()), or with the
/// // features `s3` / `dynamodb`: builder.hedged(client)
/// # }
/// ```
///
/// # Which requests
///
/// Those of the operations in [`DEFAULT_OPERATIONS`](crate::DEFAULT_OPERATIONS) (reads of
/// S3 and DynamoDB), or the list [`operations`](Self::operations) gives, by the name the
/// [`OperationInterceptor`] puts on each request, never by HTTP method: each is a call,
/// counted in the policy's `calls`. A request whose body cannot be copied (a stream that
/// is not retryable) is a call sent once. Any other request (a write, a request of a
/// client without the interceptor) passes on to the wrapped client untouched and is
/// counted in the policy's [`out_of_scope`](hedging::Stats::out_of_scope). The rule is
/// every integration's: [which requests are counted](https://docs.rs/hedging-http-rules/latest/hedging_http_rules/#which-requests-are-counted).
///
/// # Copies
///
/// Each copy is [`Request::try_clone`](aws_smithy_runtime_api::http::Request::try_clone)
/// of the signed request, sent as it is: its signature stays valid within the clock skew
/// the service allows, far longer than any hedge delay. The original keeps the request's
/// extensions; copies have none. A copy is won by its response headers; 502, 503 and 504
/// and I/O or timeout errors of the connector start the next copy at once (the shared
/// rule of [`hedging_http_rules::status_verdict`]); any other error is returned at once.
///
/// # Keys
///
/// On a policy with [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys), each call is
/// keyed by its [`Operation::key`], the tuple `(operation, resource)` of two `&str`: the
/// operation's name and the bucket (S3) or table (DynamoDB) its input names, `""` for an
/// operation without one resource (`BatchGetItem`, `TransactGetItems`). A delay is learnt
/// for each: `policy.delay_for(&("GetObject", "my-bucket"))` is the one the next
/// `GetObject` of `my-bucket` gets. [`key_by`](Self::key_by) keys otherwise. On a policy
/// without keys no key is made: the client checks once per call whether the policy has
/// keys, and that is all.
pub struct HedgedHttpClient<T> {
    inner: SharedHttpClient,
    policy: Policy<T>,
    operations: Operations,
    key_by: KeyBy,
}

impl<T> HedgedHttpClient<T> {
    /// Hedges the reads of [`DEFAULT_OPERATIONS`](crate::DEFAULT_OPERATIONS) sent through
    /// `inner` (the client the SDK would use otherwise), by `policy`.
    pub fn new(inner: impl HttpClient + 'static, policy: Policy<T>) -> Self {
        HedgedHttpClient {
            inner: SharedHttpClient::new(inner),
            policy,
            operations: Operations::default(),
            key_by: KeyBy::default(),
        }
    }

    /// The operations to hedge, by the SDK's names (`GetObject`, `Query`), replacing the
    /// default list. Hedge only operations that are safe to send twice; an empty list
    /// hedges nothing.
    pub fn operations<I>(mut self, names: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<Cow<'static, str>>,
    {
        self.operations = Operations::new(names);
        self
    }

    /// Keys each hedged call by what `key_by` makes of its [`Operation`] (its name and
    /// resource), replacing the default `(operation, resource)`: any owned value that
    /// hashes (a `String`, a `u64`, a `&'static str`, a tuple of them). Query the policy
    /// with the same value: `policy.delay_for(&key)`.
    ///
    /// `key_by` is called once per call, when the call makes its race (its first copy
    /// did not answer at once), and only on a policy with
    /// [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys): never per copy, and never
    /// on a policy without keys.
    ///
    /// ```
    /// # use hedging_aws::hedging::{timer::ManualTimer, Policy};
    /// # use hedging_aws::{HedgedHttpClient, Operation};
    /// # fn build(http_client: hedging_aws::SharedHttpClient) {
    /// # let policy = Policy::builder().adaptive_delay(0.95).adaptive_keys(8).timer(ManualTimer::new()).build();
    /// // One delay per bucket, whatever the operation: `policy.delay_for("my-bucket")`.
    /// let client = HedgedHttpClient::new(http_client, policy)
    ///     .key_by(|operation: &Operation| operation.resource().to_owned());
    /// # }
    /// ```
    pub fn key_by<F, K>(mut self, key_by: F) -> Self
    where
        F: Fn(&Operation) -> K + Send + Sync + 'static,
        K: Hash,
    {
        self.key_by = KeyBy::new(key_by);
        self
    }

    /// The interceptor that names each request's operation: install it on the same SDK
    /// config as this client (the features' [`HedgeSdkConfig::hedged`](crate::HedgeSdkConfig)
    /// does both). Without it every request is out of scope.
    pub fn interceptor(&self) -> OperationInterceptor {
        OperationInterceptor
    }

    /// The policy reads are hedged by; its [`stats`](Policy::stats) count them.
    pub fn policy(&self) -> &Policy<T> {
        &self.policy
    }
}

impl<T> Clone for HedgedHttpClient<T> {
    fn clone(&self) -> Self {
        HedgedHttpClient {
            inner: self.inner.clone(),
            policy: self.policy.clone(),
            operations: self.operations.clone(),
            key_by: self.key_by.clone(),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for HedgedHttpClient<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgedHttpClient")
            .field("inner", &self.inner)
            .field("policy", &self.policy)
            .field("operations", &self.operations.as_slice())
            .field("key_by", &self.key_by)
            .finish()
    }
}

impl<T> HttpClient for HedgedHttpClient<T>
where
    T: Timer + fmt::Debug + Send + Sync + 'static,
    T::Sleep: Send,
{
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(HedgedConnector {
            inner: self.inner.http_connector(settings, components),
            policy: self.policy.clone(),
            operations: self.operations.clone(),
            key_by: has_keys(&self.policy).then(|| self.key_by.clone()),
        })
    }
}

/// The connector a [`HedgedHttpClient`] hands the SDK for one attempt: the wrapped
/// client's connector, hedged.
struct HedgedConnector<T> {
    inner: SharedHttpConnector,
    policy: Policy<T>,
    operations: Operations,
    /// `None` on a policy without keys: its calls make no key.
    key_by: Option<KeyBy>,
}

impl<T: fmt::Debug> fmt::Debug for HedgedConnector<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgedConnector")
            .field("inner", &self.inner)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl<T> HttpConnector for HedgedConnector<T>
where
    T: Timer + fmt::Debug + Send + Sync + 'static,
    T::Sleep: Send,
{
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let operation = request.extension::<Operation>();
        let Some(operation) = operation.filter(|operation| self.operations.hedges(operation))
        else {
            self.policy.count_out_of_scope();
            return self.inner.call(request);
        };
        let key = self
            .key_by
            .as_ref()
            .map(|key_by| key_by.call_key(operation));
        // `None` for a call that may not hedge (the policy disabled, or one copy) and for a
        // body that cannot be replayed: the original goes alone, its body not copied.
        let allowed = self.policy.copies_allowed(usize::MAX);
        let template = (allowed > 1).then(|| request.try_clone()).flatten();
        let max_copies = if template.is_some() { allowed } else { 1 };
        let connector = self.inner.clone();
        let mut original = Some(request);
        let hedge = (move |_: Attempt| {
            let request = match original.take() {
                Some(request) => request,
                None => template.as_ref()?.try_clone()?,
            };
            Some(connector.call(request))
        })
        .hedged(self.policy.clone())
        .max_copies(max_copies)
        .classify(verdict);
        match key {
            None => HttpConnectorFuture::new(hedge),
            // The future owns the key the call borrows; the core hashes it at the race.
            Some(key) => HttpConnectorFuture::new(async move { hedge.key(&key).await }),
        }
    }
}

/// What one copy's answer means: the status table every integration shares, and the
/// connector's I/O and timeout errors retried.
fn verdict(answer: &Result<HttpResponse, ConnectorError>) -> Verdict {
    match answer {
        Ok(response) => {
            let Ok(status) = StatusCode::from_u16(response.status().as_u16()) else {
                return Verdict::Win;
            };
            let mut pushback = HeaderMap::new();
            if let Some(value) = response.headers().get(RETRY_AFTER.as_str()) {
                if let Ok(value) = HeaderValue::from_str(value) {
                    pushback.insert(RETRY_AFTER, value);
                }
            }
            hedging_http_rules::status_verdict(status, &pushback, MAX_RETRY_AFTER)
        }
        Err(error) if error.is_io() || error.is_timeout() => Verdict::Retry,
        Err(_) => Verdict::Fatal,
    }
}
