//! [`Log`]: what a server saw, shared by the HTTP and gRPC servers, and the holds that
//! keep a copy waiting until the test lets it go.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method};
use tokio::sync::watch;

/// One request as a server read it.
#[derive(Clone, Debug)]
pub struct Arrival {
    /// Its rank among every request the server read, from 0.
    pub order: u64,
    /// What the copies of one call share: the path for HTTP, the script for gRPC.
    pub key: String,
    /// Its rank among the arrivals with the same key, from 0.
    pub copy: usize,
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// When it arrived, by the server's clock (see [`Clock`]).
    pub at: Duration,
}

impl Arrival {
    /// The value of header `name`, if it has one that is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The time a server stamps arrivals with: by default, real time since it started; a
/// test on a virtual clock passes that clock's `now`.
pub type Clock = Arc<dyn Fn() -> Duration + Send + Sync>;

/// The real clock, from now.
pub fn real_clock() -> Clock {
    let started = Instant::now();
    Arc::new(move || started.elapsed())
}

/// How long a server keeps a copy before it answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hold {
    /// Not at all.
    #[default]
    No,
    /// This long, on tokio's clock (for examples and real-time smoke tests).
    For(Duration),
    /// Until the test [releases](Log::release) the copy's key, or the client drops it.
    Released,
}

#[derive(Default)]
struct State {
    arrivals: Vec<Arrival>,
    per_key: HashMap<String, usize>,
    held: u64,
    answered: u64,
    dropped: u64,
    released: HashSet<String>,
    /// Trickled pieces the test let go, by key.
    pieces: HashMap<String, u64>,
    connections: u64,
    closed: u64,
}

/// What a server saw: every arrival in order, how many it held, answered, and lost to a
/// client that dropped the copy first (the handler's future dropped unfinished), and the
/// connections it accepted and saw closed. Clones share one log.
#[derive(Clone)]
pub struct Log {
    state: Arc<watch::Sender<State>>,
    clock: Clock,
}

impl Log {
    /// An empty log stamping arrivals with `clock`.
    pub fn new(clock: Clock) -> Log {
        Log {
            state: Arc::new(watch::Sender::new(State::default())),
            clock,
        }
    }

    /// Records a request; its rank among those with the same key is its `copy`.
    pub(crate) fn arrive(
        &self,
        key: String,
        method: Method,
        path: String,
        headers: HeaderMap,
        body: Bytes,
    ) -> Arrival {
        let at = (self.clock)();
        let mut arrival = None;
        self.state.send_modify(|state| {
            let order = state.arrivals.len() as u64;
            let seen = state.per_key.entry(key.clone()).or_default();
            let copy = *seen;
            *seen += 1;
            let this = Arrival {
                order,
                key,
                copy,
                method,
                path,
                headers,
                body,
                at,
            };
            state.arrivals.push(this.clone());
            arrival = Some(this);
        });
        arrival.expect("recorded")
    }

    /// Waits as `hold` says, for a copy with `key`.
    pub(crate) async fn hold(&self, key: &str, hold: Hold) {
        match hold {
            Hold::No => {}
            Hold::For(stall) => {
                self.state.send_modify(|state| state.held += 1);
                tokio::time::sleep(stall).await;
            }
            Hold::Released => {
                self.state.send_modify(|state| state.held += 1);
                let mut released = self.state.subscribe();
                let _ = released
                    .wait_for(|state| state.released.contains(key))
                    .await;
            }
        }
    }

    /// A guard that counts the copy answered when [`Answering::done`] is called, and
    /// dropped if it is dropped first (the client went away).
    pub(crate) fn answering(&self) -> Answering {
        Answering {
            log: self.clone(),
            done: false,
        }
    }

    /// Every arrival with `key`, in order.
    pub fn arrivals(&self, key: &str) -> Vec<Arrival> {
        let state = self.state.borrow();
        state
            .arrivals
            .iter()
            .filter(|a| a.key == key)
            .cloned()
            .collect()
    }

    /// When each arrival with `key` came, in order: one entry per copy this server was
    /// sent, which tells the copies of a call apart when each went to another server.
    pub fn arrived_at(&self, key: &str) -> Vec<Duration> {
        self.arrivals(key).iter().map(|a| a.at).collect()
    }

    /// Every arrival, in order.
    pub fn all(&self) -> Vec<Arrival> {
        self.state.borrow().arrivals.clone()
    }

    /// How many requests arrived, with any key.
    pub fn requests(&self) -> u64 {
        self.state.borrow().arrivals.len() as u64
    }

    /// How many copies were held (any [`Hold`] but `No`).
    pub fn held(&self) -> u64 {
        self.state.borrow().held
    }

