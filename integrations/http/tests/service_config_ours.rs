//! `grpc::ServiceConfig` (feature `service-config`): what this crate adds to the cases of
//! grpc-java's and grpc-go's service config tests (`service_config.rs`).

mod service_config_common;

use hedging_http::grpc::{GrpcHedgeLayer, ServiceConfig};
use service_config_common::*;

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
