//! Sizes for the overhead bench.

#[allow(unused_imports)]
use super::*;

pub(crate) fn sizes() -> Vec<(&'static str, usize)> {
    let futures_timer = policy(2, FuturesTimer);
    let async_io = policy(2, AsyncIoTimer);
    let tokio = policy(2, TokioTimer::new());
    let mut tower = tower_hedge(tower::service_fn(fetch));
    let hedged = hedged_crate();
    let key = black_box(7);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(tower.poll_ready(&mut cx).is_ready());
    let sizes = vec![
        (
            "copy future alone (`async fn fetch(key: u64)`)",
            size_of_val(&fetch(key)),
        ),
        (
            "`Hedge`, `&Policy<FuturesTimer>`",
            size_of_val(&(move || fetch(key)).hedged(&futures_timer)),
        ),
        (
            "`Hedge`, `&Policy<AsyncIoTimer>`",
            size_of_val(&(move || fetch(key)).hedged(&async_io)),
        ),
        (
            "`Hedge`, `&Policy<TokioTimer>`",
            size_of_val(&(move || fetch(key)).hedged(&tokio)),
        ),
        (
            "`Hedge`, owned `Policy<FuturesTimer>`",
            size_of_val(&(move || fetch(key)).hedged(futures_timer.clone())),
        ),
        (
            "`tower::hedge` response future",
            size_of_val(&tower.call(key)),
        ),
        (
            "`hedged::Hedge::send` future",
            size_of_val(&hedged.send(move || fetch(key))),
        ),
    ];
    sizes
}
