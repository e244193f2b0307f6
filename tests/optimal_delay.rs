//! `optimal_delay`: the delay the recent latencies predict minimises a quantile of call
//! latency within the budget, driven call by call on `ManualTimer`.

mod common;

use std::time::Duration;

use common::ms;
use hedging::config::PolicyConfig;
use hedging::timer::ManualTimer;
use hedging::{Budget, Hedgeable, Policy, PolicyBuilder};

/// Runs one call whose original takes `original` and every hedge `hedge`; returns the
/// winner's index.
fn call(policy: &Policy<ManualTimer>, original: Duration, hedge: Duration) -> usize {
    common::scripted_call(policy, None, original, hedge).0
}

/// One quarter window of calls: 90 answered in 1 ms, 10 from a paused replica (100 ms),
/// each hedge answered in 1 ms; then the clock moves into the next quarter (100 ms).
fn quarter_of_pauses(policy: &Policy<ManualTimer>) -> usize {
    let timer = policy.timer().clone();
    let start = timer.now();
    let mut hedge_wins = 0;
    for call_index in 0..100 {
        let original = if call_index % 10 == 9 { ms(100) } else { ms(1) };
        hedge_wins += usize::from(call(policy, original, ms(1)) == 1);
    }
    let quarter = ms(100);
    let into = (timer.now() - start).as_nanos() % quarter.as_nanos();
    timer.advance(quarter - Duration::from_nanos(into as u64));
    hedge_wins
}

fn optimal(timer: &ManualTimer) -> PolicyBuilder<ManualTimer> {
    Policy::builder()
        .max_copies(2)
        .optimal_delay(0.99)
        .delay(ms(20))
        .min_delay(Duration::from_micros(100))
        .adaptive_min_samples(50)
        .adaptive_window(ms(400)) // quarters of 100 ms
        .timer(timer.clone())
}

/// Whether `delay` is the bucket of 1 ms: past the body, short of the pauses.
fn past_the_body(delay: Option<Duration>) -> bool {
    delay.is_some_and(|delay| (ms(1)..=ms(1) + ms(1) / 8).contains(&delay))
}

#[test]
fn optimal_delay_hedges_just_past_the_body_where_a_tenth_of_calls_pause() {
    let timer = ManualTimer::new();
    let policy = optimal(&timer).budget(&Budget::new(0.15)).build();
    assert_eq!(
        policy.delay(),
        Some(ms(20)),
        "the fixed delay until 50 latencies"
    );
    // The fallback hedges the paused calls at 20 ms, and their hedges win.
    assert_eq!(quarter_of_pauses(&policy), 10);
    assert!(past_the_body(policy.delay()), "{:?}", policy.delay());
    // A p95 sits inside the pauses: what adaptive_delay(0.95) would hedge at.
    let p95 = Policy::builder()
        .adaptive_delay(0.95)
        .delay(ms(20))
        .adaptive_min_samples(50)
        .adaptive_window(ms(400))
        .timer(timer.clone())
        .build();
    for call_index in 0..100 {
        let original = if call_index % 10 == 9 { ms(100) } else { ms(1) };
        call(&p95, original, ms(1));
    }
    assert!(
        p95.delay().is_some_and(|delay| delay >= ms(20)),
        "{:?}",
        p95.delay()
    );
}

#[test]
fn hedging_at_its_own_delay_does_not_drag_the_delay_down_over_successive_windows() {
    let timer = ManualTimer::new();
    let policy = optimal(&timer).budget(&Budget::new(0.15)).build();
    quarter_of_pauses(&policy);
    let chosen = policy.delay();
    assert!(past_the_body(chosen), "{chosen:?}");
    // Six more windows, each hedging every paused call at the chosen delay: the originals
    // dropped are censored at about 2 ms, and the delay holds.
    for window in 0..24 {
        assert_eq!(quarter_of_pauses(&policy), 10, "quarter {window}");
        assert_eq!(policy.delay(), chosen, "quarter {window}");
    }
    let stats = policy.stats();
    assert_eq!(stats.hedge_wins, 250);
}

#[test]
fn without_a_budget_optimal_delay_does_not_plan_for_more_than_five_percent_extra_copies() {
    let timer = ManualTimer::new();
    let policy = optimal(&timer).max_delay(ms(200)).build();
    quarter_of_pauses(&policy);
    // A tenth of the calls are slow: any delay that catches them hedges 10%, over the 5%
    // a policy without a budget plans for. The delay with the fewest copies is chosen.
    let delay = policy.delay().expect("a delay");
    assert!(delay >= ms(20), "{delay:?}");
    let with_budget = optimal(&timer).budget(&Budget::new(0.15)).build();
    quarter_of_pauses(&with_budget);
    assert!(past_the_body(with_budget.delay()));
}

