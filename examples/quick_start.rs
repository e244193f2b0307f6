//! The README's quick start, run by CI (`cargo run --example quick_start`): the lines
//! between the two markers are the README's block, indented (`.ci/packages` compares
//! them); around them, a stand-in database so that they run.

use hedging::Elapsed;

/// A row of the stand-in database.
#[derive(Debug, PartialEq)]
struct Row(&'static str);

/// The stand-in database's error.
#[derive(Debug, PartialEq)]
enum DbError {
    Unavailable,
    TimedOut,
}

impl DbError {
    fn is_transient(&self) -> bool {
        *self == DbError::Unavailable
    }
}

impl From<Elapsed> for DbError {
    fn from(_: Elapsed) -> Self {
        DbError::TimedOut
    }
}

/// A database (or a replica of one) that answers at once.
struct Db;

impl Db {
    async fn get(&self, key: &'static str) -> Result<Row, DbError> {
        Ok(Row(key))
    }
}

async fn quick_start() {
    let (db, replicas, key) = (Db, [Db, Db], "user-7");

    // The README's quick start begins.
    use hedging::{Attempt, Hedgeable, Policy};
    use std::time::Duration;

    // Built once, cloned cheaply, shared by every call site. Unset, a policy sends at most
    // one hedge (`max_copies(2)`: the original and one copy), 10 ms after the original.
    let policy = Policy::builder()
        .max_copies(3) // the original and up to two hedges
        .delay(Duration::from_millis(20)) // each 20 ms after the one before
        .build();

    // A function that makes the request; the output type is the request's own.
    let row: Result<Row, DbError> = (|| db.get(key)).hedged(&policy).await;

    // The function may take the attempt, to send each copy to another replica, and may
    // decline a copy (`None`): here there are only as many copies as replicas.
    let from_a_replica = (|a: Attempt| replicas.get(a.index()).map(|r| r.get(key)))
        .hedged(&policy)
        .when(|e: &DbError| e.is_transient()) // other errors end the race at once
        .timeout(Duration::from_secs(1)) // the whole call; E: From<hedging::Elapsed>
        .await;

    let stats = policy.stats(); // calls, wins, failures, hedges, hedge_wins, budget_denied, …
    let delay = policy.delay(); // the delay a call gets now; a key's: policy.delay_for(&key)

    // The README's quick start ends.

    assert_eq!(row, Ok(Row("user-7")));
    assert_eq!(from_a_replica, Ok(Row("user-7")));
    assert_eq!((stats.calls, stats.hedges), (2, 0));
    assert_eq!(delay, Some(Duration::from_millis(20)));
    assert_eq!(policy.max_copies(), 3);
    assert!(!DbError::TimedOut.is_transient());
}

fn main() {
    futures::executor::block_on(quick_start());
    println!("the README's quick start ran");
}
