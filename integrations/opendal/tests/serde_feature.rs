//! Feature `serde`: `hedging::config` through this crate's `hedging` re-export, with no
//! `hedging` dependency of one's own.
#![cfg(feature = "serde")]

use std::time::Duration;

use hedging_opendal::hedging::config::PolicyConfig;
use hedging_opendal::hedging::timer::ManualTimer;

#[test]
fn the_serde_feature_gives_hedging_config_through_the_re_export() {
    let mut config = PolicyConfig::default();
    config.max_copies = Some(3);
    config.delay = Some(Duration::from_millis(5));
    config.validate().unwrap();
    let policy = config.to_builder().timer(ManualTimer::new()).build();
    assert_eq!(policy.max_copies(), 3);
    assert_eq!(policy.delay(), Some(Duration::from_millis(5)));
}