#[test]
fn optimal_delay_is_a_key_of_the_policy_config() {
    let config: PolicyConfig = toml::from_str(
        "delay = \"20ms\"\noptimal_delay = 0.99\nmin_delay = \"100us\"\nmax_delay = \"200ms\"\n\n[budget]\nratio = 0.1\n",
    )
    .expect("a valid config");
    assert_eq!(config.optimal_delay, Some(0.99));
    let timer = ManualTimer::new();
    let policy = config
        .to_builder()
        .adaptive_min_samples(50)
        .adaptive_window(ms(400))
        .timer(timer.clone())
        .build();
    assert_eq!(policy.delay(), Some(ms(20)));
    quarter_of_pauses(&policy);
    assert!(past_the_body(policy.delay()), "{:?}", policy.delay());
    // One mode: not with adaptive_delay, and a quantile in range.
    let both = toml::from_str::<PolicyConfig>("adaptive_delay = 0.95\noptimal_delay = 0.99");
    assert!(both
        .unwrap_err()
        .to_string()
        .contains("adaptive_delay and optimal_delay are both set"));
    let out_of_range = toml::from_str::<PolicyConfig>("optimal_delay = 1.5");
    assert!(out_of_range
        .unwrap_err()
        .to_string()
        .contains("optimal_delay"));
}

#[test]
fn a_nan_target_counts_as_the_p99_and_a_target_out_of_range_is_clamped() {
    let timer = ManualTimer::new();
    for target in [f64::NAN, 7.0, -1.0] {
        let policy = Policy::builder()
            .optimal_delay(target)
            .delay(ms(20))
            .timer(timer.clone())
            .build();
        assert_eq!(policy.delay(), Some(ms(20)), "{target}");
    }
}

#[test]
fn calls_answered_at_their_first_poll_count_as_answering_at_once() {
    // 150 calls answered at their first poll (they read no clock and record no latency),
    // 90 in 1 ms, 10 paused (100 ms; their hedges are slower still, so the originals end
    // and show the pauses), all in one quarter window of 2 s. Of the calls that waited, a
    // tenth pause: hedging them all asks twice what a 5% budget grants. Of all the calls,
    // 4% pause, within it.
    let run = |at_once: bool| {
        let timer = ManualTimer::new();
        let policy = optimal(&timer)
            .adaptive_window(ms(8000))
            .budget(&Budget::new(0.05))
            .build();
        for call_index in 0..250 {
            if call_index % 5 >= 3 {
                let original = if call_index % 25 == 4 { ms(100) } else { ms(1) };
                call(&policy, original, ms(200));
            } else if at_once {
                let answer: Result<u32, ()> =
                    futures::executor::block_on((|| async { Ok(1) }).hedged(&policy));
                assert_eq!(answer, Ok(1));
            }
        }
        assert!(timer.now() < ms(2000), "one quarter window");
        assert_eq!(policy.stats().calls, if at_once { 250 } else { 100 });
        timer.advance(ms(2000) - timer.now());
        policy.delay().expect("a delay")
    };
    let delay = run(true);
    assert!(past_the_body(Some(delay)), "{delay:?}");
    // The same calls that waited, without the ones that answered at once: the model
    // would plan to hedge only what the budget grants, past the body's end.
    let waited_only = run(false);
    assert!(
        waited_only > ms(2) && waited_only != ms(20),
        "{waited_only:?}"
    );
}

#[test]
fn the_first_estimate_is_made_again_as_the_time_observed_doubles_until_a_slot_completes() {
    let timer = ManualTimer::new();
    let policy = optimal(&timer)
        .adaptive_window(ms(4_000)) // quarters of 1 s: every call below is in the first
        .budget(&Budget::new(0.15))
        .build();
    // The first latencies are the calls that ended soonest: 1 ms. The first estimate is
    // made at the 50th.
    for _ in 0..60 {
        call(&policy, ms(1), ms(1));
    }
    assert!(past_the_body(policy.delay()), "{:?}", policy.delay());
    // Slower calls end later. The estimate is made again at the slot's start plus 1/16,
    // 1/8, 1/4, 1/2 of a slot (62.5, 125, 250, 500 ms), from at least four times
    // `adaptive_min_samples` latencies: not at 62.5 and 125 ms (fewer than 200)...
    for _ in 0..50 {
        call(&policy, ms(3), ms(3));
    }
    assert!(past_the_body(policy.delay()), "{:?}", policy.delay());
    // ... nor at 250 ms, but at 500 ms, when 146 of 206 take 3 ms, more than the budget
    // could hedge at 1 ms.
    for _ in 0..150 {
        call(&policy, ms(3), ms(3));
    }
    assert!(timer.now() < ms(1_000), "still the first slot");
    let again = policy.delay().expect("an estimate");
    assert!((ms(2)..=ms(4)).contains(&again), "{again:?}");
    // Once a slot's turn has published an estimate, only the next turn moves it.
    timer.advance(ms(1_000) - timer.now());
    let settled = policy.delay();
    for _ in 0..400 {
        call(&policy, ms(1), ms(1));
    }
    assert!(timer.now() < ms(2_000), "still the second slot");
    assert_eq!(policy.delay(), settled);
}