    /// How many copies were answered to the end.
    pub fn answered(&self) -> u64 {
        self.state.borrow().answered
    }

    /// How many copies the client dropped before their answer was done.
    pub fn dropped(&self) -> u64 {
        self.state.borrow().dropped
    }

    /// How many connections the server accepted.
    pub fn connections(&self) -> u64 {
        self.state.borrow().connections
    }

    /// How many of its connections the server saw closed (the client closed it, or reset
    /// it); counted by the HTTP server, whose connections end when the client's do.
    pub fn closed_connections(&self) -> u64 {
        self.state.borrow().closed
    }

    /// Asserts what `calls` sequential HTTP/1.1 calls, each won by its hedge, cost the
    /// server: each loser's handler dropped unanswered and its connection closed, and the
    /// first call's two connections, then one per call (its original reuses the winner's
    /// connection, its hedge opens a new one).
    pub fn assert_each_loser_closed_its_connection(&self, calls: u64) {
        assert_eq!(
            self.dropped(),
            calls,
            "each loser's handler was dropped unanswered"
        );
        assert_eq!(self.closed_connections(), calls, "its connection, closed");
        assert_eq!(
            self.connections(),
            calls + 1,
            "the first call's two, then one per call"
        );
    }

    pub(crate) fn connected(&self) {
        self.state.send_modify(|state| state.connections += 1);
    }

    pub(crate) fn disconnected(&self) {
        self.state.send_modify(|state| state.closed += 1);
    }

    /// Lets every copy with `key` held until released go on, and every later one pass.
    pub fn release(&self, key: &str) {
        self.state.send_modify(|state| {
            state.released.insert(key.to_owned());
        });
    }

    /// Lets `n` more pieces of every body with `key` trickled at the test's pace
    /// ([`Pace::Trickle`](crate::Pace::Trickle) with [`Hold::Released`]) go.
    pub fn let_pieces_go(&self, key: &str, n: u64) {
        self.state.send_modify(|state| {
            *state.pieces.entry(key.to_owned()).or_default() += n;
        });
    }

    /// Waits before piece `index` (from 1) of a trickled body with `key`: `every`, or
    /// with [`Hold::Released`] until the test let that many pieces go.
    pub(crate) async fn piece(&self, key: &str, every: Hold, index: u64) {
        match every {
            Hold::Released => {
                let mut released = self.state.subscribe();
                let _ = released
                    .wait_for(|state| state.pieces.get(key).copied().unwrap_or(0) >= index)
                    .await;
            }
            hold => self.hold(key, hold).await,
        }
    }

    /// Waits until `n` requests with `key` arrived; their arrivals.
    pub async fn until_arrived(&self, key: &str, n: usize) -> Vec<Arrival> {
        self.until(
            |log| log.per_key.get(key).copied().unwrap_or(0) >= n,
            "arrivals",
        )
        .await;
        self.arrivals(key)
    }

    /// Waits until the client dropped `n` copies.
    pub async fn until_dropped(&self, n: u64) {
        self.until(|log| log.dropped >= n, "dropped copies").await;
    }

    /// Waits until the server saw `n` of its connections closed.
    pub async fn until_closed(&self, n: u64) {
        self.until(|log| log.closed >= n, "closed connections")
            .await;
    }

    async fn until(&self, done: impl FnMut(&State) -> bool, what: &str) {
        let mut changes = self.state.subscribe();
        let waited = tokio::time::timeout(HANG_GUARD, changes.wait_for(done)).await;
        assert!(
            waited.is_ok(),
            "no {what} after {HANG_GUARD:?}: the test hangs"
        );
    }
}

/// How long a wait for an event may take before a test fails instead of hanging; no
/// assertion is about time.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.borrow();
        f.debug_struct("Log")
            .field("requests", &state.arrivals.len())
            .field("held", &state.held)
            .field("answered", &state.answered)
            .field("dropped", &state.dropped)
            .field("connections", &state.connections)
            .field("closed", &state.closed)
            .finish()
    }
}

/// Counts one copy answered or dropped.
pub(crate) struct Answering {
    log: Log,
    done: bool,
}

impl Answering {
    pub(crate) fn done(mut self) {
        self.done = true;
        self.log.state.send_modify(|state| state.answered += 1);
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        if !self.done {
            self.log.state.send_modify(|state| state.dropped += 1);
        }
    }
}

/// Waits until `done` holds, yielding to the runtime in between (for state no event
/// announces, such as a virtual clock's next deadline); fails after [`HANG_GUARD`].
pub async fn until(mut done: impl FnMut() -> bool, what: &str) {
    let waited = tokio::time::timeout(HANG_GUARD, async {
        while !done() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "not {what} after {HANG_GUARD:?}: the test hangs"
    );
}
