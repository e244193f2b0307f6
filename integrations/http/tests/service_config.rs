//! `grpc::ServiceConfig` (feature `service-config`): the hedging and throttling cases of
//! grpc-java's service config tests (`HedgingPolicyTest`, `ManagedChannelServiceConfigTest`,
//! `ServiceConfigUtil`'s checks, `RetriableStream.Throttle`), and grpc-go's range checks,
//! each named after what it checks. What this crate adds: `service_config_ours.rs`.

mod service_config_common;

use std::time::Duration;

use service_config_common::*;

// --- HedgingPolicyTest --------------------------------------------------------------

#[test]
fn hedging_policies_follow_the_most_specific_name() {
    let config = read(JAVA_HEDGING_CONFIG);

    assert!(config.method_config("not/exist").is_none());
    assert!(config.method_config("not_exist/Foo1").is_none());
    let service = config.hedging_policy("SimpleService1/not_exist").unwrap();
    assert_eq!(service.max_attempts(), 3);
    assert_eq!(service.hedging_delay(), Duration::from_millis(2100));
    assert_eq!(
        service.non_fatal_status_codes(),
        [UNAVAILABLE, RESOURCE_EXHAUSTED]
    );
    let method = config.hedging_policy("SimpleService1/Foo1").unwrap();
    assert_eq!(
        method.max_attempts(),
        5,
        "A6's cap is 5 (grpc-java's test caps at 4)"
    );
    assert_eq!(method.hedging_delay(), Duration::from_millis(100));
    assert_eq!(method.non_fatal_status_codes(), [UNAVAILABLE]);
    let without = config.method_config("SimpleService2/not_exist").unwrap();
    assert!(without.hedging_policy().is_none(), "its config has none");
    assert_eq!(config.hedging_policy("SimpleService2/Foo2"), Some(method));
}

#[test]
fn retry_throttling_is_read_beside_the_hedging_policies() {
    let throttling = read(JAVA_HEDGING_CONFIG).retry_throttling().unwrap();
    assert_eq!(
        (throttling.max_tokens(), throttling.token_ratio()),
        (10.0, 0.1)
    );
    assert_eq!(throttling.to_budget().tokens(), 10.0);
}

// --- ManagedChannelServiceConfigTest ------------------------------------------------

#[test]
fn an_empty_config_has_no_method_config_and_no_throttling() {
    let config = read("{}");
    assert!(config.method_configs().is_empty());
    assert!(config.method_config("service/method").is_none());
    assert!(config.retry_throttling().is_none());
}

#[test]
fn a_method_named_twice_in_one_method_config_is_rejected() {
    let name = r#"{"service": "service", "method": "method"}"#;
    assert_refused(
        &hedging_policy_named(&format!("{name}, {name}")),
        "methodConfig[0].name[1]",
        "methodConfig[0].name[1] names \"service/method\", which methodConfig[0] names too: \
         gRPC refuses a name given twice",
    );
}

#[test]
fn a_service_named_twice_in_one_method_config_is_rejected() {
    let name = r#"{"service": "service"}"#;
    assert_refused(
        &hedging_policy_named(&format!("{name}, {name}")),
        "methodConfig[0].name[1]",
        "names \"service\", which methodConfig[0] names too",
    );
}

#[test]
fn a_service_named_in_two_method_configs_is_rejected() {
    let json = r#"{"methodConfig": [
        {"name": [{"service": "service"}]},
        {"name": [{"service": "service"}]}
    ]}"#;
    assert_refused(
        json,
        "methodConfig[1].name[0]",
        "methodConfig[1].name[0] names \"service\", which methodConfig[0] names too",
    );
}

#[test]
fn two_defaults_are_rejected() {
    let json = r#"{"methodConfig": [{"name": [{}]}, {"name": [{"service": ""}]}]}"#;
    assert_refused(
        json,
        "methodConfig[1].name[0]",
        "names the default (a name without a service), which methodConfig[0] names too",
    );
}

