//! What `HedgeMiddleware` costs a loopback GET when no hedge is sent: the same GET
//! through a `reqwest_middleware` client with and without it, in the same run, timed in
//! turn, as medians and their ratio, then allocations per request.
//!
//! ```sh
//! cargo bench -p reqwest-hedging --bench middleware
//! ```

use std::time::Duration;

use criterion::Criterion;
use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_test_server::bench::{compare, CountingAllocator, HEADER};
use hedging_test_server::{always, real_clock, Answer, Server};
use reqwest_hedging::HedgeMiddleware;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// One GET of `url`, its body read to the end.
async fn get(client: &ClientWithMiddleware, url: &str) {
    let response = client.get(url).send().await.unwrap();
    response.bytes().await.unwrap();
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(Server::http(always(Answer::ok()), real_clock()))
        .unwrap();
    let url = server.url("/item");
    // A hedge that is never due in a bench: the armed path, no copy sent.
    let policy = Policy::builder()
        .delay(Duration::from_secs(10))
        .timer(TokioTimer::new())
        .build();
    let plain = ClientBuilder::new(reqwest::Client::new()).build();
    let hedged = ClientBuilder::new(reqwest::Client::new())
        .with(HedgeMiddleware::new(policy))
        .build();

    let plain_get = || get(&plain, &url);
    let hedged_get = || get(&hedged, &url);
    let mut criterion = Criterion::default().configure_from_args();
    criterion.bench_function("reqwest GET, no middleware", |b| {
        b.iter(|| rt.block_on(plain_get()))
    });
    criterion.bench_function("reqwest GET, HedgeMiddleware", |b| {
        b.iter(|| rt.block_on(hedged_get()))
    });
    criterion.final_summary();

    println!("\n{HEADER}");
    println!(
        "{}",
        compare(&rt, "reqwest GET, HTTP/1.1", plain_get, hedged_get)
    );
}
