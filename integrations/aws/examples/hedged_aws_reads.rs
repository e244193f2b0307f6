//! Hedged S3 and DynamoDB reads through the AWS SDK on real loopback sockets: an S3
//! server (`s3s-fs`, behind a proxy) and a DynamoDB server that stall 1 request in 100 for
//! 200 ms, read with `GetObject` and `GetItem` without and with `HedgedHttpClient`. Prints
//! the latency table of each run.
//!
//! ```sh
//! cargo run --release -p hedging-aws --all-features --example hedged_aws_reads [-- CALLS DELAY_MS]
//! ```

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use hedging_aws::hedging::{timer::TokioTimer, Policy};
use hedging_aws::HedgedHttpClient;
use hedging_test_server::report::{self, args};
use hedging_test_server::s3::{BUCKET, S3};
use hedging_test_server::{one_in, real_clock, Arrival, Error, Hold};

const STALL: Duration = Duration::from_millis(200);
const KEY: &str = "catalog/item.json";

/// 1 request in 100 (counted over all requests) held for [`STALL`].
fn one_in_100(arrival: &Arrival) -> Hold {
    match arrival.order % 100 == 99 {
        true => Hold::For(STALL),
        false => Hold::No,
    }
}

fn policy(name: &'static str, delay: Duration) -> Policy<TokioTimer> {
    Policy::builder()
        .name(name)
        .delay(delay)
        .timer(TokioTimer::new())
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (calls, delay) = args(1000, 5)?;
    let what = |read: &str| {
        format!("{calls} sequential {read} calls per run; the server stalls 1 request in 100 for 200 ms")
    };
    let label = |client: &str| {
        format!(
            "{client} + HedgedHttpClient, hedged after {} ms",
            delay.as_millis()
        )
    };

    let s3 = S3::start(one_in(100, STALL), real_clock()).await?;
    common::plain_s3(&format!("http://{}", s3.direct))
        .put_object()
        .bucket(BUCKET)
        .key(KEY)
        .body(ByteStream::from(vec![b'x'; 4096]))
        .send()
        .await?;
    let s3_policy = policy("s3", delay);
    let plain = common::plain_s3(&s3.proxy.origin());
    let hedged = common::hedged_s3(
        &s3.proxy.origin(),
        HedgedHttpClient::new(common::http_client(), s3_policy.clone()),
    );
    let get_object = |client: &aws_sdk_s3::Client| {
        let get = client.get_object().bucket(BUCKET).key(KEY).send();
        async move {
            get.await?.body.collect().await?;
            Ok::<_, Error>(())
        }
    };
    let unhedged = ("aws-sdk-s3 GetObject", || get_object(&plain));
    let hedged_label = label("aws-sdk-s3 GetObject");
    let hedged = (hedged_label.as_str(), || get_object(&hedged));
    report::compare(
        &what("GetObject"),
        calls,
        &s3_policy,
        &[&s3.proxy],
        unhedged,
        hedged,
    )
    .await?;
    println!();

    let dynamodb = common::dynamodb(one_in_100, real_clock()).await;
    let dynamodb_policy = policy("dynamodb", delay);
    let plain = common::plain_dynamodb(&dynamodb.origin());
    let hedged = common::hedged_dynamodb(
        &dynamodb.origin(),
        HedgedHttpClient::new(common::http_client(), dynamodb_policy.clone()),
    );
    let get_item = |client: &aws_sdk_dynamodb::Client| {
        let get = common::get_catalog_item(client).send();
        async move {
            get.await?;
            Ok::<_, Error>(())
        }
    };
    let unhedged = ("aws-sdk-dynamodb GetItem", || get_item(&plain));
    let hedged_label = label("aws-sdk-dynamodb GetItem");
    let hedged = (hedged_label.as_str(), || get_item(&hedged));
    let servers: [&hedging_test_server::Log; 1] = [&dynamodb];
    report::compare(
        &what("GetItem"),
        calls,
        &dynamodb_policy,
        &servers,
        unhedged,
        hedged,
    )
    .await?;
    Ok(())
}
