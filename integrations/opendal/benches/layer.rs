//! What `HedgeLayer` costs a `stat` and a small read when no hedge is sent: the same
//! OpenDAL `http` operator on a loopback object server, with and without the layer, in
//! the same run, timed in turn, as medians and their ratio, then allocations per call.
//!
//! ```sh
//! cargo bench -p hedging-opendal --bench layer
//! ```

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use hedging_opendal::hedging::{timer::TokioTimer, Policy};
use hedging_opendal::HedgeLayer;
use hedging_test_server::bench::{compare, CountingAllocator, HEADER};
use hedging_test_server::object::{objects, StallWhen, StallWhere};
use hedging_test_server::opendal::context;
use hedging_test_server::{real_clock, Hold, Server};
use opendal::services::Http;
use opendal::Operator;

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

const PATH: &str = "data/a.bin";

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let files = HashMap::from([(PATH.to_owned(), Bytes::from(vec![7u8; 4096]))]);
    let behavior = objects(files, StallWhen::Never, StallWhere::Answer, Hold::No);
    let server = rt.block_on(Server::http(behavior, real_clock())).unwrap();
    let operator = || {
        let http = Http::default().endpoint(&server.origin());
        Operator::new(http).unwrap().with_context(context())
    };
    // A hedge that is never due in a bench: the armed path, no copy sent.
    let policy = Policy::builder()
        .delay(Duration::from_secs(10))
        .timer(TokioTimer::new())
        .build();
    let plain = operator();
    let hedged = operator().layer(HedgeLayer::new(policy));

    let stat = |op: &Operator| {
        let op = op.clone();
        async move {
            assert_eq!(op.stat(PATH).await.unwrap().content_length(), 4096);
        }
    };
    let read = |op: &Operator| {
        let op = op.clone();
        async move {
            assert_eq!(op.read(PATH).await.unwrap().len(), 4096);
        }
    };

    let mut criterion = criterion::Criterion::default().configure_from_args();
    criterion.bench_function("http stat", |b| b.iter(|| rt.block_on(stat(&plain))));
    criterion.bench_function("HedgeLayer http stat", |b| {
        b.iter(|| rt.block_on(stat(&hedged)))
    });
    criterion.bench_function("http read 4 KiB", |b| b.iter(|| rt.block_on(read(&plain))));
    criterion.bench_function("HedgeLayer http read 4 KiB", |b| {
        b.iter(|| rt.block_on(read(&hedged)))
    });
    criterion.final_summary();

    println!("\n{HEADER}");
    let stats = compare(
        &rt,
        "OpenDAL http `stat`, loopback",
        || stat(&plain),
        || stat(&hedged),
    );
    println!("{stats}");
    let reads = compare(
        &rt,
        "OpenDAL http `read`, 4 KiB, loopback",
        || read(&plain),
        || read(&hedged),
    );
    println!("{reads}");
}
