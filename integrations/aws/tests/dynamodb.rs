//! `HedgedHttpClient` in an `aws-sdk-dynamodb` client against a loopback server speaking
//! DynamoDB's JSON 1.0 protocol (every read is a POST, told apart by its `x-amz-target`).
//! The server holds the first request until released, or until its client drops it; time
//! is virtual.

mod common;

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use bytes::Bytes;
use hedging::timer::ManualTimer;
use hedging_aws::HedgedHttpClient;
use hedging_test_server::counts::assert_one_hedge_won;
use hedging_test_server::{Answer, Arrival, Hold, Reply, Server, VirtualClock};

use common::{
    answered, dynamodb, dynamodb_answer, hedged_dynamodb, hedged_dynamodb_retrying, http_client,
    TARGET,
};

const DELAY: Duration = Duration::from_millis(20);
/// The key every request to the DynamoDB server has: its path.
const ROOT: &str = "/";

/// The first request is held; every other passes at once.
fn first_held(arrival: &Arrival) -> Hold {
    match arrival.copy {
        0 => Hold::Released,
        _ => Hold::No,
    }
}

fn hedged(clock: &VirtualClock) -> HedgedHttpClient<ManualTimer> {
    HedgedHttpClient::new(http_client(), clock.policy(2, DELAY))
}

fn targets(server: &hedging_test_server::Server) -> Vec<String> {
    let arrivals = server.arrivals(ROOT);
    let targets = arrivals
        .iter()
        .map(|a| a.header(TARGET).unwrap_or("").to_owned());
    targets.collect()
}

#[tokio::test]
async fn a_stalled_get_item_is_rescued_by_a_hedge() {
    let clock = VirtualClock::new();
    let server = dynamodb(first_held, clock.clock()).await;
    let client = hedged(&clock);
    let sdk = hedged_dynamodb(&server.origin(), client.clone());

    let get = sdk
        .get_item()
        .table_name("orders")
        .key("id", AttributeValue::S("a".into()))
        .send();
    let get = tokio::spawn(get);
    clock.hedge(&server, ROOT, 1, DELAY).await;

    let item = answered(get).await.unwrap().item.expect("an item");
    assert_eq!(item["id"], AttributeValue::S("a".into()));
    assert_eq!(
        targets(&server),
        ["DynamoDB_20120810.GetItem"; 2],
        "the original and its hedge"
    );
    let bodies: Vec<_> = server
        .arrivals(ROOT)
        .iter()
        .map(|a| a.body.clone())
        .collect();
    assert_eq!(bodies[0], bodies[1], "the same request, byte for byte");
    server.until_dropped(1).await;
    assert_one_hedge_won(client.policy());
}

#[tokio::test]
async fn a_stalled_query_is_rescued_by_a_hedge() {
    let clock = VirtualClock::new();
    let server = dynamodb(first_held, clock.clock()).await;
    let client = hedged(&clock);
    let sdk = hedged_dynamodb(&server.origin(), client.clone());

    let query = sdk
        .query()
        .table_name("orders")
        .key_condition_expression("id = :id")
        .expression_attribute_values(":id", AttributeValue::S("a".into()))
        .send();
    let query = tokio::spawn(query);
    clock.hedge(&server, ROOT, 1, DELAY).await;

    let answer = answered(query).await.unwrap();
    assert_eq!(answer.count(), 1);
    assert_eq!(
        targets(&server),
        ["DynamoDB_20120810.Query"; 2],
        "the original and its hedge"
    );
    let stats = client.policy().stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[tokio::test]
async fn put_item_is_never_hedged() {
    let clock = VirtualClock::new();
    let server = dynamodb(first_held, clock.clock()).await;
    let client = hedged(&clock);
    let sdk = hedged_dynamodb(&server.origin(), client.clone());

    let put = sdk
        .put_item()
        .table_name("orders")
        .item("id", AttributeValue::S("a".into()))
        .send();
    let put = tokio::spawn(put);
    // Held past any hedge delay, then let go: a hedged POST would have been copied.
    clock.release(&server, ROOT).await;
    answered(put).await.unwrap();

    assert_eq!(targets(&server), ["DynamoDB_20120810.PutItem"], "sent once");
    assert_eq!(clock.sleeps_created(), 0, "no hedge timer armed");
    let stats = client.policy().stats();
    assert_eq!((stats.calls, stats.hedges, stats.out_of_scope), (0, 0, 1));
}

#[tokio::test]
async fn each_sdk_retry_is_a_hedged_call_of_its_own() {
    let clock = VirtualClock::new();
    // The first attempt fails as DynamoDB does when it is the service's fault: a 500,
    // which wins the hedge (the service answered) and which the SDK retries.
    let behavior = Arc::new(|arrival: &Arrival| {
        match arrival.copy {
        0 => Answer::ok()
            .status(500)
            .header("content-type", "application/x-amz-json-1.0")
            .reply(Reply::Bytes(Bytes::from_static(
                br#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"try again"}"#,
            ))),
        _ => dynamodb_answer(arrival),
    }
    });
    let server = Server::http(behavior, clock.clock()).await.unwrap();
    let client = hedged(&clock);
    let sdk = hedged_dynamodb_retrying(&server.origin(), client.clone(), 2);

    let get = sdk
        .get_item()
        .table_name("orders")
        .key("id", AttributeValue::S("a".into()))
        .send();
    let item = answered(tokio::spawn(get)).await.unwrap().item;

    assert_eq!(item.expect("an item")["id"], AttributeValue::S("a".into()));
    let attempts: Vec<_> = server
        .arrivals(ROOT)
        .iter()
        .map(|a| a.header("amz-sdk-request").unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        attempts,
        ["attempt=1; max=2", "attempt=2; max=2"],
        "one request per attempt"
    );
    let stats = client.policy().stats();
    assert_eq!(
        (stats.calls, stats.wins, stats.hedges),
        (2, 2, 0),
        "each attempt a call"
    );
}
