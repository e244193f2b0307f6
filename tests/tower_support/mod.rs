//! What the tower tests share: a service whose call k follows a scripted backend's step
//! k, logging each request and counting its own clones.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use crate::common::{Backend, CopyFuture};
use tower::Service;

/// What a [`Scripted`] and its clones saw: calls, clones and each request.
#[derive(Default)]
pub struct Counts {
    pub calls: AtomicUsize,
    pub clones: AtomicUsize,
    pub requests: Mutex<Vec<u32>>,
}

/// Call k (of it and its clones) follows the backend's step k; logs each request and
/// counts its own clones.
pub struct Scripted {
    pub backend: Backend,
    pub counts: Arc<Counts>,
}

impl Scripted {
    pub fn new(backend: &Backend) -> Self {
        Scripted {
            backend: backend.clone(),
            counts: Arc::default(),
        }
    }
}

impl Clone for Scripted {
    fn clone(&self) -> Self {
        self.counts.clones.fetch_add(1, SeqCst);
        Scripted {
            backend: self.backend.clone(),
            counts: Arc::clone(&self.counts),
        }
    }
}

impl Service<u32> for Scripted {
    type Response = u32;
    type Error = u32;
    type Future = CopyFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), u32>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: u32) -> CopyFuture {
        self.counts.requests.lock().unwrap().push(request);
        let index = self.counts.calls.fetch_add(1, SeqCst);
        self.backend.copy(index)
    }
}
