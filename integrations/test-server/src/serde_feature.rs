//! The test every published integration runs with its feature `serde`: `hedging::config`
//! reached through the crate's `hedging` re-export, with no `hedging` dependency of one's
//! own. A macro, so that the test names the crate's own path.

/// The `serde` feature test of the integration crate `$krate`, as a `#[test]` function.
#[macro_export]
macro_rules! serde_feature_test {
    ($krate:ident) => {
        #[test]
        fn the_serde_feature_gives_hedging_config_through_the_re_export() {
            use ::std::time::Duration;

            use $krate::hedging::config::PolicyConfig;
            use $krate::hedging::timer::ManualTimer;

            let mut config = PolicyConfig::default();
            config.max_copies = Some(3);
            config.delay = Some(Duration::from_millis(5));
            config.validate().unwrap();
            let policy = config.to_builder().timer(ManualTimer::new()).build();
            assert_eq!(policy.max_copies(), 3);
            assert_eq!(policy.delay(), Some(Duration::from_millis(5)));
        }
    };
}