#[test]
fn a_method_name_with_an_empty_service_is_rejected() {
    assert_refused(
        &hedging_policy_named(r#"{"service": "", "method": "method1"}"#),
        "methodConfig[0].name[0]",
        "methodConfig[0].name[0] names the method \"method1\" without a service: gRPC refuses it",
    );
}

#[test]
fn a_method_name_without_a_service_is_rejected() {
    assert_refused(
        &hedging_policy_named(r#"{"method": "method1"}"#),
        "methodConfig[0].name[0]",
        "names the method \"method1\" without a service",
    );
}

#[test]
fn a_method_takes_its_own_config_then_its_services_then_the_default() {
    // grpc-java's parseMethodConfig, with hedging policies in place of its timeouts.
    let json = r#"{"methodConfig": [
        {"name": [{"service": "service1", "method": "method1"}, {"service": "service2"}],
         "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "1.234s"}},
        {"name": [{}], "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "4.321s"}}
    ]}"#;
    let config = read(json);
    let delay = |method: &str| config.hedging_policy(method).unwrap().hedging_delay();

    assert_eq!(delay("service1/method1"), Duration::from_millis(1234));
    assert_eq!(
        delay("service1/methodX"),
        Duration::from_millis(4321),
        "the default"
    );
    assert_eq!(
        delay("service2/methodX"),
        Duration::from_millis(1234),
        "its service"
    );
    assert_eq!(
        config.method_configs()[0].names(),
        ["service1/method1", "service2"]
    );
    assert_eq!(config.method_configs()[1].names(), [""]);
}

#[test]
fn a_method_config_without_names_applies_to_nothing() {
    let config =
        read(r#"{"methodConfig": [{"hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "1s"}}]}"#);
    assert_eq!(config.method_configs().len(), 1, "read, and checked");
    assert!(config.method_config("service/method").is_none());
}

// --- MethodInfo.hedgingPolicy and ServiceConfigUtil ---------------------------------

#[test]
fn max_attempts_is_required() {
    assert_refused(
        &hedging_policy(r#"{"hedgingDelay": "1s"}"#),
        "methodConfig[0].hedgingPolicy.maxAttempts",
        "methodConfig[0].hedgingPolicy.maxAttempts is missing: gRPC requires it",
    );
}

#[test]
fn max_attempts_below_two_is_rejected() {
    for max_attempts in ["1", "0", "-3"] {
        assert_refused(
            &hedging_policy(&format!(
                r#"{{"maxAttempts": {max_attempts}, "hedgingDelay": "1s"}}"#
            )),
            "methodConfig[0].hedgingPolicy.maxAttempts",
            &format!(
                "maxAttempts = {max_attempts} is out of range: expected 2 or more (more than 5 \
                 counts as 5)"
            ),
        );
    }
}

#[test]
fn max_attempts_above_five_is_capped_at_five() {
    for max_attempts in ["6", "100", "1e30"] {
        let json = hedging_policy(&format!(
            r#"{{"maxAttempts": {max_attempts}, "hedgingDelay": "1s"}}"#
        ));
        let config = read(&json);
        assert_eq!(
            config.hedging_policy("s/m").unwrap().max_attempts(),
            5,
            "{max_attempts}"
        );
    }
}

#[test]
fn max_attempts_that_is_not_an_integer_is_rejected() {
    assert_refused(
        &hedging_policy(r#"{"maxAttempts": 2.5, "hedgingDelay": "1s"}"#),
        "methodConfig[0].hedgingPolicy.maxAttempts",
        "maxAttempts = 2.5 is not an integer",
    );
    assert_refused(
        &hedging_policy(r#"{"maxAttempts": "three", "hedgingDelay": "1s"}"#),
        "methodConfig[0].hedgingPolicy.maxAttempts",
        "maxAttempts = \"three\" is not an integer",
    );
}

#[test]
fn integers_may_be_written_as_strings_or_with_a_point() {
    let config = read(&hedging_policy(
        r#"{"maxAttempts": "3", "hedgingDelay": "1s"}"#,
    ));
    assert_eq!(config.hedging_policy("s/m").unwrap().max_attempts(), 3);
    let config = read(&hedging_policy(
        r#"{"maxAttempts": 4.0, "hedgingDelay": "1s"}"#,
    ));
    assert_eq!(config.hedging_policy("s/m").unwrap().max_attempts(), 4);
}

#[test]
fn hedging_delay_is_required() {
    assert_refused(
        &hedging_policy(r#"{"maxAttempts": 3}"#),
        "methodConfig[0].hedgingPolicy.hedgingDelay",
        "methodConfig[0].hedgingPolicy.hedgingDelay is missing: gRPC requires it",
    );
}

#[test]
fn a_negative_hedging_delay_is_rejected() {
    assert_refused(
        &hedging_policy(r#"{"maxAttempts": 3, "hedgingDelay": "-0.1s"}"#),
        "methodConfig[0].hedgingPolicy.hedgingDelay",
        "hedgingDelay = \"-0.1s\" is out of range: expected \"0s\" or more",
    );
}

#[test]
fn hedging_delay_reads_protobufs_duration_to_the_nanosecond() {
    let delay = |text: &str| {
        let json = hedging_policy(&format!(
            r#"{{"maxAttempts": 2, "hedgingDelay": "{text}"}}"#
        ));
        read(&json).hedging_policy("s/m").unwrap().hedging_delay()
    };
    assert_eq!(delay("0.1s"), Duration::from_millis(100));
    assert_eq!(delay("1.000000001s"), Duration::new(1, 1));
    assert_eq!(delay("0s"), Duration::ZERO, "every copy at once");
    assert_eq!(delay("300s"), Duration::from_secs(300));
}

#[test]
fn a_hedging_delay_that_is_not_a_protobuf_duration_is_rejected() {
    for text in ["100ms", "0.1", "1.0000000001s", ".5s"] {
        assert_refused(
            &hedging_policy(&format!(
                r#"{{"maxAttempts": 2, "hedgingDelay": "{text}"}}"#
            )),
            "methodConfig[0].hedgingPolicy.hedgingDelay",
            &format!(
                "hedgingDelay = \"{text}\" is not a duration: seconds with up to 9 decimals, \
                 then `s`, as \"0.1s\" or \"1.000000001s\""
            ),
        );
    }
    assert_refused(
        &hedging_policy(r#"{"maxAttempts": 2, "hedgingDelay": 0.1}"#),
        "methodConfig[0].hedgingPolicy.hedgingDelay",
        "hedgingDelay = 0.1 is not a duration: a string of seconds ending in `s`",
    );
}

#[test]
fn non_fatal_status_codes_are_names_or_integers() {
    let json = hedging_policy(
        r#"{"maxAttempts": 2, "hedgingDelay": "1s", "nonFatalStatusCodes": ["UNAVAILABLE", 8, "ABORTED", 13.0]}"#,
    );
    let config = read(&json);
    let codes = config
        .hedging_policy("s/m")
        .unwrap()
        .non_fatal_status_codes();
    assert_eq!(codes, [UNAVAILABLE, RESOURCE_EXHAUSTED, 10, 13]);
}

#[test]
fn non_fatal_status_codes_default_to_none() {
    let config = read(&hedging_policy(
        r#"{"maxAttempts": 2, "hedgingDelay": "1s"}"#,
    ));
    assert!(config
        .hedging_policy("s/m")
        .unwrap()
        .non_fatal_status_codes()
        .is_empty());
}

#[test]
fn ok_is_not_a_non_fatal_status_code() {
    for ok in [r#""OK""#, "0"] {
        assert_refused(
            &hedging_policy(&format!(
                r#"{{"maxAttempts": 2, "hedgingDelay": "1s", "nonFatalStatusCodes": [14, {ok}]}}"#
            )),
            "methodConfig[0].hedgingPolicy.nonFatalStatusCodes[1]",
            &format!("nonFatalStatusCodes[1] = {ok} is OK, which is no failure: gRPC refuses it"),
        );
    }
}

#[test]
fn an_unknown_status_code_is_rejected() {
    let codes = |codes: &str| {
        hedging_policy(&format!(
            r#"{{"maxAttempts": 2, "hedgingDelay": "1s", "nonFatalStatusCodes": [{codes}]}}"#
        ))
    };
    let field = "methodConfig[0].hedgingPolicy.nonFatalStatusCodes[0]";
    assert_refused(
        &codes(r#""UNAVAILABLE_NOW""#),
        field,
        "= \"UNAVAILABLE_NOW\" is not a status code: a name such as \"UNAVAILABLE\", or 1..=16",
    );
    assert_refused(
        &codes(r#""unavailable""#),
        field,
        "= \"unavailable\" is not a status code: names are upper case, as \"UNAVAILABLE\"",
    );
    assert_refused(&codes("17"), field, "= 17 is out of range: expected 1..=16");
    assert_refused(&codes("14.5"), field, "= 14.5 is not an integer");
    assert_refused(&codes("true"), field, "= true is not a status code");
}

#[test]
fn retry_and_hedging_policies_together_are_rejected() {
    let json = r#"{"methodConfig": [{"name": [{}],
        "retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s", "maxBackoff": "10s",
                        "backoffMultiplier": 1.5, "retryableStatusCodes": ["UNAVAILABLE"]},
        "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "1s"}}]}"#;
    assert_refused(
        json,
        "methodConfig[0]",
        "methodConfig[0] has both a retryPolicy and a hedgingPolicy: gRPC takes one or the other",
    );
}

#[test]
fn a_retry_policy_alone_hedges_nothing() {
    let json = r#"{"methodConfig": [{"name": [{}],
        "retryPolicy": {"maxAttempts": 3, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;
    let config = read(json);
    let method_config = config.method_config("s/m").unwrap();
    assert!(method_config.has_retry_policy());
    assert!(method_config.hedging_policy().is_none());
}

// --- retryThrottling: ServiceConfigUtil.getThrottlePolicy, RetriableStream.Throttle,
// --- grpc-go's parseServiceConfig -----------------------------------------------------

#[test]
fn max_tokens_must_be_above_zero() {
    for max_tokens in ["0", "-1"] {
        assert_refused(
            &throttling(&format!(
                r#"{{"maxTokens": {max_tokens}, "tokenRatio": 0.1}}"#
            )),
            "retryThrottling.maxTokens",
            &format!(
                "retryThrottling.maxTokens = {max_tokens} is out of range: expected (0, 1000]"
            ),
        );
    }
}

#[test]
fn max_tokens_above_1000_is_rejected() {
    assert_refused(
        &throttling(r#"{"maxTokens": 1000.5, "tokenRatio": 0.1}"#),
        "retryThrottling.maxTokens",
        "retryThrottling.maxTokens = 1000.5 is out of range: expected (0, 1000]",
    );
    let config = read(&throttling(r#"{"maxTokens": 1000, "tokenRatio": 0.1}"#));
    assert_eq!(config.retry_throttling().unwrap().max_tokens(), 1000.0);
}

#[test]
fn token_ratio_must_be_above_zero() {
    assert_refused(
        &throttling(r#"{"maxTokens": 10, "tokenRatio": 0}"#),
        "retryThrottling.tokenRatio",
        "retryThrottling.tokenRatio = 0 is out of range: expected more than 0",
    );
}

#[test]
fn throttling_keeps_three_decimals() {
    let config = read(&throttling(
        r#"{"maxTokens": 10.1234, "tokenRatio": 0.5555}"#,
    ));
    let throttling = config.retry_throttling().unwrap();
    assert_eq!(
        (throttling.max_tokens(), throttling.token_ratio()),
        (10.123, 0.555)
    );
    assert_eq!(throttling.to_budget().ratio(), 0.555);
    let exact = read(&throttling_of(1.005)).retry_throttling().unwrap();
    assert_eq!(
        exact.token_ratio(),
        1.005,
        "not 1.004: 1.005 is not exact in binary"
    );
}

fn throttling_of(token_ratio: f64) -> String {
    throttling(&format!(
        r#"{{"maxTokens": 10, "tokenRatio": {token_ratio}}}"#
    ))
}

#[test]
fn throttling_needs_both_settings() {
    assert_refused(
        &throttling(r#"{"maxTokens": 10}"#),
        "retryThrottling.tokenRatio",
        "retryThrottling.tokenRatio is missing: gRPC requires it",
    );
    assert_refused(
        &throttling(r#"{"tokenRatio": 0.1}"#),
        "retryThrottling.maxTokens",
        "retryThrottling.maxTokens is missing",
    );
}
