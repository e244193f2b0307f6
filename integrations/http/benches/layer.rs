//! What `HttpHedgeLayer` and `GrpcHedgeLayer` cost a loopback request when no hedge is
//! sent: the same request with and without the layer, in the same run, interleaved, as
//! medians and their ratio, then allocations per request (a counting global allocator).
//!
//! ```sh
//! cargo bench -p hedging-http --all-features --bench layer
//! ```
//!
//! Run as `layer --requests CASE N`, it sends N requests of one case and nothing else:
//! what `benches/instructions.sh` counts instructions of.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_http::grpc::GrpcHedgeLayer;
use hedging_http::{HttpHedgeLayer, ReplayBody};
use hedging_test_server::bench::{compare, CountingAllocator, HEADER};
use hedging_test_server::grpc::{request, say, SAY};
use hedging_test_server::http::{client, full, RequestBody};
use hedging_test_server::{always, real_clock, Answer, Server};
use http::Uri;
use http_body_util::BodyExt;
use tower::{Layer, Service, ServiceExt};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// A policy whose one hedge is never due in a bench: the armed path, no copy sent.
fn never_hedging() -> Policy<TokioTimer> {
    Policy::builder()
        .delay(Duration::from_secs(10))
        .timer(TokioTimer::new())
        .build()
}

/// The same layer with hedging off (one copy): what the layer costs without a timer.
fn one_copy() -> Policy<TokioTimer> {
    Policy::builder()
        .max_copies(1)
        .timer(TokioTimer::new())
        .build()
}

/// One GET of `uri` through `service`, its body read to the end.
async fn get<S>(service: S, uri: Uri)
where
    S: Service<http::Request<RequestBody>, Response = http::Response<hyper::body::Incoming>>,
    S::Error: std::fmt::Debug,
{
    let get = http::Request::get(uri).body(full("")).unwrap();
    let response = service.oneshot(get).await.unwrap();
    response.into_body().collect().await.unwrap();
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ok = || always(Answer::ok());
    let http = rt.block_on(Server::http(ok(), real_clock())).unwrap();
    let grpc = rt.block_on(Server::grpc(ok(), real_clock())).unwrap();
    let uri = http.uri("/item");
    let plain = client::<RequestBody>();
    let hedged = HttpHedgeLayer::new(never_hedging()).layer(client::<ReplayBody<RequestBody>>());
    let one_copy_layer = HttpHedgeLayer::new(one_copy()).layer(client::<ReplayBody<RequestBody>>());
    let channel = rt.block_on(grpc.channel()).unwrap();
    let grpc_layer = GrpcHedgeLayer::new(never_hedging()).all_methods();
    let into_tonic_body =
        |r: http::Request<ReplayBody<tonic::body::Body>>| r.map(tonic::body::Body::new);
    let grpc_hedged = rt.block_on(async {
        grpc_layer.layer(tower::util::MapRequest::new(
            channel.clone(),
            into_tonic_body,
        ))
    });
    let plain_get = || get(plain.clone(), uri.clone());
    let hedged_get = || get(hedged.clone(), uri.clone());
    let one_copy_get = || get(one_copy_layer.clone(), uri.clone());
    // The plain GET beside a tokio sleep armed as the layer arms its hedge's: what the
    // timer alone costs this request.
    let timer_beside_get = || async {
        let sleep = tokio::time::sleep(Duration::from_secs(10));
        tokio::pin!(sleep);
        assert!(futures::poll!(sleep.as_mut()).is_pending());
        get(plain.clone(), uri.clone()).await;
    };
    let plain_say = || async {
        black_box(say(channel.clone(), request("", b""), SAY).await.unwrap());
    };
    let hedged_say = || async {
        black_box(
            say(grpc_hedged.clone(), request("", b""), SAY)
                .await
                .unwrap(),
        );
    };

    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|arg| arg == "--requests") {
        let (case, requests) = (&args[at + 1], args[at + 2].parse::<usize>().unwrap());
        for _ in 0..requests {
            match case.as_str() {
                "hyper/plain" => rt.block_on(plain_get()),
                "hyper/layer" => rt.block_on(hedged_get()),
                "hyper/one_copy" => rt.block_on(one_copy_get()),
                "hyper/sleep" => rt.block_on(timer_beside_get()),
                "tonic/plain" => rt.block_on(plain_say()),
                "tonic/layer" => rt.block_on(hedged_say()),
                _ => panic!("no case {case}"),
            }
        }
        return;
    }

    let mut criterion = Criterion::default().configure_from_args();
    criterion.bench_function("hyper GET, plain", |b| b.iter(|| rt.block_on(plain_get())));
    criterion.bench_function("hyper GET, HttpHedgeLayer", |b| {
        b.iter(|| rt.block_on(hedged_get()))
    });
    criterion.bench_function("tonic unary, plain", |b| {
        b.iter(|| rt.block_on(plain_say()))
    });
    criterion.bench_function("tonic unary, GrpcHedgeLayer", |b| {
        b.iter(|| rt.block_on(hedged_say()))
    });
    criterion.final_summary();

    println!("\n{HEADER}");
    println!(
        "{}",
        compare(&rt, "hyper GET, HTTP/1.1", plain_get, hedged_get)
    );
    println!(
        "{}",
        compare(
            &rt,
            "hyper GET, hedging off (1 copy)",
            plain_get,
            one_copy_get
        )
    );
    let timer_row = "hyper GET, no layer, a tokio sleep armed";
    println!("{}", compare(&rt, timer_row, plain_get, timer_beside_get));
    println!(
        "{}",
        compare(&rt, "tonic unary, HTTP/2", plain_say, hedged_say)
    );
}
