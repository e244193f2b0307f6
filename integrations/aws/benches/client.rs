//! What `HedgedHttpClient` costs an SDK read when no hedge is sent: the same `GetObject`
//! (S3 on loopback, `s3s-fs`) and `GetItem` (a loopback DynamoDB server) through SDK
//! clients with and without it, in the same run, timed in turn, as medians and their
//! ratio, then allocations per request.
//!
//! ```sh
//! cargo bench -p hedging-aws --all-features --bench client
//! ```

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use hedging_aws::hedging::{timer::TokioTimer, Policy};
use hedging_aws::HedgedHttpClient;
use hedging_test_server::bench::{compare, CountingAllocator, HEADER};
use hedging_test_server::s3::{BUCKET, S3};
use hedging_test_server::{always, real_clock, Answer, Hold};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

const KEY: &str = "catalog/item.json";

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // A hedge that is never due in a bench: the armed path, no copy sent.
    let never_due = || {
        let policy = Policy::builder()
            .delay(Duration::from_secs(10))
            .timer(TokioTimer::new())
            .build();
        HedgedHttpClient::new(common::http_client(), policy)
    };

    let s3 = rt
        .block_on(S3::start(always(Answer::ok()), real_clock()))
        .unwrap();
    rt.block_on(
        common::plain_s3(&format!("http://{}", s3.direct))
            .put_object()
            .bucket(BUCKET)
            .key(KEY)
            .body(ByteStream::from(vec![b'x'; 4096]))
            .send(),
    )
    .unwrap();
    let plain = common::plain_s3(&s3.proxy.origin());
    let hedged = common::hedged_s3(&s3.proxy.origin(), never_due());
    let get_object = |client: &aws_sdk_s3::Client| {
        let get = client.get_object().bucket(BUCKET).key(KEY).send();
        async move {
            get.await.unwrap().body.collect().await.unwrap();
        }
    };

    let dynamodb = rt.block_on(common::dynamodb(|_| Hold::No, real_clock()));
    let plain_dynamodb = common::plain_dynamodb(&dynamodb.origin());
    let hedged_dynamodb = common::hedged_dynamodb(&dynamodb.origin(), never_due());
    let get_item = |client: &aws_sdk_dynamodb::Client| {
        let get = common::get_catalog_item(client).send();
        async move {
            get.await.unwrap();
        }
    };

    println!("{HEADER}");
    let s3_row = compare(
        &rt,
        "aws-sdk-s3 GetObject, 4 KiB, via the proxy",
        || get_object(&plain),
        || get_object(&hedged),
    );
    println!("{s3_row}");
    let dynamodb_row = compare(
        &rt,
        "aws-sdk-dynamodb GetItem",
        || get_item(&plain_dynamodb),
        || get_item(&hedged_dynamodb),
    );
    println!("{dynamodb_row}");
}
