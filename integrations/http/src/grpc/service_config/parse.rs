//! Reading a service config's JSON: each known field checked where it is found, with its
//! path kept for the message; unknown fields skipped, as gRPC skips them.

use std::fmt;

use serde_json::{Map, Value};

use super::duration::{self, Unreadable};
use super::ServiceConfigError;
use super::{codes, HedgingPolicy, MethodConfig, RetryThrottling, ServiceConfig};
use crate::grpc::methods::{self, Routes};
use crate::grpc::MAX_ATTEMPTS;

type Object = Map<String, Value>;

/// The most `retryThrottling.maxTokens` may be, as in gRPC.
const MAX_TOKENS: f64 = 1000.0;

impl ServiceConfigError {
    fn new(field: &str, message: impl fmt::Display) -> Self {
        ServiceConfigError {
            field: field.to_owned(),
            message: message.to_string(),
        }
    }

    /// `field` holds `value`, which is not `expected`.
    fn not_a(field: &str, value: &Value, expected: &str) -> Self {
        ServiceConfigError::new(field, format_args!("{field} = {value} is not {expected}"))
    }

    fn out_of_range(field: &str, value: &Value, expected: &str) -> Self {
        let message = format_args!("{field} = {value} is out of range: expected {expected}");
        ServiceConfigError::new(field, message)
    }

    fn missing(field: &str) -> Self {
        let message = format_args!("{field} is missing: gRPC requires it");
        ServiceConfigError::new(field, message)
    }
}

/// A service config from its JSON.
pub(super) fn service_config(json: &str) -> Result<ServiceConfig, ServiceConfigError> {
    let root: Value = serde_json::from_str(json).map_err(|error| {
        ServiceConfigError::new("", format_args!("the service config is not JSON: {error}"))
    })?;
    let Value::Object(root) = &root else {
        let message = format_args!("the service config is {root}, not a JSON object");
        return Err(ServiceConfigError::new("", message));
    };
    let mut method_configs = Vec::new();
    let mut routes = Routes::default();
    for (index, entry) in list(root, "", "methodConfig")?.iter().enumerate() {
        let path = format!("methodConfig[{index}]");
        let config = method_config(&path, entry)?;
        for (at, name) in config.names.iter().enumerate() {
            let earlier = match methods::parse(name) {
                Err(_) => routes.insert_default(index), // `""`, checked when read
                Ok((service, method)) => routes.insert(service, method, index),
            };
            if let Some(earlier) = earlier {
                let field = format!("{path}.name[{at}]");
                let name = match name.as_str() {
                    "" => "the default (a name without a service)".to_owned(),
                    name => format!("{name:?}"),
                };
                let message = format_args!(
                    "{field} names {name}, which methodConfig[{earlier}] names too: gRPC \
                     refuses a name given twice"
                );
                return Err(ServiceConfigError::new(&field, message));
            }
        }
        method_configs.push(config);
    }
    let retry_throttling = match field(root, "retryThrottling") {
        None => None,
        Some(value) => Some(retry_throttling("retryThrottling", value)?),
    };
    Ok(ServiceConfig {
        method_configs,
        routes,
        retry_throttling,
    })
}

/// `object[key]`, absent when it is missing or `null` (protobuf's JSON form).
fn field<'a>(object: &'a Object, key: &str) -> Option<&'a Value> {
    object.get(key).filter(|value| !value.is_null())
}

/// The path of `key` inside the object at `path`.
fn join(path: &str, key: &str) -> String {
    match path {
        "" => key.to_owned(),
        path => format!("{path}.{key}"),
    }
}

fn object<'a>(path: &str, value: &'a Value) -> Result<&'a Object, ServiceConfigError> {
    value
        .as_object()
        .ok_or_else(|| ServiceConfigError::not_a(path, value, "an object"))
}

/// The list at `object[key]`; empty when absent.
fn list<'a>(object: &'a Object, path: &str, key: &str) -> Result<&'a [Value], ServiceConfigError> {
    match field(object, key) {
        None => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(value) => Err(ServiceConfigError::not_a(&join(path, key), value, "a list")),
    }
}

/// The string at `object[key]`; empty when absent, as protobuf's default.
fn string<'a>(object: &'a Object, path: &str, key: &str) -> Result<&'a str, ServiceConfigError> {
    match field(object, key) {
        None => Ok(""),
        Some(Value::String(text)) => Ok(text),
        Some(value) => Err(ServiceConfigError::not_a(
            &join(path, key),
            value,
            "a string",
        )),
    }
}

