//! `grpc::ServiceConfig` (feature `service-config`): the hedging and throttling cases of
//! grpc-java's service config tests (`HedgingPolicyTest`, `ManagedChannelServiceConfigTest`,
//! `ServiceConfigUtil`'s checks, `RetriableStream.Throttle`), and grpc-go's range checks,
//! each named after what it checks; then what this crate adds.

use std::time::Duration;

use hedging_http::grpc::{GrpcHedgeLayer, ServiceConfig, ServiceConfigError};

/// grpc-java's `test_hedging_service_config.json`, as it is.
const JAVA_HEDGING_CONFIG: &str = r#"{
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

const UNAVAILABLE: i32 = 14;
const RESOURCE_EXHAUSTED: i32 = 8;

fn read(json: &str) -> ServiceConfig {
    ServiceConfig::from_json(json).unwrap_or_else(|error| panic!("{error}"))
}

fn refused(json: &str) -> ServiceConfigError {
    match ServiceConfig::from_json(json) {
        Ok(config) => panic!("accepted: {config:?}"),
        Err(error) => error,
    }
}

/// A service config of one method config: `name` entries and a `hedgingPolicy`.
fn one_method_config(names: &str, hedging_policy: &str) -> String {
    format!(r#"{{"methodConfig": [{{"name": [{names}], "hedgingPolicy": {hedging_policy}}}]}}"#)
}

/// A service config hedging every method by `hedging_policy`.
fn hedging_policy(hedging_policy: &str) -> String {
    one_method_config("{}", hedging_policy)
}

/// A service config with this `retryThrottling`.
fn throttling(throttling: &str) -> String {
    format!(r#"{{"retryThrottling": {throttling}}}"#)
}

/// Asserts the field at fault and that the message says `message`.
fn assert_refused(json: &str, field: &str, message: &str) {
    let error = refused(json);
    assert_eq!(error.field(), field, "{error}");
    assert!(
        error.to_string().contains(message),
        "{error:?} does not say {message:?}"
    );
}

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

// --- What this crate adds -----------------------------------------------------------

#[test]
fn unknown_fields_are_ignored_as_grpc_ignores_them() {
    let json = r#"{
        "loadBalancingConfig": [{"round_robin": {}}],
        "futureField": {"anything": [1, 2, 3]},
        "methodConfig": [{
            "name": [{"service": "kv.Store", "futureNameField": true}],
            "timeout": "1s", "waitForReady": true, "maxRequestMessageBytes": 1024,
            "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "1s", "futurePolicyField": 1}
        }],
        "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1, "futureThrottlingField": 1}
    }"#;
    let config = read(json);
    assert_eq!(
        config
            .hedging_policy("kv.Store/Get")
            .unwrap()
            .max_attempts(),
        2
    );
}

#[test]
fn a_misspelt_field_is_ignored_and_its_methods_go_unhedged() {
    let json = r#"{"methodConfig": [{"name": [{"service": "kv.Store"}],
        "hedging_policy": {"maxAttempts": 3, "hedgingDelay": "1s"}}]}"#;
    let config = read(json);
    assert!(config.hedging_policy("kv.Store/Get").is_none());
}

#[test]
fn null_fields_are_absent() {
    let json = r#"{"methodConfig": [{"name": [{"service": "kv.Store", "method": null}],
        "retryPolicy": null, "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "1s",
        "nonFatalStatusCodes": null}}], "retryThrottling": null}"#;
    let config = read(json);
    assert!(config.hedging_policy("kv.Store/Get").is_some());
    assert!(config.retry_throttling().is_none());
}

