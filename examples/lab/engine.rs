//! The lab's engine: a deterministic, single-threaded executor on `ManualTimer` that
//! polls a task only when it was woken and jumps the clock to the next event.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use hedging::timer::ManualTimer;

/// A simulated call, or a simulated server.
pub type Task = Pin<Box<dyn Future<Output = ()>>>;

/// Wakes a task by queueing its index.
struct TaskWaker {
    task: usize,
    ready: Arc<Mutex<VecDeque<usize>>>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.ready.lock().unwrap().push_back(self.task);
    }
}

/// Runs `calls` calls to the end: call `call` is spawned by `spawn(call)` when the clock
/// reaches `arrival(call)` (non-decreasing). `servers` run beside them for as long as
/// calls remain and are never waited for. Woken tasks run in the order they were woken,
/// then the clock jumps to the next arrival or deadline, so every run is the same.
pub fn drive(
    timer: &ManualTimer,
    calls: usize,
    arrival: impl Fn(usize) -> Duration,
    mut spawn: impl FnMut(usize) -> Task,
    servers: Vec<Task>,
) {
    let ready = Arc::new(Mutex::new(VecDeque::new()));
    let waker_of = |task: usize| {
        Waker::from(Arc::new(TaskWaker {
            task,
            ready: Arc::clone(&ready),
        }))
    };
    // Calls take indices 0..calls, in arrival order; servers the indices after them.
    let mut tasks: Vec<Option<(Task, Waker)>> = Vec::with_capacity(calls);
    let mut servers: Vec<Option<(Task, Waker)>> = servers
        .into_iter()
        .enumerate()
        .map(|(index, server)| {
            ready.lock().unwrap().push_back(calls + index);
            Some((server, waker_of(calls + index)))
        })
        .collect();
    let (mut next_call, mut finished) = (0, 0);
    while finished < calls {
        let now = timer.now();
        while next_call < calls && arrival(next_call) <= now {
            tasks.push(Some((spawn(next_call), waker_of(next_call))));
            ready.lock().unwrap().push_back(next_call);
            next_call += 1;
        }
        loop {
            let Some(task) = ready.lock().unwrap().pop_front() else {
                break;
            };
            let slot = match task.checked_sub(calls) {
                Some(server) => &mut servers[server],
                None => &mut tasks[task],
            };
            let Some((future, waker)) = slot else {
                continue;
            };
            if future
                .as_mut()
                .poll(&mut Context::from_waker(waker))
                .is_ready()
            {
                *slot = None;
                finished += usize::from(task < calls);
            }
        }
        if finished == calls {
            break;
        }
        let next_arrival = (next_call < calls).then(|| arrival(next_call));
        let next = match (timer.next_deadline(), next_arrival) {
            (Some(deadline), Some(arrival)) => deadline.min(arrival),
            (deadline, arrival) => deadline
                .or(arrival)
                .expect("a call waits on nothing: the simulation stalled"),
        };
        timer.advance(next - now);
    }
}