/// A number, written as one or as a string (protobuf's JSON form allows both).
fn number(path: &str, value: &Value) -> Result<f64, ServiceConfigError> {
    let number = match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.parse().ok(),
        _ => None,
    };
    number
        .filter(|number: &f64| number.is_finite())
        .ok_or_else(|| ServiceConfigError::not_a(path, value, "a finite number"))
}

/// A whole number, written as one or as a string.
fn integer(path: &str, value: &Value) -> Result<i64, ServiceConfigError> {
    let whole = match value {
        Value::Number(number) => number.as_i64().or_else(|| {
            // Whole numbers past i64 (1e30) or written with a point (3.0).
            let number = number.as_f64()?;
            (number.fract() == 0.0).then_some(number as i64)
        }),
        Value::String(text) => text.parse().ok(),
        _ => None,
    };
    whole.ok_or_else(|| ServiceConfigError::not_a(path, value, "an integer"))
}

fn method_config(path: &str, value: &Value) -> Result<MethodConfig, ServiceConfigError> {
    let config = object(path, value)?;
    let names = list(config, path, "name")?.iter().enumerate();
    let names = names
        .map(|(index, name_value)| name(&format!("{path}.name[{index}]"), name_value))
        .collect::<Result<_, _>>()?;
    let retry_policy = field(config, "retryPolicy");
    if let Some(retry_policy) = retry_policy {
        object(&join(path, "retryPolicy"), retry_policy)?;
    }
    let hedging_policy = match field(config, "hedgingPolicy") {
        None => None,
        Some(_) if retry_policy.is_some() => {
            let message = format_args!(
                "{path} has both a retryPolicy and a hedgingPolicy: gRPC takes one or the other"
            );
            return Err(ServiceConfigError::new(path, message));
        }
        Some(value) => Some(hedging_policy(&join(path, "hedgingPolicy"), value)?),
    };
    Ok(MethodConfig {
        names,
        hedging_policy,
        retry_policy: retry_policy.is_some(),
    })
}

/// One `name` entry, as A6 spells it: `service/method`, `service`, or `""` (the default).
fn name(path: &str, value: &Value) -> Result<String, ServiceConfigError> {
    let name = object(path, value)?;
    let service = string(name, path, "service")?;
    let method = string(name, path, "method")?;
    part(path, "service", service)?;
    part(path, "method", method)?;
    let full = match (service, method) {
        ("", "") => return Ok(String::new()),
        ("", method) => {
            let message = format_args!(
                "{path} names the method {method:?} without a service: gRPC refuses it"
            );
            return Err(ServiceConfigError::new(path, message));
        }
        (service, "") => service.to_owned(),
        (service, method) => format!("{service}/{method}"),
    };
    match methods::parse(&full) {
        Ok(_) => Ok(full),
        Err(error) => Err(ServiceConfigError::new(
            path,
            format_args!("{path}: {error}"),
        )),
    }
}

/// `value`, the `service` or `method` of a name entry at `path`: one segment of a request
/// path each, so no `/` and no whitespace. Refused by the field and the value as written,
/// not by the name the two make.
fn part(path: &str, key: &str, value: &str) -> Result<(), ServiceConfigError> {
    let field = join(path, key);
    let fault = if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        "holds whitespace or a control character, which no request path carries".to_owned()
    } else if value.contains('/') {
        let segments: Vec<&str> = value.split('/').filter(|s| !s.is_empty()).collect();
        match (key, segments.as_slice()) {
            ("service", [service]) => {
                format!("holds a '/': a service is named without one, as {service:?}")
            }
            ("service", [service, method]) => format!(
                "holds a '/': the method goes in its own field, as \
                 {{\"service\": {service:?}, \"method\": {method:?}}}"
            ),
            ("service", _) => {
                "holds a '/': a service is named without one, as \"package.Service\"".to_owned()
            }
            (_, [.., method]) => format!(
                "holds a '/': a method is named alone, without its service or a '/', as \
                 {method:?}"
            ),
            (_, []) => "holds a '/': a method is named alone, without a '/'".to_owned(),
        }
    } else {
        return Ok(());
    };
    let message = format_args!("{field} = {value:?} {fault}");
    Err(ServiceConfigError::new(&field, message))
}

