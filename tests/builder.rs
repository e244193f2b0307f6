//! Bad input gets the documented clamp; no builder input panics.

mod common;

use std::time::Duration;

use common::{ms, Backend, Driver, Step};
use hedging::timer::ManualTimer;
use hedging::{Hedgeable, Policy, PolicyBuilder};

fn starts_with(policy: &Policy<ManualTimer>, timer: &ManualTimer, copies: usize) -> Vec<Duration> {
    let mut steps = vec![Step::never(); copies - 1];
    steps.push(Step::ok(0, 9));
    let backend = Backend::new(timer, steps);
    let mut call = Driver::new(backend.factory().hedged(policy));
    let start = timer.now();
    call.run(timer).unwrap();
    backend
        .starts()
        .into_iter()
        .map(|(_, at)| at - start)
        .collect()
}

#[test]
fn max_copies_is_clamped_to_one_and_to_the_maximum() {
    assert_eq!(Policy::builder().max_copies(0).build().max_copies(), 1);
    assert_eq!(Policy::builder().max_copies(7).build().max_copies(), 7);
    let huge = Policy::builder().max_copies(usize::MAX).build();
    assert_eq!(huge.max_copies(), PolicyBuilder::<ManualTimer>::MAX_COPIES);
}

#[test]
fn a_huge_max_copies_runs_without_a_huge_allocation() {
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .max_copies(usize::MAX)
        .parallel()
        .timer(timer.clone())
        .build();
    let steps = (0..PolicyBuilder::<ManualTimer>::MAX_COPIES as u32).map(|k| Step::err(1, k));
    let backend = Backend::new(&timer, steps);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.run(&timer), Err(0));
    assert_eq!(backend.started(), 64);
}

/// How many copies a call started, for a policy whose original answers at 5 ms and
/// whose hedge (due at 1 ms) at once.
fn copies_started(probability: f64) -> usize {
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(ms(1))
        .hedge_probability(probability)
        .timer(timer.clone())
        .build();
    let backend = Backend::new(&timer, [Step::ok(5, 0), Step::ok(0, 1)]);
    Driver::new(backend.factory().hedged(&policy))
        .run(&timer)
        .unwrap();
    backend.started()
}

#[test]
fn a_negative_hedge_probability_is_clamped_to_zero() {
    for probability in [-0.5, -1e300, f64::NEG_INFINITY] {
        for _ in 0..50 {
            assert_eq!(
                copies_started(probability),
                1,
                "p = {probability}: never hedges"
            );
        }
    }
}

#[test]
fn a_nan_or_above_one_hedge_probability_means_always() {
    for probability in [f64::NAN, 1.5, f64::INFINITY] {
        for _ in 0..50 {
            assert_eq!(
                copies_started(probability),
                2,
                "p = {probability}: always hedges"
            );
        }
    }
}

#[test]
fn max_delay_below_delay_is_raised_to_delay() {
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .max_copies(3)
        .delay(ms(20))
        .max_delay(ms(5))
        .timer(timer.clone())
        .build();
    // max_delay becomes 20 ms: copy 1 at 20, then the spread of 20 / 4 = 5 ms.
    assert_eq!(starts_with(&policy, &timer, 3), vec![ms(0), ms(20), ms(25)]);
}

#[test]
fn zero_delay_means_parallel() {
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .max_copies(3)
        .delay(Duration::ZERO)
        .timer(timer.clone())
        .build();
    assert_eq!(starts_with(&policy, &timer, 3), vec![ms(0); 3]);
    assert_eq!(format!("{policy:?}").matches("Parallel").count(), 1);
}

#[test]
fn the_last_mode_called_wins() {
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .max_copies(2)
        .parallel()
        .fallback()
        .delay(ms(7))
        .timer(timer.clone())
        .build();
    assert_eq!(starts_with(&policy, &timer, 2), vec![ms(0), ms(7)]);
}

#[test]
fn huge_delays_never_panic_and_never_fire() {
    let timer = ManualTimer::new();
    for policy in [
        Policy::builder()
            .delay(Duration::MAX)
            .timer(timer.clone())
            .build(),
        Policy::builder()
            .delay_fn(|_| Some(Duration::MAX))
            .timer(timer.clone())
            .build(),
        Policy::builder()
            .delay(Duration::MAX)
            .max_delay(Duration::MAX)
            .timer(timer.clone())
            .build(),
    ] {
        let backend = Backend::new(&timer, [Step::ok(3, 0), Step::ok(0, 1)]);
        let mut call = Driver::new(backend.factory().hedged(&policy));
        assert_eq!(call.run(&timer), Ok(0));
        assert_eq!(backend.started(), 1);
    }
}

