//! What the service config tests share: grpc-java's example config, and readers of a
//! config that panic with the error, or with the config accepted.
#![allow(dead_code)] // each test file uses its own part

use hedging_http::grpc::{ServiceConfig, ServiceConfigError};

/// grpc-java's `test_hedging_service_config.json`, as it is.
pub const JAVA_HEDGING_CONFIG: &str = r#"{
  "loadBalancingPolicy":"round_robin",
  "methodConfig":[
    {
      "name":[{"service":"SimpleService1"}],
      "waitForReady":false,
      "hedgingPolicy":{
        "maxAttempts":3,
        "hedgingDelay":"2.1s",
        "nonFatalStatusCodes":["UNAVAILABLE", "RESOURCE_EXHAUSTED"]
      }
    },
    {
      "name":[{"service":"SimpleService2"}],
      "waitForReady":false
    },
    {
      "name":[
        {"service":"SimpleService1", "method":"Foo1"},
        {"service":"SimpleService2", "method":"Foo2"}
      ],
      "waitForReady":true,
      "hedgingPolicy":{
        "maxAttempts":5,
        "hedgingDelay":"0.1s",
        "nonFatalStatusCodes":["UNAVAILABLE"]
      }
    }
  ],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
}"#;

pub const UNAVAILABLE: i32 = 14;
pub const RESOURCE_EXHAUSTED: i32 = 8;

pub fn read(json: &str) -> ServiceConfig {
    ServiceConfig::from_json(json).unwrap_or_else(|error| panic!("{error}"))
}

pub fn refused(json: &str) -> ServiceConfigError {
    match ServiceConfig::from_json(json) {
        Ok(config) => panic!("accepted: {config:?}"),
        Err(error) => error,
    }
}

/// A service config of one method config: `name` entries and a `hedgingPolicy`.
pub fn one_method_config(names: &str, hedging_policy: &str) -> String {
    format!(r#"{{"methodConfig": [{{"name": [{names}], "hedgingPolicy": {hedging_policy}}}]}}"#)
}

/// A service config hedging every method by `hedging_policy`.
pub fn hedging_policy(hedging_policy: &str) -> String {
    one_method_config("{}", hedging_policy)
}

/// A service config with this `retryThrottling`.
pub fn throttling(throttling: &str) -> String {
    format!(r#"{{"retryThrottling": {throttling}}}"#)
}

/// Asserts the field at fault and that the message says `message`.
pub fn assert_refused(json: &str, field: &str, message: &str) {
    let error = refused(json);
    assert_eq!(error.field(), field, "{error}");
    assert!(
        error.to_string().contains(message),
        "{error:?} does not say {message:?}"
    );
}

/// A service config hedging the methods of these `name` entries.
pub fn hedging_policy_named(names: &str) -> String {
    one_method_config(names, r#"{"maxAttempts": 2, "hedgingDelay": "1s"}"#)
}
