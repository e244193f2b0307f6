//! The replica servers of workloads (e) and (f): each a FIFO queue in front of one worker,
//! fed by the calls' copies. A copy dropped while queued leaves its queue; one dropped in
//! service runs to its end for nobody, or stops at once if in-service losers are aborted.
//! In (f) a worker pauses now and then: the copy in service stops until the pause ends,
//! and nothing queued behind it starts.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::Stream;
use hedging::timer::{ManualTimer, Timer};

use super::cluster::{Cluster, Slowness};
use super::engine::Task;

/// Where a copy is in its server's life.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    Queued,
    InService,
    /// Served, and its caller still waits for it.
    Done,
    /// Dropped while queued: its server skips it.
    Left,
    /// Dropped in service: the server finishes it for nobody.
    Abandoned,
    /// Dropped in service and stopped at once (in-service losers aborted).
    Aborted,
    /// Finished for nobody.
    Wasted,
}

struct Job {
    /// The call this copy belongs to.
    call: usize,
    server: usize,
    service: Duration,
    stage: Stage,
    started: Duration,
    /// The copy waiting for this job.
    waker: Option<Waker>,
}

#[derive(Default)]
struct Server {
    /// When the worker pauses, as (start, end), in order.
    pauses: Vec<(Duration, Duration)>,
    queue: VecDeque<usize>,
    /// Copies queued or in service here, including losers served for nobody: the queue
    /// length the replica reports to the balancer.
    load: usize,
    /// The server's task, idle or serving.
    waker: Option<Waker>,
}

/// The servers and every copy sent to them, shared by the calls and the servers' tasks.
pub(super) struct Farm {
    timer: ManualTimer,
    servers: Vec<Server>,
    jobs: Vec<Job>,
    abort_in_service: bool,
    /// Busy time is counted up to here: the last arrival.
    horizon: Duration,
    /// Worker time spent within the horizon.
    busy: Duration,
    /// Worker time spent in all.
    spent: Duration,
}

impl Farm {
    pub(super) fn new(
        timer: ManualTimer,
        cluster: &Cluster,
        abort_in_service: bool,
        horizon: Duration,
    ) -> Farm {
        Farm {
            timer,
            servers: (0..cluster.servers)
                .map(|server| Server {
                    pauses: cluster.pauses(server),
                    ..Server::default()
                })
                .collect(),
            jobs: Vec::new(),
            abort_in_service,
            horizon,
            busy: Duration::ZERO,
            spent: Duration::ZERO,
        }
    }

    /// The replica for copy `copy` of `call`, skipping `tried`: the one with the shortest
    /// queue, scanning from a random first (e), or a random one (f).
    fn choose(&self, cluster: &Cluster, call: usize, copy: usize, tried: &[usize]) -> usize {
        let servers = self.servers.len();
        let mut untried = (0..servers).filter(|server| !tried.contains(server));
        match cluster.slowness {
            Slowness::Independent => {
                let first = cluster.first_choice(call);
                (0..servers)
                    .map(|offset| (first + offset) % servers)
                    .filter(|server| !tried.contains(server))
                    .min_by_key(|&server| self.servers[server].load)
            }
            Slowness::Correlated => {
                let pick = cluster.random_choice(call, copy, servers - tried.len());
                untried.nth(pick)
            }
        }
        .expect("fewer copies than servers")
    }

    /// The end of the pause `server` is in at `at`, if it is in one.
    fn paused_until(&self, server: usize, at: Duration) -> Option<Duration> {
        let pauses = &self.servers[server].pauses;
        let next = pauses.partition_point(|&(_, end)| end <= at);
        pauses
            .get(next)
            .filter(|&&(start, _)| start <= at)
            .map(|&(_, end)| end)
    }

    /// When `work` of service started at `from` on `server` is done, its pauses skipped.
    fn done_at(&self, server: usize, from: Duration, work: Duration) -> Duration {
        let (mut at, mut left) = (from, work);
        let pauses = &self.servers[server].pauses;
        for &(start, end) in &pauses[pauses.partition_point(|&(_, end)| end <= from)..] {
            let start = start.max(at);
            if start >= at + left {
                break;
            }
            left -= start - at;
            at = end;
        }
        at + left
    }

