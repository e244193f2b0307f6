//! What the S3 and DynamoDB tests share: SDK clients for the loopback servers (the SDK's
//! own plain-HTTP client underneath, no TLS), and a DynamoDB server speaking its JSON 1.0
//! protocol.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use bytes::Bytes;
use hedging::timer::Timer;
use hedging_aws::SharedHttpClient;
use hedging_aws::{HedgeSdkConfig, HedgedHttpClient};
use hedging_test_server::{Answer, Arrival, Clock, Hold, Reply, Server};

/// The SDK's own hyper client, without TLS: what a hedged client wraps on loopback.
pub fn http_client() -> SharedHttpClient {
    aws_smithy_http_client::Builder::new().build_http()
}

fn credentials() -> Credentials {
    let (access_key, secret) = hedging_test_server::s3::credentials();
    Credentials::new(access_key, secret, None, None, "loopback")
}

/// An S3 config for the server at `endpoint`, path style, without retries of the SDK's
/// own (each test counts every request).
fn s3_config(endpoint: &str) -> aws_sdk_s3::config::Builder {
    aws_sdk_s3::config::Builder::new()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(credentials())
        .endpoint_url(endpoint)
        .force_path_style(true)
        .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
}

/// An S3 client for `endpoint` whose requests go through `hedged`.
pub fn hedged_s3<T>(endpoint: &str, hedged: HedgedHttpClient<T>) -> aws_sdk_s3::Client
where
    T: Timer + std::fmt::Debug + Send + Sync + 'static,
    T::Sleep: Send,
{
    aws_sdk_s3::Client::from_conf(s3_config(endpoint).hedged(hedged).build())
}

/// An S3 client for `endpoint` with the plain client alone.
pub fn plain_s3(endpoint: &str) -> aws_sdk_s3::Client {
    aws_sdk_s3::Client::from_conf(s3_config(endpoint).http_client(http_client()).build())
}

fn dynamodb_config(endpoint: &str) -> aws_sdk_dynamodb::config::Builder {
    aws_sdk_dynamodb::config::Builder::new()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(credentials())
        .endpoint_url(endpoint)
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
}

/// A DynamoDB client for `endpoint` whose requests go through `hedged`.
pub fn hedged_dynamodb<T>(endpoint: &str, hedged: HedgedHttpClient<T>) -> aws_sdk_dynamodb::Client
where
    T: Timer + std::fmt::Debug + Send + Sync + 'static,
    T::Sleep: Send,
{
    aws_sdk_dynamodb::Client::from_conf(dynamodb_config(endpoint).hedged(hedged).build())
}

/// A DynamoDB client for `endpoint` whose requests go through `hedged`, with the SDK's
/// standard retries: up to `max_attempts` attempts, 1 ms apart.
pub fn hedged_dynamodb_retrying<T>(
    endpoint: &str,
    hedged: HedgedHttpClient<T>,
    max_attempts: u32,
) -> aws_sdk_dynamodb::Client
where
    T: Timer + std::fmt::Debug + Send + Sync + 'static,
    T::Sleep: Send,
{
    let retries = aws_sdk_dynamodb::config::retry::RetryConfig::standard()
        .with_max_attempts(max_attempts)
        .with_initial_backoff(std::time::Duration::from_millis(1));
    let config = dynamodb_config(endpoint).retry_config(retries);
    aws_sdk_dynamodb::Client::from_conf(config.hedged(hedged).build())
}

/// A DynamoDB client for `endpoint` with the plain client alone.
pub fn plain_dynamodb(endpoint: &str) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::from_conf(
        dynamodb_config(endpoint).http_client(http_client()).build(),
    )
}

/// The target header naming a DynamoDB request's operation: `DynamoDB_20120810.GetItem`.
pub const TARGET: &str = "x-amz-target";

/// What DynamoDB answers a request, by its `x-amz-target`: for `GetItem`, `Query` and
/// `PutItem` on any table, one item, `{"id": {"S": "a"}}`; for any other operation, a 400.
pub fn dynamodb_answer(arrival: &Arrival) -> Answer {
    let operation = arrival
        .header(TARGET)
        .and_then(|t| t.strip_prefix("DynamoDB_20120810."));
    let (status, body): (u16, &'static str) = match operation {
        Some("GetItem") => (200, r#"{"Item":{"id":{"S":"a"}}}"#),
        Some("Query") => (
            200,
            r#"{"Count":1,"ScannedCount":1,"Items":[{"id":{"S":"a"}}]}"#,
        ),
        Some("PutItem") => (200, "{}"),
        _ => (
            400,
            r#"{"__type":"com.amazon.coral.service#UnknownOperationException"}"#,
        ),
    };
    Answer::ok()
        .status(status)
        .header("content-type", "application/x-amz-json-1.0")
        .reply(Reply::Bytes(Bytes::from_static(body.as_bytes())))
}

/// A DynamoDB server on loopback speaking the JSON 1.0 protocol ([`dynamodb_answer`]),
/// each request held as `hold` says (by its [`Arrival`]: every request has the key `/`,
/// its `copy` the rank among all requests).
pub async fn dynamodb(
    hold: impl Fn(&Arrival) -> Hold + Send + Sync + 'static,
    clock: Clock,
) -> Server {
    let behavior = Arc::new(move |arrival: &Arrival| dynamodb_answer(arrival).hold(hold(arrival)));
    Server::http(behavior, clock)
        .await
        .expect("a loopback port")
}
/// The output of a spawned call, failing the test instead of hanging when the call never
/// ends (a held copy no hedge overtook).
pub async fn answered<T>(call: tokio::task::JoinHandle<T>) -> T {
    let ended = tokio::time::timeout(hedging_test_server::HANG_GUARD, call).await;
    ended.expect("the call hangs").expect("the call panicked")
}

/// The GetItem the bench and the example send: the item `item` of the table `catalog`.
pub fn get_catalog_item(
    client: &aws_sdk_dynamodb::Client,
) -> aws_sdk_dynamodb::operation::get_item::builders::GetItemFluentBuilder {
    client.get_item().table_name("catalog").key(
        "id",
        aws_sdk_dynamodb::types::AttributeValue::S("item".into()),
    )
}
