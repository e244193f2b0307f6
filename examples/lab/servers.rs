//! The replica servers of workload (e): each a FIFO queue in front of one worker, fed by
//! the calls' copies. A copy dropped while queued leaves its queue; one dropped in
//! service runs to its end for nobody, or stops at once if in-service losers are aborted.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::Stream;
use hedging::timer::{ManualTimer, Timer};

use super::engine::Task;
use super::queueing::{Cluster, SERVERS};

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
    server: usize,
    service: Duration,
    stage: Stage,
    started: Duration,
    /// The copy waiting for this job.
    waker: Option<Waker>,
}

#[derive(Default)]
struct Server {
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
    pub(super) fn new(timer: ManualTimer, abort_in_service: bool, horizon: Duration) -> Farm {
        Farm {
            timer,
            servers: (0..SERVERS).map(|_| Server::default()).collect(),
            jobs: Vec::new(),
            abort_in_service,
            horizon,
            busy: Duration::ZERO,
            spent: Duration::ZERO,
        }
    }

    /// The replica with the shortest queue, skipping `tried`, scanning from `first`.
    fn least_loaded(&self, tried: &[usize], first: usize) -> usize {
        (0..SERVERS)
            .map(|offset| (first + offset) % SERVERS)
            .filter(|server| !tried.contains(server))
            .min_by_key(|&server| self.servers[server].load)
            .expect("fewer copies than servers")
    }

    /// Queues a copy needing `service` at `server`.
    fn submit(&mut self, server: usize, service: Duration) -> usize {
        let job = self.jobs.len();
        self.jobs.push(Job {
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

    /// Starts the next copy still queued at `server`, or registers the server to be woken.
    fn start_next(&mut self, server: usize, cx: &Context<'_>) -> Poll<usize> {
        let now = self.timer.now();
        while let Some(job) = self.servers[server].queue.pop_front() {
            let job_state = &mut self.jobs[job];
            if job_state.stage == Stage::Queued {
                job_state.stage = Stage::InService;
                job_state.started = now;
                if let Some(waker) = job_state.waker.take() {
                    waker.wake();
                }
                return Poll::Ready(job);
            }
        }
        self.servers[server].waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Ends `job`'s time on its worker at `end`, counting it.
    fn stop(&mut self, job: usize, end: Duration) {
        let (server, started) = (self.jobs[job].server, self.jobs[job].started);
        self.servers[server].load -= 1;
        self.spent += end - started;
        self.busy += end
            .min(self.horizon)
            .saturating_sub(started.min(self.horizon));
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
                let end = self.jobs[job].started + self.jobs[job].service;
                self.stop(job, end);
            }
        }
        let capacity = self.horizon.as_secs_f64() * SERVERS as f64;
        (self.busy.as_secs_f64() / capacity, self.spent)
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
        loop {
            let job = poll_fn(|cx| farm.borrow_mut().start_next(server, cx)).await;
            let (timer, service) = {
                let farm = farm.borrow();
                (farm.timer.clone(), farm.jobs[job].service)
            };
            let mut sleep = pin!(timer.sleep(service));
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
    /// Sends copy `copy` of `call` to the least-loaded replica not in `tried`, and adds
    /// that replica to `tried`.
    pub(super) fn send(
        farm: &Rc<RefCell<Farm>>,
        cluster: &Cluster,
        call: usize,
        copy: usize,
        tried: &RefCell<Vec<usize>>,
    ) -> Request {
        let mut shared = farm.borrow_mut();
        let mut tried = tried.borrow_mut();
        let server = shared.least_loaded(&tried, cluster.first_choice(call));
        tried.push(server);
        let job = shared.submit(server, cluster.service(call, copy));
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
