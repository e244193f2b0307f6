//! Feature `serde`: `hedging::config` through this crate's `hedging` re-export, with no
//! `hedging` dependency of one's own (the test the integrations share).
#![cfg(feature = "serde")]

hedging_test_server::serde_feature_test!(hedging_opendal);