    /// The worker time `server` spent serving from `from` to `to`: its pauses left out.
    fn worked(&self, server: usize, from: Duration, to: Duration) -> Duration {
        let paused: Duration = self.servers[server]
            .pauses
            .iter()
            .map(|&(start, end)| end.min(to).saturating_sub(start.max(from)))
            .sum();
        (to - from).saturating_sub(paused)
    }

    /// Queues a copy of `call` needing `service` at `server`.
    fn submit(&mut self, call: usize, server: usize, service: Duration) -> usize {
        let job = self.jobs.len();
        self.jobs.push(Job {
            call,
            server,
            service,
            stage: Stage::Queued,
            started: Duration::ZERO,
            waker: None,
        });
        let server = &mut self.servers[server];
        server.queue.push_back(job);
        server.load += 1;
        if let Some(waker) = server.waker.take() {
            waker.wake();
        }
        job
    }

    /// Starts the next copy still queued at `server`, or registers the server to be woken;
    /// a paused server starts nothing until its pause ends.
    fn start_next(&mut self, server: usize, cx: &Context<'_>) -> Poll<Result<usize, Duration>> {
        let now = self.timer.now();
        if let Some(end) = self.paused_until(server, now) {
            return Poll::Ready(Err(end));
        }
        while let Some(job) = self.servers[server].queue.pop_front() {
            let job_state = &mut self.jobs[job];
            if job_state.stage == Stage::Queued {
                job_state.stage = Stage::InService;
                job_state.started = now;
                if let Some(waker) = job_state.waker.take() {
                    waker.wake();
                }
                return Poll::Ready(Ok(job));
            }
        }
        self.servers[server].waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Ends `job`'s time on its worker at `end`, counting the work it was given.
    fn stop(&mut self, job: usize, end: Duration) {
        let (server, started) = (self.jobs[job].server, self.jobs[job].started);
        self.servers[server].load -= 1;
        self.spent += self.worked(server, started, end);
        let horizon = self.horizon;
        self.busy += self.worked(server, started.min(horizon), end.min(horizon));
    }

    /// Ends `job`'s service.
    fn finish(&mut self, job: usize) {
        let job_state = &mut self.jobs[job];
        job_state.stage = match job_state.stage {
            Stage::InService => Stage::Done,
            Stage::Abandoned => Stage::Wasted,
            stage => unreachable!("a job in service cannot be {stage:?}"),
        };
        if let Some(waker) = job_state.waker.take() {
            waker.wake();
        }
        self.stop(job, self.timer.now());
    }

    /// Once every call ended: lets the losers still in service run to their end, and
    /// returns the share of the servers' time they were busy up to the horizon and the
    /// worker time spent in all.
    pub(super) fn settle(&mut self) -> (f64, Duration) {
        for job in 0..self.jobs.len() {
            if matches!(self.jobs[job].stage, Stage::InService | Stage::Abandoned) {
                let (server, started) = (self.jobs[job].server, self.jobs[job].started);
                let end = self.done_at(server, started, self.jobs[job].service);
                self.stop(job, end);
            }
        }
        let capacity = self.horizon.as_secs_f64() * self.servers.len() as f64;
        (self.busy.as_secs_f64() / capacity, self.spent)
    }

    /// How many calls had more than one of their copies served (or started, if aborted):
    /// each such call paid for a second service.
    pub(super) fn served_twice(&self) -> u64 {
        let mut served = vec![0u8; self.jobs.iter().map(|job| job.call + 1).max().unwrap_or(0)];
        for job in &self.jobs {
            if !matches!(job.stage, Stage::Queued | Stage::Left) {
                served[job.call] = served[job.call].saturating_add(1);
            }
        }
        served.iter().filter(|&&copies| copies > 1).count() as u64
    }

    /// The copy waiting on `job` was dropped: it leaves its queue, or its service runs on
    /// for nobody (or stops, if in-service losers are aborted).
    fn drop_copy(&mut self, job: usize) {
        let server = self.jobs[job].server;
        match self.jobs[job].stage {
            Stage::Queued => {
                self.jobs[job].stage = Stage::Left;
                self.servers[server].load -= 1;
            }
            Stage::InService if self.abort_in_service => {
                self.jobs[job].stage = Stage::Aborted;
                self.stop(job, self.timer.now());
                if let Some(waker) = self.servers[server].waker.take() {
                    waker.wake();
                }
            }
            Stage::InService => self.jobs[job].stage = Stage::Abandoned,
            _ => {}
        }
    }
}

/// One server: serves its queue in order, one copy at a time.
pub(super) fn serve(farm: Rc<RefCell<Farm>>, server: usize) -> Task {
    Box::pin(async move {
        let timer = farm.borrow().timer.clone();
        loop {
            let job = match poll_fn(|cx| farm.borrow_mut().start_next(server, cx)).await {
                Ok(job) => job,
                Err(pause_end) => {
                    timer.sleep(pause_end - timer.now()).await;
                    continue;
                }
            };
            let done_at = {
                let farm = farm.borrow();
                farm.done_at(server, timer.now(), farm.jobs[job].service)
            };
            let mut sleep = pin!(timer.sleep(done_at - timer.now()));
            poll_fn(|cx| {
                let mut farm = farm.borrow_mut();
                if farm.jobs[job].stage == Stage::Aborted {
                    return Poll::Ready(());
                }
                if sleep.as_mut().poll(cx).is_ready() {
                    farm.finish(job);
                    return Poll::Ready(());
                }
                farm.servers[server].waker = Some(cx.waker().clone());
                Poll::Pending
            })
            .await;
        }
    })
}

/// A copy of a call at its server: as a future, ready once served; as a stream (a tied
/// request), "started" when its service starts, then the answer. Dropping it reaches
/// the server.
pub(super) struct Request {
    farm: Rc<RefCell<Farm>>,
    job: usize,
    /// How many replies the stream yielded: "started", then the answer.
    replies: u8,
}

/// What a tied request's stream yields.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Reply {
    Started,
    Answer,
}