/// Pending once, waking itself: the original is still running when the timer is armed.
#[cfg(feature = "async-io")]
async fn yield_once() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if std::mem::replace(&mut yielded, true) {
            std::task::Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await
}

#[test]
#[cfg(feature = "async-io")]
fn huge_delays_on_the_real_timers_do_not_panic() {
    use hedging::timer::{AsyncIoTimer, FuturesTimer};
    let policy = Policy::builder()
        .delay(Duration::MAX)
        .timer(FuturesTimer)
        .build();
    let answer = futures::executor::block_on(
        (|| async {
            yield_once().await;
            Ok::<_, ()>(1)
        })
        .hedged(&policy),
    );
    assert_eq!(answer, Ok(1));
    let policy = Policy::builder()
        .delay(Duration::MAX)
        .timer(AsyncIoTimer)
        .build();
    let answer = futures::executor::block_on(
        (|| async {
            yield_once().await;
            Ok::<_, ()>(2)
        })
        .hedged(&policy),
    );
    assert_eq!(answer, Ok(2));
}

#[test]
fn random_builder_inputs_never_panic() {
    let mut rng = fastrand::Rng::with_seed(42);
    let durations = [
        Duration::ZERO,
        Duration::from_nanos(1),
        ms(3),
        ms(250),
        Duration::MAX,
    ];
    let probabilities = [
        f64::NAN,
        -1.0,
        0.0,
        0.3,
        1.0,
        7.0,
        f64::INFINITY,
        f64::MIN_POSITIVE,
    ];
    for _ in 0..300 {
        let timer = ManualTimer::new();
        let mut builder = Policy::builder().timer(timer.clone());
        let (mut may_hedge, mut always_hedge) = (true, true);
        for _ in 0..rng.usize(0..8) {
            builder = match rng.u8(0..7) {
                0 => builder.max_copies(rng.usize(..) >> rng.u32(0..64)),
                1 => builder.delay(durations[rng.usize(..durations.len())]),
                2 => builder.max_delay(durations[rng.usize(..durations.len())]),
                3 => builder.parallel(),
                4 => builder.fallback(),
                5 => {
                    let probability = probabilities[rng.usize(..probabilities.len())];
                    may_hedge = probability.is_nan() || probability > 0.0;
                    always_hedge = probability.is_nan() || probability >= 1.0;
                    builder.hedge_probability(probability)
                }
                _ => {
                    let delay = durations[rng.usize(..durations.len())];
                    builder.delay_fn(move |copy| (copy % 3 != 0).then_some(delay))
                }
            };
        }
        let policy = builder.build();
        let copies = policy.max_copies();
        assert!((1..=PolicyBuilder::<ManualTimer>::MAX_COPIES).contains(&copies));
        let steps = (0..copies as u32).map(|k| Step::err(rng.u64(0..5), k));
        let backend = Backend::new(&timer, steps);
        let mut call = Driver::new(backend.factory().hedged(&policy));
        assert_eq!(call.run(&timer), Err(0), "{policy:?}");
        // Every copy fails, so a call that may hedge starts every copy.
        let started = backend.started();
        if always_hedge {
            assert_eq!(started, copies, "{policy:?}");
        } else if !may_hedge {
            assert_eq!(started, 1, "{policy:?}");
        } else {
            assert!(
                started == 1 || started == copies,
                "{started} copies: {policy:?}"
            );
        }
    }
}

#[test]
fn builders_are_clone_debug_and_default() {
    let builder = PolicyBuilder::default().max_copies(4).on_hedge(|_| {});
    let copy = builder.clone();
    assert_eq!(copy.build().max_copies(), 4);
    let text = format!("{builder:?}");
    assert!(
        text.contains("max_copies: 4") && text.contains("on_hedge: true"),
        "{text}"
    );
    let policy: Policy = Policy::default();
    assert_eq!(policy.max_copies(), 2);
}

#[test]
fn adaptive_delay_after_fallback_or_delay_fn_hedges_on_the_clock_again() {
    let after_fallback = Policy::builder().fallback().adaptive_delay(0.9).build();
    assert_eq!(
        after_fallback.delay(),
        Some(ms(10)),
        "the default delay until samples exist"
    );
    let after_fn = Policy::builder()
        .delay_fn(|_| None)
        .adaptive_delay(0.9)
        .build();
    assert_eq!(after_fn.delay(), Some(ms(10)));
    let kept = Policy::builder().delay(ms(3)).adaptive_delay(0.9).build();
    assert_eq!(
        kept.delay(),
        Some(ms(3)),
        "a delay set before stays the fallback"
    );
}
