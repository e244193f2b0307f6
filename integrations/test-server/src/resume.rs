//! What a read resumed after its body stalled shows, as every integration that resumes
//! asserts it: the resume's request, and the policy's counts.

use std::time::Duration;

use hedging::Policy;

use crate::counts::assert_counted;
use crate::log::Arrival;

/// Asserts that `resume` asked for the rest of a `size`-byte object from `offset`, and
/// arrived at `at` (quiet for the delay, then raced for one more); returns the version it
/// named (its `If-Match`), which each store names its own way.
pub fn assert_asks_the_rest(
    resume: &Arrival,
    offset: u64,
    size: u64,
    at: Duration,
) -> Option<&str> {
    let rest = format!("bytes={offset}-{}", size - 1);
    assert_eq!(resume.header("range"), Some(rest.as_str()), "the rest");
    assert_eq!(
        resume.at, at,
        "quiet for the delay, then raced for one more"
    );
    resume.header("if-match")
}

/// Asserts that `policy` counted one read resumed once: the read and its resume race, the
/// resume a hedge that won, nothing out of scope.
pub fn assert_resumed_once<T>(policy: &Policy<T>) {
    let why = "the read and its resume race; the resume a hedge that won";
    assert_counted(policy, (2, 1, 1, 0), why);
}
