//! The README's quick start, compiled and run by CI: `cargo run -p hedging-http-rules
//! --features tokio --example quick_start_http_rules`.

use std::time::Duration;

use hedging_http_rules::hedging::{timer::TokioTimer, Hedgeable, Policy};
use hedging_http_rules::{status_verdict, HedgedMethods, NoHedge};
use http::{Request, Response};

/// Sends `request` to the backend (here: a `200` at once; yours goes over the network).
async fn send(request: &Request<()>) -> std::io::Result<Response<()>> {
    let _ = request;
    Ok(Response::new(()))
}

/// One request through a hedging layer of your own, counted as every integration counts.
async fn hedged(
    policy: &Policy<TokioTimer>,
    methods: &HedgedMethods,
    request: Request<()>,
) -> std::io::Result<Response<()>> {
    if !methods.hedges(request.method(), request.extensions()) {
        policy.count_out_of_scope(); // outside the layer's scope: sent as it is, not a call
        return send(&request).await;
    }
    (|| send(&request))
        .hedged(policy)
        .classify(|answer: &std::io::Result<Response<()>>| match answer {
            Ok(response) => status_verdict(response.status(), response.headers(), Duration::MAX),
            Err(_) => hedging_http_rules::hedging::Verdict::Retry,
        })
        .await
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    // TokioTimer: the hedge delay on tokio's clock, which a test's paused clock drives
    // (the default FuturesTimer follows the real clock, paused or not).
    let policy = Policy::builder()
        .delay(Duration::from_millis(20))
        .timer(TokioTimer::new())
        .build();
    let methods = HedgedMethods::default(); // GET, HEAD, OPTIONS

    let url = "http://catalog.internal/items/42";
    let mut opted_out = Request::get(url).body(()).unwrap();
    opted_out.extensions_mut().insert(NoHedge);
    let requests = [Request::get(url), Request::post(url)].map(|r| r.body(()).unwrap());
    for request in requests.into_iter().chain([opted_out]) {
        hedged(&policy, &methods, request).await?;
    }
    let stats = policy.stats();
    assert_eq!(
        (stats.calls, stats.out_of_scope),
        (1, 2),
        "the GET is the one call"
    );
    println!("{stats:?}");
    Ok(())
}