impl Request {
    /// Sends copy `copy` of `call` to a replica not in `tried`, as the cluster's balancer
    /// picks it, and adds that replica to `tried`.
    pub(super) fn send(
        farm: &Rc<RefCell<Farm>>,
        cluster: &Cluster,
        call: usize,
        copy: usize,
        tried: &RefCell<Vec<usize>>,
    ) -> Request {
        let mut shared = farm.borrow_mut();
        let mut tried = tried.borrow_mut();
        let server = shared.choose(cluster, call, copy, &tried);
        tried.push(server);
        let job = shared.submit(call, server, cluster.service(call, copy));
        Request {
            farm: Rc::clone(farm),
            job,
            replies: 0,
        }
    }

    /// Ready once the job started (or, if `served`, finished), registering `cx` until then.
    fn poll_stage(&self, cx: &Context<'_>, served: bool) -> Poll<()> {
        let mut farm = self.farm.borrow_mut();
        let job = &mut farm.jobs[self.job];
        let reached = match job.stage {
            Stage::Queued => false,
            Stage::InService => !served,
            _ => true,
        };
        if reached {
            return Poll::Ready(());
        }
        job.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Future for Request {
    type Output = Result<(), ()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), ()>> {
        self.poll_stage(cx, true).map(Ok)
    }
}

impl Stream for Request {
    type Item = Result<Reply, ()>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let (served, reply) = match self.replies {
            0 => (false, Reply::Started),
            1 => (true, Reply::Answer),
            _ => return Poll::Ready(None),
        };
        let reached = self.poll_stage(cx, served);
        if reached.is_ready() {
            self.replies += 1;
        }
        reached.map(|()| Some(Ok(reply)))
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        self.farm.borrow_mut().drop_copy(self.job);
    }
}
