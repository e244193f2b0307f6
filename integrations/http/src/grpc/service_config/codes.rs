//! gRPC status codes by name, as a service config may spell them.

/// The codes' names, by their number.
const NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The code named `name` (exactly, as gRPC reads it: `"UNAVAILABLE"`).
pub(super) fn by_name(name: &str) -> Option<i32> {
    NAMES
        .iter()
        .position(|known| *known == name)
        .map(|code| code as i32)
}

/// The name of `code`, if it is a gRPC status code.
pub(super) fn name(code: i64) -> Option<&'static str> {
    usize::try_from(code)
        .ok()
        .and_then(|code| NAMES.get(code))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers_agree_with_grpc() {
        assert_eq!(by_name("OK"), Some(0));
        assert_eq!(by_name("RESOURCE_EXHAUSTED"), Some(8));
        assert_eq!(by_name("UNAVAILABLE"), Some(14));
        assert_eq!(by_name("UNAUTHENTICATED"), Some(16));
        assert_eq!(by_name("unavailable"), None, "case-sensitive, as in gRPC");
        assert_eq!(name(14), Some("UNAVAILABLE"));
        assert_eq!((name(17), name(-1)), (None, None));
    }
}
