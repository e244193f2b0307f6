//! `GrpcHedgeLayer::from_service_config` (feature `service-config`) in front of a tonic
//! `Channel`, against a real tonic server on loopback: each method hedged by its own
//! method config, counted from the server's side on the virtual clock.

mod grpc_scene;

use std::time::Duration;

use grpc_scene::{echo, hedged, Scene, HEDGE_DELAY};
use hedging::timer::ManualTimer;
use hedging_http::grpc::{GrpcHedgeLayer, ServiceConfig};
use hedging_test_server::grpc::{say, OTHER, SAY};
use serde_json::{json, Value};
use tonic::Code;

/// A layer from this service config, on the scene's clock.
fn layer(scene: &Scene, json: &str) -> GrpcHedgeLayer<ManualTimer> {
    let config = ServiceConfig::from_json(json).unwrap();
    GrpcHedgeLayer::from_service_config(&config, scene.clock.timer())
}

/// A layer whose service config hedges only `test.Echo/{method}`, 2 copies 20 ms apart.
fn hedging_only(scene: &Scene, method: &str) -> GrpcHedgeLayer<ManualTimer> {
    let name = json!([{"service": "test.Echo", "method": method}]);
    let hedging = json!({"maxAttempts": 2, "hedgingDelay": "0.02s"});
    let config = json!({"methodConfig": [{"name": name, "hedgingPolicy": hedging}]});
    layer(scene, &config.to_string())
}

/// When each copy of the call with `script` arrived, after the first.
fn offsets(scene: &Scene, script: &str) -> Vec<Duration> {
    let arrivals = scene.server.arrivals(script);
    arrivals.iter().map(|a| a.at - arrivals[0].at).collect()
}

/// A config hedging `Say` and `Other` with 2 copies an hour apart, `Say` failing over on
/// `UNAVAILABLE` and `Other` on `other_codes` (none: no `nonFatalStatusCodes`), with
/// `throttling` as its `retryThrottling`.
fn say_and_other(other_codes: &[&str], throttling: Option<Value>) -> String {
    let method = |method: &str, codes: &[&str]| {
        let mut hedging = json!({"maxAttempts": 2, "hedgingDelay": "3600s"});
        if !codes.is_empty() {
            hedging["nonFatalStatusCodes"] = json!(codes);
        }
        json!({"name": [{"service": "test.Echo", "method": method}], "hedgingPolicy": hedging})
    };
    let mut config =
        json!({"methodConfig": [method("Say", &["UNAVAILABLE"]), method("Other", other_codes)]});
    if let Some(throttling) = throttling {
        config["retryThrottling"] = throttling;
    }
    config.to_string()
}

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

#[tokio::test]
async fn two_methods_are_hedged_each_by_its_own_policy() {
    let scene = Scene::new(2, HEDGE_DELAY).await;
    let layer = layer(
        &scene,
        r#"{"methodConfig": [
            {"name": [{"service": "test.Echo", "method": "Say"}],
             "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.02s"}},
            {"name": [{"service": "test.Echo", "method": "Other"}],
             "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.05s"}}
        ]}"#,
    );
    let Scene { clock, server, .. } = &scene;

    // Say: 3 copies, 20 ms apart.
    let said = "hold | hold | hold | ok";
    let reply = scene.call(layer.clone(), echo(said), SAY);
    clock.hedge(server, said, 1, ms(20)).await;
    clock.hedge(server, said, 2, ms(20)).await;
    server.until_arrived(said, 3).await;
    clock.release(server, said).await;
    assert!(reply.await.unwrap().unwrap().attempt < 3);
    assert_eq!(scene.attempts(said), [0, 1, 2], "maxAttempts 3");
    assert_eq!(offsets(&scene, said), [ms(0), ms(20), ms(40)]);

    // Other: 2 copies, 50 ms apart; 20 ms is not its delay.
    let other = "hold | hold | ok";
    let reply = scene.call(layer.clone(), echo(other), OTHER);
    let started = server.until_arrived(other, 1).await[0].at;
    assert_eq!(
        clock.timer().next_deadline(),
        Some(started + ms(50)),
        "not Say's 20 ms"
    );
    clock.advance(ms(50));
    server.until_arrived(other, 2).await;
    clock.release(server, other).await;
    assert!(reply.await.unwrap().unwrap().attempt < 2);
    assert_eq!(scene.attempts(other), [0, 1], "maxAttempts 2");
    assert_eq!(offsets(&scene, other), [ms(0), ms(50)]);

    let stats = |method| layer.policy_for(method).unwrap().stats();
    let (say_stats, other_stats) = (stats("test.Echo/Say"), stats("test.Echo/Other"));
    assert_eq!((say_stats.calls, say_stats.hedges), (1, 2));
    assert_eq!((other_stats.calls, other_stats.hedges), (1, 1));
    assert_eq!(layer.policy().stats().out_of_scope, 0);
}

