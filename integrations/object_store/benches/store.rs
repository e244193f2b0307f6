//! What `HedgedStore` costs a read when no hedge is sent: a GET of a 1 KiB object from
//! `InMemory`, with and without the wrapper, in the same run, timed in turn, as medians
//! and their ratio, then allocations per read.
//!
//! ```sh
//! cargo bench -p hedging-object-store --bench store
//! ```

use std::time::Duration;

use criterion::Criterion;
use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_object_store::HedgedStore;
use hedging_test_server::bench::{compare, CountingAllocator, HEADER};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// One GET of `location` from `store`, its bytes read to the end.
async fn read(store: &dyn ObjectStore, location: &Path) {
    let bytes = store.get(location).await.unwrap().bytes().await.unwrap();
    assert_eq!(bytes.len(), 1024);
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let location = Path::from("data/a.bin");
    let memory = InMemory::new();
    let object = PutPayload::from(vec![7u8; 1024]);
    rt.block_on(memory.put(&location, object)).unwrap();
    // A hedge that is never due in a bench: the armed path, no copy sent.
    let policy = Policy::builder()
        .delay(Duration::from_secs(10))
        .timer(TokioTimer::new())
        .build();
    let hedged = HedgedStore::new(memory.clone(), policy);

    let plain_read = || read(&memory, &location);
    let hedged_read = || read(&hedged, &location);
    let mut criterion = Criterion::default().configure_from_args();
    criterion.bench_function("InMemory GET", |b| b.iter(|| rt.block_on(plain_read())));
    criterion.bench_function("HedgedStore<InMemory> GET", |b| {
        b.iter(|| rt.block_on(hedged_read()))
    });
    criterion.final_summary();

    println!("\n{HEADER}");
    println!(
        "{}",
        compare(&rt, "InMemory GET, 1 KiB", plain_read, hedged_read)
    );
}