fn hedging_policy(path: &str, value: &Value) -> Result<HedgingPolicy, ServiceConfigError> {
    let policy = object(path, value)?;
    let required = |key| {
        let field_path = join(path, key);
        match field(policy, key) {
            Some(value) => Ok((field_path, value)),
            None => Err(ServiceConfigError::missing(&field_path)),
        }
    };

    let (field_path, value) = required("maxAttempts")?;
    let max_attempts = integer(&field_path, value)?;
    if max_attempts < 2 {
        let expected = "2 or more (more than 5 counts as 5)";
        return Err(ServiceConfigError::out_of_range(
            &field_path,
            value,
            expected,
        ));
    }
    let max_attempts = max_attempts.min(MAX_ATTEMPTS as i64) as usize;

    let (field_path, value) = required("hedgingDelay")?;
    let Value::String(text) = value else {
        let expected = "a duration: a string of seconds ending in `s`, as \"0.1s\"";
        return Err(ServiceConfigError::not_a(&field_path, value, expected));
    };
    let hedging_delay = duration::parse(text).map_err(|unreadable| match unreadable {
        Unreadable::Malformed => ServiceConfigError::not_a(
            &field_path,
            value,
            "a duration: seconds with up to 9 decimals, then `s`, as \"0.1s\" or \"1.000000001s\"",
        ),
        Unreadable::Negative => {
            ServiceConfigError::out_of_range(&field_path, value, "\"0s\" or more")
        }
        Unreadable::TooLong => ServiceConfigError::out_of_range(
            &field_path,
            value,
            "at most protobuf's \"315576000000s\"",
        ),
    })?;

    let codes = list(policy, path, "nonFatalStatusCodes")?
        .iter()
        .enumerate();
    let non_fatal_status_codes = codes
        .map(|(index, code)| status_code(&format!("{path}.nonFatalStatusCodes[{index}]"), code))
        .collect::<Result<_, _>>()?;
    Ok(HedgingPolicy {
        max_attempts,
        hedging_delay,
        non_fatal_status_codes,
    })
}

/// A status code, by its name (`"UNAVAILABLE"`) or its number; never `OK`.
fn status_code(path: &str, value: &Value) -> Result<i32, ServiceConfigError> {
    let code = match value {
        Value::String(name) => codes::by_name(name).ok_or_else(|| {
            let upper = name.to_ascii_uppercase().replace([' ', '-'], "_");
            let expected = match codes::by_name(&upper) {
                Some(_) => format!("a status code: names are upper case, as {upper:?}"),
                None => "a status code: a name such as \"UNAVAILABLE\", or 1..=16".to_owned(),
            };
            ServiceConfigError::not_a(path, value, &expected)
        })?,
        Value::Number(_) => {
            let code = integer(path, value)?;
            let known = codes::name(code).is_some();
            match known {
                true => code as i32,
                false => return Err(ServiceConfigError::out_of_range(path, value, "1..=16")),
            }
        }
        _ => {
            let expected = "a status code: a name such as \"UNAVAILABLE\", or 1..=16";
            return Err(ServiceConfigError::not_a(path, value, expected));
        }
    };
    if code == 0 {
        let message = format_args!("{path} = {value} is OK, which is no failure: gRPC refuses it");
        return Err(ServiceConfigError::new(path, message));
    }
    Ok(code)
}

fn retry_throttling(path: &str, value: &Value) -> Result<RetryThrottling, ServiceConfigError> {
    let throttling = object(path, value)?;
    let required = |key, expected: &str, in_range: fn(f64) -> bool| {
        let field_path = join(path, key);
        let value =
            field(throttling, key).ok_or_else(|| ServiceConfigError::missing(&field_path))?;
        let number = number(&field_path, value)?;
        match in_range(number) {
            true => Ok(three_decimals(number)),
            false => Err(ServiceConfigError::out_of_range(
                &field_path,
                value,
                expected,
            )),
        }
    };
    let max_tokens = required("maxTokens", "(0, 1000]", |tokens| {
        tokens > 0.0 && tokens <= MAX_TOKENS
    })?;
    let token_ratio = required("tokenRatio", "more than 0", |ratio| ratio > 0.0)?;
    Ok(RetryThrottling {
        max_tokens,
        token_ratio,
    })
}

/// `value` to three decimals, truncated as grpc-java truncates it, and at least 0.001 (a
/// token ratio below it would earn nothing back).
fn three_decimals(value: f64) -> f64 {
    let thousandths = value * 1000.0;
    let nearest = thousandths.round();
    // 1.005 is 1004.999… thousandths in binary: that close to a whole one, it is that one.
    let kept = match (thousandths - nearest).abs() < 1e-6 {
        true => nearest,
        false => thousandths.floor(),
    };
    kept.max(1.0) / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_decimals_are_kept_as_written() {
        assert_eq!(three_decimals(0.1), 0.1);
        assert_eq!(three_decimals(1.005), 1.005);
        assert_eq!(three_decimals(0.5555), 0.555);
        assert_eq!(three_decimals(0.0001), 0.001);
        assert_eq!(three_decimals(1000.0), 1000.0);
    }
}
