//! What `HedgedStore` counts, over a real `HttpStore` against the shared loopback server,
//! on the policy's virtual clock: a read goes through the race and is one of the
//! policy's `calls`; every other method (writes, deletes, copies, lists) is outside its
//! scope, forwarded to the inner store as it is, and counted in `out_of_scope` instead,
//! once per call of the method. The rule is `hedging-http-rules`' "Which requests are
//! counted".

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hedging::timer::ManualTimer;
use hedging::Stats;
use hedging_object_store::HedgedStore;
use hedging_test_server::object::{objects, store, StallWhen, StallWhere};
use hedging_test_server::{Hold, Server, VirtualClock};
use object_store::http::HttpStore;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

const DELAY: Duration = Duration::from_millis(20);
const OBJECT: &str = "/data/a.bin";

type Store = Arc<HedgedStore<HttpStore, ManualTimer>>;

/// A server holding `data/a.bin` and, as `when` says, requests until released, stamping
/// arrivals with a virtual clock; a hedged `HttpStore` on it, on that clock.
async fn setup(when: StallWhen) -> (VirtualClock, Server, Store) {
    let clock = VirtualClock::new();
    let files = HashMap::from([("data/a.bin".to_owned(), Bytes::from_static(b"object"))]);
    let behavior = objects(files, when, StallWhere::Answer, Hold::Released);
    let server = Server::http(behavior, clock.clock()).await.unwrap();
    let store = HedgedStore::new(store(&server.url("/")).unwrap(), clock.policy(2, DELAY));
    (clock, server, Arc::new(store))
}

fn a_bin() -> Path {
    Path::from("data/a.bin")
}

#[tokio::test]
async fn a_write_is_out_of_scope_not_a_call() {
    let (clock, server, store) = setup(StallWhen::FirstPerPath).await;

    let put = tokio::spawn({
        let store = Arc::clone(&store);
        async move { store.put(&a_bin(), Bytes::from_static(b"new").into()).await }
    });
    clock.release(&server, OBJECT).await;
    put.await.unwrap().unwrap();

    let arrivals = server.arrivals(OBJECT);
    assert_eq!(arrivals.len(), 1, "the stalled write was never copied");
    assert_eq!(arrivals[0].method.as_str(), "PUT");
    assert_eq!(clock.sleeps_created(), 0, "no race, no timer");
    let out_of_scope = Stats {
        out_of_scope: 1,
        ..Stats::default()
    };
    assert_eq!(
        store.policy().stats(),
        out_of_scope,
        "out of scope, not a call"
    );
}

#[tokio::test]
async fn deletes_copies_and_lists_are_out_of_scope() {
    let (clock, server, store) = setup(StallWhen::Never).await;

    store
        .copy(&a_bin(), &Path::from("data/b.bin"))
        .await
        .unwrap();
    store.delete(&a_bin()).await.unwrap();
    let _ = store.list_with_delimiter(Some(&Path::from("data"))).await;

    let methods: Vec<_> = server.all().iter().map(|a| a.method.to_string()).collect();
    assert!(methods.contains(&"DELETE".to_owned()), "{methods:?}");
    assert_eq!(clock.sleeps_created(), 0, "no race, no timer");
    let stats = store.policy().stats();
    assert_eq!(
        (stats.out_of_scope, stats.calls),
        (3, 0),
        "one per method called, however many requests it made"
    );
}

#[tokio::test]
async fn a_read_is_a_call() {
    let (clock, server, store) = setup(StallWhen::FirstPerPath).await;

    let head = tokio::spawn({
        let store = Arc::clone(&store);
        async move { store.head(&a_bin()).await }
    });
    clock.hedge(&server, OBJECT, 1, DELAY).await;
    assert_eq!(head.await.unwrap().unwrap().size, 6);
    let write = Bytes::from_static(b"new");
    store.put(&a_bin(), write.into()).await.unwrap();

    let stats = store.policy().stats();
    assert_eq!((stats.calls, stats.hedges, stats.out_of_scope), (1, 1, 1));
    assert_eq!(
        stats.hedges as f64 / stats.calls as f64,
        1.0,
        "the read hedged"
    );
}
