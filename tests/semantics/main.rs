//! One test (at least) per row of the contracts table, driven by `ManualTimer` and
//! polled only when woken; one module per group of rows.

#[path = "../common/mod.rs"]
mod common;

mod calls;
mod outcomes;
mod schedule;