#[test]
fn a_name_no_call_can_match_is_rejected() {
    assert_refused(
        &hedging_policy_named(r#"{"service": "/kv.Store", "method": "Get"}"#),
        "methodConfig[0].name[0].service",
        "methodConfig[0].name[0].service = \"/kv.Store\" holds a '/': a service is named \
         without one, as \"kv.Store\"",
    );
    assert_refused(
        &hedging_policy_named(r#"{"service": "kv.Store", "method": "Get "}"#),
        "methodConfig[0].name[0].method",
        "methodConfig[0].name[0].method = \"Get \" holds whitespace or a control character",
    );
}

#[test]
fn a_method_written_with_a_slash_is_refused_by_its_field_and_the_value_written() {
    let error = refused(&hedging_policy_named(
        r#"{"service": "helloworld.Greeter", "method": "/SayHello"}"#,
    ));
    assert_eq!(error.field(), "methodConfig[0].name[0].method");
    assert_eq!(
        error.to_string(),
        "methodConfig[0].name[0].method = \"/SayHello\" holds a '/': a method is named alone, \
         without its service or a '/', as \"SayHello\""
    );
    assert_refused(
        &hedging_policy_named(r#"{"service": "helloworld.Greeter/SayHello"}"#),
        "methodConfig[0].name[0].service",
        "methodConfig[0].name[0].service = \"helloworld.Greeter/SayHello\" holds a '/': the \
         method goes in its own field, as {\"service\": \"helloworld.Greeter\", \"method\": \
         \"SayHello\"}",
    );
}

#[test]
fn text_that_is_not_a_json_object_is_rejected() {
    assert_refused("", "", "the service config is not JSON: EOF while parsing");
    assert_refused(
        "{\"methodConfig\": [}",
        "",
        "the service config is not JSON",
    );
    assert_refused("[]", "", "the service config is [], not a JSON object");
}

#[test]
fn a_field_of_the_wrong_type_is_rejected_by_its_path() {
    assert_refused(
        r#"{"methodConfig": {}}"#,
        "methodConfig",
        "methodConfig = {} is not a list",
    );
    assert_refused(
        r#"{"methodConfig": [3]}"#,
        "methodConfig[0]",
        "methodConfig[0] = 3 is not an object",
    );
    assert_refused(
        r#"{"methodConfig": [{"name": [{"service": 7}]}]}"#,
        "methodConfig[0].name[0].service",
        "methodConfig[0].name[0].service = 7 is not a string",
    );
    assert_refused(
        r#"{"methodConfig": [{"name": [{}], "retryPolicy": "on"}]}"#,
        "methodConfig[0].retryPolicy",
        "methodConfig[0].retryPolicy = \"on\" is not an object",
    );
    assert_refused(
        &throttling(r#"{"maxTokens": "ten", "tokenRatio": 0.1}"#),
        "retryThrottling.maxTokens",
        "retryThrottling.maxTokens = \"ten\" is not a finite number",
    );
}

#[test]
fn one_bad_method_config_rejects_the_whole_config() {
    let json = r#"{"methodConfig": [
        {"name": [{"service": "good"}], "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "1s"}},
        {"name": [{"service": "bad"}], "hedgingPolicy": {"maxAttempts": 2}}
    ]}"#;
    assert_refused(
        json,
        "methodConfig[1].hedgingPolicy.hedgingDelay",
        "is missing",
    );
}

#[test]
fn a_service_config_parses_from_str() {
    let config: ServiceConfig = "{}".parse().unwrap();
    assert!(config.method_configs().is_empty());
}

#[test]
fn each_method_config_gets_its_own_policy_named_after_its_names() {
    let layer = GrpcHedgeLayer::from_service_config(
        &read(JAVA_HEDGING_CONFIG),
        hedging::timer::ManualTimer::new(),
    );
    let policy = |method| {
        layer
            .policy_for(method)
            .map(|policy| (policy.name(), policy.max_copies()))
    };

    assert_eq!(
        policy("SimpleService1/Bar"),
        Some((Some("SimpleService1"), 3))
    );
    let foo = Some((Some("SimpleService1/Foo1, SimpleService2/Foo2"), 5));
    assert_eq!(
        (policy("SimpleService1/Foo1"), policy("SimpleService2/Foo2")),
        (foo, foo)
    );
    assert_eq!(
        policy("SimpleService2/Bar"),
        None,
        "its config has no hedging policy"
    );
    assert_eq!(policy("Other/Bar"), None, "no name matches it");
    let names: Vec<_> = layer.policies().map(|policy| policy.name()).collect();
    assert_eq!(
        names,
        [
            Some("out of scope"),
            Some("SimpleService1"),
            Some("SimpleService1/Foo1, SimpleService2/Foo2")
        ]
    );
    assert_eq!(
        layer.policy().max_copies(),
        1,
        "the layer's own hedges nothing"
    );
}

#[test]
fn every_hedging_policy_of_a_config_is_throttled() {
    // That they share one budget: tests/grpc_service_config.rs, against a server.
    let layer = GrpcHedgeLayer::from_service_config(
        &read(JAVA_HEDGING_CONFIG),
        hedging::timer::ManualTimer::new(),
    );
    for method in ["SimpleService1/Bar", "SimpleService1/Foo1"] {
        let budget = layer.policy_for(method).unwrap().budget().unwrap();
        assert_eq!((budget.tokens(), budget.ratio()), (10.0, 0.1), "{method}");
    }
    assert!(
        layer.policy().budget().is_none(),
        "the layer's own hedges nothing"
    );
}

/// A service config hedging the methods of these `name` entries.
fn hedging_policy_named(names: &str) -> String {
    one_method_config(names, r#"{"maxAttempts": 2, "hedgingDelay": "1s"}"#)
}

#[test]
fn the_service_configs_in_the_readmes_and_docs_are_valid() {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // The crate's README, then the workspace's README and the docs pages the READMEs link
    // (absent from the packaged crate); each page but the workspace's README shows one.
    let pages = [
        ("README.md", true),
        ("../../README.md", false),
        ("../../docs/guide.md", true),
        ("../../docs/http.md", true),
    ];
    for (page, shows_one) in pages {
        let Ok(text) = std::fs::read_to_string(manifest.join(page)) else {
            assert_ne!(page, "README.md", "the crate's README is missing");
            continue;
        };
        let mut configs = 0;
        for block in text.split("```json\n").skip(1) {
            let json = block.split("```").next().unwrap();
            assert!(!read(json).method_configs().is_empty(), "{page}: {json}");
            configs += 1;
        }
        assert!(configs >= 1 || !shows_one, "no service config in {page}");
    }
}

#[test]
fn a_method_config_without_names_gets_no_policy() {
    let config =
        read(r#"{"methodConfig": [{"hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "1s"}}]}"#);
    let layer = GrpcHedgeLayer::from_service_config(&config, hedging::timer::ManualTimer::new());
    assert_eq!(layer.policies().count(), 1, "the layer's own only");
}