#[tokio::test]
async fn the_most_specific_method_config_wins_on_the_wire() {
    let scene = Scene::new(2, HEDGE_DELAY).await;
    // Every method hedged by the default, but Say, whose own config has no hedging policy.
    let layer = layer(
        &scene,
        r#"{"methodConfig": [
            {"name": [{}], "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.02s"}},
            {"name": [{"service": "test.Echo", "method": "Say"}], "timeout": "1s"}
        ]}"#,
    );

    scene
        .assert_sent_once(layer.clone(), echo("hold | hold | ok"), SAY)
        .await;
    let other = scene.call(layer.clone(), echo("hold | ok"), OTHER);
    scene
        .clock
        .hedge(&scene.server, "hold | ok", 1, ms(20))
        .await;
    assert_eq!(
        other.await.unwrap().unwrap().attempt,
        1,
        "the default hedged it"
    );

    assert_eq!(
        layer.policy_for("test.Echo/Other").unwrap().stats().hedges,
        1
    );
    let unhedged = layer.policy().stats();
    assert_eq!(
        (unhedged.out_of_scope, unhedged.calls),
        (1, 0),
        "Say, out of scope"
    );
}

#[tokio::test]
async fn a_method_no_name_matches_is_sent_once_and_counted_out_of_scope() {
    let scene = Scene::new(2, HEDGE_DELAY).await;
    let layer = hedging_only(&scene, "say");

    scene
        .assert_sent_once(layer.clone(), echo("hold | ok"), SAY)
        .await;

    assert_eq!(layer.policy().stats().out_of_scope, 1, "`say` is not `Say`");
    assert_eq!(layer.policy_for("test.Echo/say").unwrap().stats().calls, 0);
}

#[tokio::test]
async fn each_method_fails_over_on_its_own_non_fatal_codes() {
    let scene = Scene::new(2, HEDGE_DELAY).await;
    let layer = layer(&scene, &say_and_other(&[], None));
    let channel = scene.channel.clone();

    let said = say(
        hedged(layer.clone(), channel.clone()),
        echo("status=14 | ok"),
        SAY,
    );
    assert_eq!(
        said.await.unwrap().attempt,
        1,
        "UNAVAILABLE is non-fatal for Say"
    );
    let other = say(hedged(layer, channel), echo("status=14 | ok; ok"), OTHER);
    let status = other.await.unwrap_err();
    assert_eq!(
        status.code(),
        Code::Unavailable,
        "and fatal for Other: it has no codes"
    );
    assert_eq!(scene.attempts("status=14 | ok; ok"), [0]);
}

#[tokio::test]
async fn one_throttling_budget_is_shared_by_every_method_of_the_layer() {
    let scene = Scene::new(2, HEDGE_DELAY).await;
    // Hedges stop at or below 1.5 tokens; each failed copy spends one.
    let throttling = json!({"maxTokens": 3, "tokenRatio": 0.1});
    let layer = layer(&scene, &say_and_other(&["UNAVAILABLE"], Some(throttling)));
    let channel = scene.channel.clone();

    // Say fails once (3 → 2 tokens), then its second copy wins (2.1).
    let said = say(
        hedged(layer.clone(), channel.clone()),
        echo("status=14 | ok"),
        SAY,
    );
    assert_eq!(said.await.unwrap().attempt, 1);
    // Other's first failure leaves 1.1 tokens: its second copy is refused.
    let script = "status=14 | ok; ok";
    let other = say(hedged(layer.clone(), channel), echo(script), OTHER);
    assert_eq!(other.await.unwrap_err().code(), Code::Unavailable);

    assert_eq!(scene.attempts(script), [0], "throttled by Say's failure");
    let other_policy = layer.policy_for("test.Echo/Other").unwrap();
    assert_eq!(other_policy.stats().budget_denied, 1);
    let tokens = other_policy.budget().unwrap().tokens();
    assert!((tokens - 1.1).abs() < 1e-9, "{tokens}");
}

#[tokio::test]
async fn unmatched_lists_each_method_the_service_config_does_not_match_once() {
    let scene = Scene::new(2, HEDGE_DELAY).await;
    // "Sai": a misspelt name, which every call of Say misses.
    let layer = hedging_only(&scene, "Sai");
    assert!(layer.unmatched().is_empty());
    for (script, path) in [("ok", SAY), ("ok; ok", OTHER), ("ok; ok; ok", SAY)] {
        // A clone, as a channel's stack holds one per service: they share the list.
        let reply = scene.call(layer.clone(), echo(script), path);
        reply.await.unwrap().unwrap();
    }
    assert_eq!(layer.unmatched(), ["test.Echo/Say", "test.Echo/Other"]);
    assert_eq!(layer.policy().stats().out_of_scope, 3, "every call counted");
}
