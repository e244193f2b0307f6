//! The README's quick start: S3 and DynamoDB clients whose reads are hedged. It builds
//! them and prints what the hedge is set to; no request is sent.

use std::time::Duration;

use hedging_aws::hedging::{timer::TokioTimer, Policy};
use hedging_aws::{HedgeSdkConfig, HedgedHttpClient, SharedHttpClient};

/// `http_client`: the client the SDK would send with (`sdk_config.http_client()`, or the
/// SDK's HTTPS client: `aws_smithy_http_client::Builder::new().tls_provider(..).build_https()`).
fn clients(http_client: SharedHttpClient) -> (aws_sdk_s3::Client, aws_sdk_dynamodb::Client) {
    let policy = Policy::builder()
        .name("aws-reads")
        .delay(Duration::from_millis(30)) // until each key has 100 latencies,
        .optimal_delay(0.99) // then the delay predicted to cut its p99 most:
        .adaptive_keys(64) // a delay per (operation, bucket or table)
        .timer(TokioTimer::new())
        .build();
    let hedged = HedgedHttpClient::new(http_client, policy);
    // With aws-config: aws_sdk_s3::config::Builder::from(&sdk_config).hedged(..)
    let s3 = aws_sdk_s3::Config::builder()
        .behavior_version_latest()
        .region(aws_sdk_s3::config::Region::new("eu-west-1"))
        .hedged(hedged.clone()) // GetObject, HeadObject, GetObjectAttributes, ListObjectsV2
        .build();
    let dynamodb = aws_sdk_dynamodb::Config::builder()
        .behavior_version_latest()
        .region(aws_sdk_dynamodb::config::Region::new("eu-west-1"))
        .hedged(hedged) // GetItem, BatchGetItem, Query, Scan, TransactGetItems
        .build();
    let s3 = aws_sdk_s3::Client::from_conf(s3);
    let dynamodb = aws_sdk_dynamodb::Client::from_conf(dynamodb);
    (s3, dynamodb)
}

fn main() {
    // Plain HTTP, for this example only: AWS needs the HTTPS client above.
    let http_client = aws_smithy_http_client::Builder::new().build_http();
    let (s3, dynamodb) = clients(http_client);
    println!("{:?}", s3.config().http_client());
    println!("{:?}", dynamodb.config().http_client());
}
