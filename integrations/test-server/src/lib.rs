//! Loopback servers for the workspace's tests and examples, which talk to real servers
//! on 127.0.0.1, never to mocks of the client library.
//!
//! - [`Server::http`]: hyper, HTTP/1.1 and HTTP/2 (prior knowledge) on one port; what
//!   each copy gets is a behaviour's [`Answer`], by default the script in the request's
//!   `x-script` header ([`Answer::scripted`]).
//! - `Server::grpc` (feature `grpc`): tonic, one unary service, scripted per call.
//! - `object` (feature `object-store`): object reads for the HTTP server, and a
//!   connector for `object_store::http::HttpStore`.
//! - `s3` (feature `s3`): a real S3 server (`s3s-fs`) behind a stalling proxy, and
//!   `object_store`'s `AmazonS3` for it.
//! - `opendal` (feature `opendal`): an OpenDAL HTTP transport sent by hyper-util, for
//!   OpenDAL's services on loopback.
//!
//! - `resume`: what a read resumed after its body stalled shows.
//!
//! Every server keeps a [`Log`] of what it saw: each request in order, with its copy
//! number; how many it held, answered, and lost to a client that dropped the copy (its
//! handler's future dropped unfinished); the connections it accepted and saw closed. Its
//! knobs are a [`Hold`] (none, a real-time stall, or until the test releases it), a
//! status, headers (`Retry-After`, gRPC pushback) and the body. Tests run their policies
//! on a [`VirtualClock`] that stamps the server's log too, and wait for events
//! ([`Log::until_arrived`], [`Probe`]) rather than for time.
#![warn(missing_debug_implementations, rust_2018_idioms)]

mod answer;
pub mod bench;
pub mod counts;
#[cfg(feature = "grpc")]
pub mod grpc;
pub mod http;
pub mod keys;
mod log;
#[cfg(feature = "object-store")]
pub mod object;
#[cfg(feature = "opendal")]
pub mod opendal;
mod pace;
mod probe;
pub mod replicas;
pub mod report;
pub mod resume;
#[cfg(feature = "s3")]
pub mod s3;
mod serde_feature;
mod server;
mod virtual_clock;

pub use crate::answer::{always, one_in, Answer, Behavior, Reply, SCRIPT};
pub use crate::log::{real_clock, until, Arrival, Clock, Hold, Log, HANG_GUARD};
pub use crate::pace::Pace;
pub use crate::probe::{Counted, Probe, ProbeHandle, Tally};
pub use crate::server::{refusing_address, Server};
pub use crate::virtual_clock::{
    overtakes_the_stall, tokio_policy, VirtualClock, NEVER, SMOKE_STALL,
};

/// Any error, boxed.
pub type Error = Box<dyn std::error::Error + Send + Sync>;
