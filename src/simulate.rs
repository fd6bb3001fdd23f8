//! The driver: one replication of one [`Scenario`] -> one [`RunResult`].
//!
//! It assembles the model (workload, network, server, client policy), owns the event loop and
//! handles every [`Event`] in one `match`. The engine orders events; the model decides
//! admissions, service times and backoff delays; the driver keeps the logical requests.
//! No I/O and no wall clock: the same scenario, seed and replication always give the same
//! result.
//!
//! Logical requests live in a slab that reuses slots, so memory follows what is in flight.
//! Every attempt gets a token; an event about an attempt whose token is no longer the one its
//! request awaits (it timed out, or the request ended) is stale and only counted, which is how
//! abandoned work and late replies are detected without cancelling events.

use std::collections::BTreeMap;

use rand::RngExt;

use crate::engine::{EventQueue, SimDuration, SimTime, Streams};
use crate::metrics::{Column, Gauges, Recorder, RunResult, Truncation};
use crate::model::{
    Admission, Breaker, Budget, Job, OccServer, Outage, Outcome, QueueServer, RateLimiter,
};
use crate::scenario::{RetryAfter, Scenario, ServerKind, Workload};

/// Everything that can happen in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    /// The next logical request of the open workload arrives.
    Arrival,
    /// A closed-workload client starts its next logical request.
    ClientReady { client: u32 },
    /// A retry's backoff is over: the client sends the next attempt, or gives up if the
    /// request's deadline has passed.
    RetryDue { slot: u32 },
    /// An attempt reaches the server (for the `occ` server: its read).
    ServerArrival { slot: u32, token: u32 },
    /// `occ`: a conditional write reaches the server (two hops after the read: the version
    /// travels back and the client writes at once).
    OccWrite { slot: u32, token: u32, version: u32 },
    /// The server finishes serving an attempt.
    ServiceDone { slot: u32, token: u32 },
    /// An answer reaches the client.
    Reply {
        slot: u32,
        token: u32,
        outcome: Outcome,
    },
    /// The client's timer for an attempt fires (timeout or deadline).
    AttemptTimer { slot: u32, token: u32 },
    /// A concurrency fault window starts or ends: the server re-reads its worker count.
    FaultEdge,
}

/// No attempt is awaited.
const NO_TOKEN: u32 = 0;

/// Pending events below which stale timers are never swept out.
const COMPACT_MIN: usize = 4096;

/// Per-client policy instances kept in a vector up to this many; above it, only the clients
/// that have started a request have one.
const DENSE_INSTANCES: usize = 4096;

/// The budgets or the breakers of a run: none, one shared, or one per client. A few are kept
/// in a vector; many (up to 2^32 - 1 clients) in a map that holds only the instances of
/// clients that have started a request, every other one being in the fresh state, so that
/// memory follows the clients that sent something rather than the client count.
struct Instances<T> {
    /// How many instances the run has (0: no such policy).
    count: usize,
    /// Whether they are all kept in `dense`.
    all: bool,
    /// The state of an instance nothing has touched.
    fresh: T,
    /// Every instance, when `all`.
    dense: Vec<T>,
    /// The instances touched so far, by index, when there are more.
    sparse: BTreeMap<usize, T>,
}

impl<T: Clone> Instances<T> {
    /// `count` fresh instances, kept in a vector if there are at most `dense_max`.
    fn new(fresh: T, count: usize, dense_max: usize) -> Self {
        let all = count <= dense_max;
        let dense = if all {
            vec![fresh.clone(); count]
        } else {
            Vec::new()
        };
        Instances {
            count,
            all,
            fresh,
            dense,
            sparse: BTreeMap::new(),
        }
    }

    /// Instance `i` (< count), made fresh on first use.
    #[inline]
    fn get_mut(&mut self, i: usize) -> &mut T {
        if self.all {
            &mut self.dense[i]
        } else {
            let fresh = &self.fresh;
            self.sparse.entry(i).or_insert_with(|| fresh.clone())
        }
    }

    /// Every instance that may differ from a fresh one, in index order.
    fn touched(&self) -> impl Iterator<Item = &T> {
        self.dense.iter().chain(self.sparse.values())
    }

    /// Instances still fresh that [`Instances::touched`] leaves out.
    fn untouched(&self) -> usize {
        self.count - self.dense.len() - self.sparse.len()
    }
}

/// A logical request in flight.
#[derive(Debug, Clone, Copy)]
struct Request {
    client: u32,
    start: SimTime,
    /// start + deadline, or never.
    deadline: SimTime,
    /// Attempts sent so far.
    attempts: u32,
    /// The token of the attempt the client awaits, or [`NO_TOKEN`].
    live_token: u32,
    /// The token the next attempt of this slot gets (never reset, so stale events stay stale
    /// when the slot is reused).
    next_token: u32,
    /// When the client gives up on the awaited attempt.
    abandon_at: SimTime,
    /// Every attempt of a bad request ends `permanent`.
    permanent: bool,
    /// Last decorrelated-jitter sleep.
    decorrelated: SimDuration,
    /// When the awaited attempt was sent (a breaker's slow-call rule).
    sent: SimTime,
    /// What the last retry took from a retry quota.
    last_retry_cost: f64,
}

/// Runs replication `replication` (0-based) of `scenario` with master seed `seed`.
pub fn run(scenario: &Scenario, seed: u64, replication: u64) -> RunResult {
    run_with(scenario, seed, replication, DENSE_INSTANCES)
}

/// [`run`], keeping per-client policy instances in a vector up to `dense_max` clients.
fn run_with(scenario: &Scenario, seed: u64, replication: u64, dense_max: usize) -> RunResult {
    let mut sim = Sim::new(scenario, seed, replication, dense_max);
    let truncated = sim.run();
    sim.finish(truncated)
}

/// The server of a run.
enum Server {
    Queue(QueueServer),
    Occ(OccServer),
}

impl Server {
    /// (waiting, in service), for the time series.
    fn load(&self) -> (u32, u32) {
        match self {
            Server::Queue(q) => (q.queue_len(), q.in_service()),
            Server::Occ(_) => (0, 0),
        }
    }
}

struct Sim<'a> {
    sc: &'a Scenario,
    queue: EventQueue<Event>,
    rng: Streams,
    requests: Vec<Request>,
    free: Vec<u32>,
    in_flight: u64,
    server: Server,
    rec: Recorder,
    /// Requests each closed-workload client still has to issue (`u64::MAX`: until duration).
    remaining: Vec<u64>,
    end_of_arrivals: SimTime,
    /// Retry budgets: none, one shared, or one per client.
    budgets: Option<Instances<Budget>>,
    /// Circuit breakers: none, one shared, or one per client.
    breakers: Option<Instances<Breaker>>,
    /// The server's admission rate limit.
    limiter: Option<RateLimiter>,
    /// Set when the server's backlog passes the limit; the loop stops after the event.
    overflow: Option<Truncation>,
}

impl<'a> Sim<'a> {
    fn new(sc: &'a Scenario, seed: u64, replication: u64, dense_max: usize) -> Self {
        let server = match &sc.server().kind {
            ServerKind::Queue(config) => Server::Queue(QueueServer::with_faults(
                config.clone(),
                sc.server().faults.clone(),
            )),
            ServerKind::Occ => Server::Occ(OccServer::new()),
        };
        let clients = sc.clients.count;
        let budgets = sc
            .policy
            .budget
            .map(|b| Instances::new(Budget::new(b.kind), b.scope.instances(clients), dense_max));
        let breakers = sc
            .policy
            .breaker
            .map(|b| Instances::new(Breaker::new(b), b.scope.instances(clients), dense_max));
        let mut sim = Sim {
            sc,
            queue: EventQueue::new(),
            rng: Streams::new(seed, replication),
            requests: Vec::new(),
            free: Vec::new(),
            in_flight: 0,
            server,
            rec: Recorder::new(sc.bucket),
            remaining: Vec::new(),
            end_of_arrivals: SimTime::ZERO + sc.duration,
            budgets,
            breakers,
            limiter: sc.server().rate_limit.map(RateLimiter::new),
            overflow: None,
        };
        for edge in sc.server().faults.concurrency_edges() {
            if edge > SimTime::ZERO {
                sim.queue.schedule(edge, Event::FaultEdge);
            }
        }
        match &sc.clients.workload {
            Workload::Open(profile) => {
                if let Some(t) = profile.next_arrival(SimTime::ZERO, &mut sim.rng.arrivals)
                    && t < sim.end_of_arrivals
                {
                    sim.queue.schedule(t, Event::Arrival);
                }
            }
            Workload::Closed(closed) => {
                let k = closed.requests_per_client.unwrap_or(u64::MAX);
                sim.remaining = vec![k; sc.clients.count as usize];
                for client in 0..sc.clients.count {
                    let at = SimTime::ZERO + closed.start.sample(&mut sim.rng.arrivals);
                    sim.queue.schedule(at, Event::ClientReady { client });
                }
            }
        }
        sim
    }

    /// The event loop. Returns why it stopped early, if it did.
    fn run(&mut self) -> Option<Truncation> {
        let max_time = self.sc.max_time.map(|d| SimTime::ZERO + d);
        let max_events = self.sc.limits.max_events;
        // Timers of answered attempts stay queued until they fire; with long timeouts they
        // would pile up with finished work. When the queue doubles, they are swept out.
        let mut compact_at = COMPACT_MIN;
        loop {
            // The time of the last event handled, for a run that reaches the end of time.
            let last = self.queue.now();
            let Some((now, event)) = self.queue.pop() else {
                break;
            };
            let pending = self.queue.len();
            if pending > compact_at {
                let requests = &self.requests;
                self.queue.retain(|e| match *e {
                    Event::AttemptTimer { slot, token } => {
                        requests[slot as usize].live_token == token
                    }
                    _ => true,
                });
                compact_at = (2 * self.queue.len()).max(COMPACT_MIN);
            }
            self.rec.counters.max_pending = self.rec.counters.max_pending.max(pending as u64);
            if max_time.is_some_and(|m| now > m) {
                return Some(Truncation::MaxTime {
                    at: self.sc.max_time.expect("checked"),
                    in_flight: self.in_flight,
                });
            }
            if now == SimTime::NEVER {
                // An instant past the end of simulated time: nothing happens there. A timer
                // of an attempt already answered would have changed nothing; anything else
                // ends the run.
                if let Event::AttemptTimer { slot, token } = event
                    && self.requests[slot as usize].live_token != token
                {
                    continue;
                }
                return Some(Truncation::EndOfTime {
                    at: last,
                    in_flight: self.in_flight,
                });
            }
            if self.queue.events_processed() > max_events {
                return Some(Truncation::MaxEvents {
                    limit: max_events,
                    at: now,
                });
            }
            if now >= self.rec.series.next_boundary() {
                let gauges = self.gauges(now);
                self.rec.series.tick(now, || gauges);
            }
            match event {
                Event::Arrival => {
                    let Workload::Open(profile) = &self.sc.clients.workload else {
                        unreachable!("arrivals belong to open workloads")
                    };
                    if let Some(next) = profile.next_arrival(now, &mut self.rng.arrivals)
                        && next < self.end_of_arrivals
                    {
                        self.queue.schedule(next, Event::Arrival);
                    }
                    let client = self.rng.arrivals.random_range(0..self.sc.clients.count);
                    if let Some(t) = self.start_request(client, now) {
                        return Some(t);
                    }
                }
                Event::ClientReady { client } => {
                    if now < self.end_of_arrivals
                        && let Some(t) = self.start_request(client, now)
                    {
                        return Some(t);
                    }
                }
                Event::RetryDue { slot } => {
                    if now >= self.requests[slot as usize].deadline {
                        self.end_request(slot, Outcome::DeadlineExceeded, now);
                    } else {
                        self.send_attempt(slot, now);
                    }
                }
                Event::ServerArrival { slot, token } => self.server_arrival(slot, token, now),
                Event::ServiceDone { slot, token } => self.service_done(slot, token, now),
                Event::OccWrite {
                    slot,
                    token,
                    version,
                } => self.occ_write(slot, token, version, now),
                Event::Reply {
                    slot,
                    token,
                    outcome,
                } => {
                    let req = &mut self.requests[slot as usize];
                    if req.live_token == token {
                        req.live_token = NO_TOKEN;
                        self.attempt_failed_or_succeeded(slot, outcome, now);
                    } else {
                        self.rec.counters.late_replies += 1;
                    }
                }
                Event::AttemptTimer { slot, token } => {
                    let req = &mut self.requests[slot as usize];
                    if req.live_token == token {
                        req.live_token = NO_TOKEN;
                        if now >= req.deadline {
                            self.rec.attempt_ended(Outcome::Timeout);
                            self.learn(slot, Outcome::Timeout, now);
                            self.end_request(slot, Outcome::DeadlineExceeded, now);
                        } else {
                            self.attempt_failed_or_succeeded(slot, Outcome::Timeout, now);
                        }
                    }
                }
                Event::FaultEdge => {
                    // Concurrency changes at a window edge; nothing arrives, so the backlog
                    // cannot grow here.
                    if let Server::Queue(server) = &mut self.server {
                        for (job, service) in server.refresh_workers(now, &mut self.rng.service) {
                            self.queue.schedule(
                                now + service,
                                Event::ServiceDone {
                                    slot: job.slot,
                                    token: job.token,
                                },
                            );
                        }
                    }
                }
            }
            if self.overflow.is_some() {
                return self.overflow.take();
            }
        }
        None
    }

    /// Starts a logical request for `client`. Returns a truncation if the in-flight limit is
    /// exceeded.
    fn start_request(&mut self, client: u32, now: SimTime) -> Option<Truncation> {
        if self.in_flight >= self.sc.limits.max_in_flight {
            return Some(Truncation::MaxInFlight {
                limit: self.sc.limits.max_in_flight,
                at: now,
            });
        }
        // Drawn for every request, even at rate 0, so that changing the rate changes nothing
        // else about the traffic (common random numbers).
        let permanent = self.rng.arrivals.random::<f64>() < self.sc.server().permanent_error_rate;
        let deadline = self.sc.policy.deadline.map_or(SimTime::NEVER, |d| now + d);
        let fresh = Request {
            client,
            start: now,
            deadline,
            attempts: 0,
            live_token: NO_TOKEN,
            next_token: 1,
            abandon_at: SimTime::NEVER,
            permanent,
            decorrelated: SimDuration::ZERO,
            sent: now,
            last_retry_cost: 0.0,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                let old = &mut self.requests[slot as usize];
                *old = Request {
                    next_token: old.next_token,
                    ..fresh
                };
                slot
            }
            None => {
                self.requests.push(fresh);
                (self.requests.len() - 1) as u32
            }
        };
        self.in_flight += 1;
        self.rec.counters.requests += 1;
        self.rec.series.add(Column::Started);
        if let (Some(b), Some(budgets)) = (self.sc.policy.budget, &mut self.budgets) {
            budgets.get_mut(b.scope.index(client)).request_started(now);
        }
        self.rec.counters.max_in_flight = self.rec.counters.max_in_flight.max(self.in_flight);
        self.send_attempt(slot, now);
        None
    }

    /// The client sends the next attempt of request `slot` now, unless its circuit breaker
    /// refuses it, which ends the request.
    fn send_attempt(&mut self, slot: u32, now: SimTime) {
        if let (Some(b), Some(breakers)) = (self.sc.policy.breaker, &mut self.breakers) {
            let req = &self.requests[slot as usize];
            let breaker = breakers.get_mut(b.scope.index(req.client));
            if !breaker.allow(now, req.attempts > 0) {
                self.end_request(slot, Outcome::BreakerOpen, now);
                return;
            }
        }
        let timeout = self.sc.policy.timeout;
        // With a timeout or a deadline the client keeps a timer, even one that lands past the
        // end of simulated time (at NEVER, ending the run if the attempt is still awaited).
        let timed = timeout.is_some() || self.sc.policy.deadline.is_some();
        let req = &mut self.requests[slot as usize];
        req.attempts += 1;
        req.sent = now;
        let token = req.next_token;
        req.next_token = req.next_token.wrapping_add(1).max(1);
        req.live_token = token;
        req.abandon_at = timeout
            .map_or(SimTime::NEVER, |t| now + t)
            .min(req.deadline);
        let abandon_at = req.abandon_at;
        if req.attempts == 1 {
            self.rec.counters.first_attempts += 1;
            self.rec.series.add(Column::FirstAttempts);
        } else {
            self.rec.counters.retries += 1;
            self.rec.series.add(Column::Retries);
        }
        let hop = self.sc.network.latency.sample(&mut self.rng.network);
        self.queue
            .schedule(now + hop, Event::ServerArrival { slot, token });
        if timed {
            self.queue
                .schedule_timer(abandon_at, Event::AttemptTimer { slot, token });
        }
    }

    fn server_arrival(&mut self, slot: u32, token: u32, now: SimTime) {
        let server = match &mut self.server {
            Server::Queue(q) => q,
            Server::Occ(row) => {
                // The read is instant and is not work. The version travels back and the
                // client writes at once, unless it gave up before the version arrived: its
                // timer is already scheduled, so whether it is still waiting then is known
                // now, and the two hops need no event in between.
                let version = row.read();
                let back = self.sc.network.latency.sample(&mut self.rng.network);
                let req = &self.requests[slot as usize];
                let live = req.live_token == token;
                if live && now + back < req.abandon_at {
                    let forth = self.sc.network.latency.sample(&mut self.rng.network);
                    self.queue.schedule(
                        now + back + forth,
                        Event::OccWrite {
                            slot,
                            token,
                            version,
                        },
                    );
                } else if live && req.abandon_at == SimTime::NEVER {
                    // The version would come back after the end of simulated time with the
                    // client still waiting for it: the run ends there.
                    self.queue.schedule(
                        SimTime::NEVER,
                        Event::OccWrite {
                            slot,
                            token,
                            version,
                        },
                    );
                } else {
                    self.rec.counters.late_replies += 1;
                }
                return;
            }
        };
        self.rec.counters.attempts += 1;
        self.rec.series.add(Column::Attempts);
        match self.sc.server().faults.outage(now) {
            Some(Outage::Reject) => {
                self.rec.counters.outage_rejected += 1;
                self.reply(slot, token, Outcome::Error, now);
                return;
            }
            Some(Outage::Drop) => {
                self.rec.counters.outage_dropped += 1;
                return;
            }
            None => {}
        }
        if let Some(limiter) = &mut self.limiter
            && !limiter.admit(now)
        {
            self.rec.counters.throttled += 1;
            self.reply(slot, token, Outcome::Throttled, now);
            return;
        }
        let req = &self.requests[slot as usize];
        let live = req.live_token == token;
        let abandon_at = if live { req.abandon_at } else { SimTime::ZERO };
        if !live && server.config().drop_expired {
            // Deadline propagation: the server sees at once that nobody waits for this.
            self.rec.counters.expired_dropped += 1;
            return;
        }
        let job = Job {
            slot,
            token,
            abandon_at,
        };
        match server.arrive(job, now, &mut self.rng.service) {
            Admission::Start(service) => {
                self.queue
                    .schedule(now + service, Event::ServiceDone { slot, token });
            }
            Admission::Queued => {
                let held = u64::from(server.queue_len()) + u64::from(server.in_service());
                if held > self.sc.limits.max_in_flight {
                    self.overflow = Some(Truncation::ServerBacklog {
                        limit: self.sc.limits.max_in_flight,
                        at: now,
                    });
                }
            }
            Admission::Rejected => {
                self.rec.counters.rejected += 1;
                self.reply(slot, token, Outcome::Rejected, now);
            }
        }
    }

    /// `occ`: a conditional write arrives; it lands even if its client has given up.
    fn occ_write(&mut self, slot: u32, token: u32, version: u32, now: SimTime) {
        let Server::Occ(row) = &mut self.server else {
            unreachable!("writes go to an occ server")
        };
        self.rec.counters.attempts += 1;
        self.rec.series.add(Column::Attempts);
        self.rec.counters.served += 1;
        self.rec.series.add(Column::Served);
        self.rec.counters.last_service_end = now;
        let req = &self.requests[slot as usize];
        let live = req.live_token == token;
        let outcome = if live && req.permanent {
            Outcome::Permanent
        } else if row.write(version) {
            Outcome::Success
        } else {
            Outcome::Conflict
        };
        if live {
            self.reply(slot, token, outcome, now);
        } else {
            self.rec.counters.wasted += 1;
            self.rec.series.add(Column::Wasted);
        }
    }

    fn service_done(&mut self, slot: u32, token: u32, now: SimTime) {
        let Server::Queue(server) = &mut self.server else {
            unreachable!("service belongs to a queue server")
        };
        let error_rate = self
            .sc
            .server()
            .faults
            .error_rate(now)
            .unwrap_or(server.config().error_rate);
        if let Some((next, service)) = server.complete(now, &mut self.rng.service) {
            self.queue.schedule(
                now + service,
                Event::ServiceDone {
                    slot: next.slot,
                    token: next.token,
                },
            );
        }
        self.rec.counters.served += 1;
        self.rec.series.add(Column::Served);
        self.rec.counters.last_service_end = now;
        let req = &self.requests[slot as usize];
        if req.live_token == token {
            let outcome = if req.permanent {
                Outcome::Permanent
            } else {
                if error_rate > 0.0 && self.rng.failures.random::<f64>() < error_rate {
                    Outcome::Error
                } else {
                    Outcome::Success
                }
            };
            self.reply(slot, token, outcome, now);
        } else {
            // The client gave up before the work was done: nobody reads this answer.
            self.rec.counters.wasted += 1;
            self.rec.series.add(Column::Wasted);
        }
    }

    /// The server answers; the answer travels one hop back.
    fn reply(&mut self, slot: u32, token: u32, outcome: Outcome, now: SimTime) {
        let hop = self.sc.network.latency.sample(&mut self.rng.network);
        self.queue.schedule(
            now + hop,
            Event::Reply {
                slot,
                token,
                outcome,
            },
        );
    }

    /// The client's budget and breaker learn the outcome of an attempt of request `slot`.
    /// For the breaker every outcome but success and `permanent` (a 4xx: the server did its
    /// job) is a failure, whatever the retry policy, as for a Resilience4j breaker recording
    /// server errors and timeouts. A budget pays only for outcomes the policy retries, as
    /// gRPC's throttle counts only retryable status codes.
    fn learn(&mut self, slot: u32, outcome: Outcome, now: SimTime) {
        let policy = &self.sc.policy;
        if policy.budget.is_none() && policy.breaker.is_none() {
            return;
        }
        let req = &self.requests[slot as usize];
        if let (Some(b), Some(breakers)) = (policy.breaker, &mut self.breakers) {
            let failed = !matches!(outcome, Outcome::Success | Outcome::Permanent);
            breakers
                .get_mut(b.scope.index(req.client))
                .record(now, failed, now - req.sent);
        }
        if let (Some(b), Some(budgets)) = (policy.budget, &mut self.budgets) {
            let budget = budgets.get_mut(b.scope.index(req.client));
            if outcome == Outcome::Success {
                budget.attempt_succeeded((req.attempts > 1).then_some(req.last_retry_cost));
            } else if policy.retry.retry_on.contains(outcome) {
                budget.attempt_failed();
            }
        }
    }

    /// The client learned the outcome of its attempt: finish, or schedule the retry.
    fn attempt_failed_or_succeeded(&mut self, slot: u32, outcome: Outcome, now: SimTime) {
        self.rec.attempt_ended(outcome);
        self.learn(slot, outcome, now);
        let retry = &self.sc.policy.retry;
        let req = &mut self.requests[slot as usize];
        let exhausted = retry.max_attempts.is_some_and(|m| req.attempts >= m);
        if outcome == Outcome::Success || !retry.retry_on.contains(outcome) || exhausted {
            self.end_request(slot, outcome, now);
            return;
        }
        let mut delay =
            retry
                .backoff
                .delay(req.attempts, &mut req.decorrelated, &mut self.rng.jitter);
        if outcome == Outcome::Throttled
            && retry.retry_after == RetryAfter::Honor
            && let Some(after) = self.sc.server().rate_limit.and_then(|r| r.retry_after)
        {
            delay = delay.max(after);
        }
        let due = now + delay;
        if due >= req.deadline {
            // The retry would start after the deadline: the request ends at the deadline.
            let deadline = req.deadline;
            self.queue.schedule(deadline, Event::RetryDue { slot });
            return;
        }
        // The budget is asked when the retry is decided, before the backoff (as gRPC and the
        // AWS SDKs do), and not for a retry the deadline would cancel anyway.
        if let (Some(b), Some(budgets)) = (self.sc.policy.budget, &mut self.budgets) {
            let budget = budgets.get_mut(b.scope.index(req.client));
            match budget.try_retry(now, outcome == Outcome::Timeout) {
                Some(cost) => req.last_retry_cost = cost,
                None => {
                    self.rec.counters.budget_denials += 1;
                    self.end_request(slot, Outcome::BudgetExhausted, now);
                    return;
                }
            }
        }
        if delay == SimDuration::ZERO {
            self.send_attempt(slot, now);
        } else {
            // The retry is sent from its own event: the attempt then enters the event list
            // when it is really sent, so ties with other events at the same instant resolve
            // in the order things happen, and a run cut off at max_time never counts it.
            self.queue.schedule(due, Event::RetryDue { slot });
        }
    }

    fn end_request(&mut self, slot: u32, outcome: Outcome, now: SimTime) {
        let req = &mut self.requests[slot as usize];
        req.live_token = NO_TOKEN;
        let (client, start) = (req.client, req.start);
        self.rec.request_ended(outcome, now - start, now);
        self.free.push(slot);
        self.in_flight -= 1;
        if let Workload::Closed(closed) = &self.sc.clients.workload {
            let left = &mut self.remaining[client as usize];
            *left = left.saturating_sub(1);
            if *left > 0 {
                let think = closed.think_time.sample(&mut self.rng.arrivals);
                self.queue
                    .schedule(now + think, Event::ClientReady { client });
            }
        }
    }

    /// The states the time series samples at the end of a bucket.
    fn gauges(&self, now: SimTime) -> Gauges {
        let (queue_len, in_service) = self.server.load();
        let budget_level_ppm = match &self.budgets {
            Some(budgets) if budgets.count > 0 => {
                let mut total: f64 = budgets.touched().map(|b| b.level(now)).sum();
                let untouched = budgets.untouched();
                if untouched > 0 {
                    total += untouched as f64 * budgets.fresh.level(now);
                }
                (total / budgets.count as f64 * 1e6).round() as u32
            }
            _ => 0,
        };
        // A fresh breaker is closed.
        let breakers_open = self.breakers.as_ref().map_or(0, |breakers| {
            breakers.touched().filter(|b| b.is_open(now)).count()
        });
        Gauges {
            queue_len,
            in_service,
            in_flight: self.in_flight.min(u64::from(u32::MAX)) as u32,
            breakers_open: breakers_open.min(u32::MAX as usize) as u32,
            budget_level_ppm,
        }
    }

    fn finish(mut self, truncated: Option<Truncation>) -> RunResult {
        let c = &mut self.rec.counters;
        c.events = self.queue.events_processed();
        // A run cut off at max_time ends there, not at the first event it did not process.
        c.end_time = match (&truncated, self.sc.max_time) {
            (Some(Truncation::EndOfTime { at, .. }), _) => *at,
            (_, Some(m)) => self.queue.now().min(SimTime::ZERO + m),
            (_, None) => self.queue.now(),
        };
        // A run that stopped at a limit with nothing in flight lost nothing: not truncated.
        let truncated = match truncated {
            Some(Truncation::MaxTime { in_flight: 0, .. }) => None,
            t => t,
        };
        if let Server::Queue(server) = &self.server {
            c.busy_nanos = server.busy_nanos;
            c.max_queue = u64::from(server.max_queue);
            c.max_in_service = u64::from(server.max_in_service);
            c.expired_dropped += server.expired_dropped;
            // Utilization's horizon: until the server drained, or the whole run if it was
            // cut off or served nothing.
            let horizon = if truncated.is_none() && c.last_service_end > SimTime::ZERO {
                c.last_service_end
            } else {
                c.last_service_end.max(c.end_time)
            };
            c.capacity_nanos = server.capacity_nanos(horizon, server.max_in_service);
        }
        let end = c.end_time;
        // A fresh breaker never refused, changed state or opened.
        c.breakers = self.breakers.as_ref().map_or(0, |b| b.count as u64);
        for b in self.breakers.iter().flat_map(Instances::touched) {
            c.breaker_refusals += b.refusals;
            c.breaker_transitions += b.transitions;
            c.breaker_openings += b.openings;
            c.breaker_open_nanos += b.time_open(end);
        }
        let gauges = self.gauges(end);
        self.rec.series.close(gauges);
        self.rec.finish(truncated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever bounds the scenario loader puts on durations: an instant past the end of
    /// simulated time ends the run truncated, never as an event at "never".
    #[test]
    fn an_instant_past_the_end_of_time_truncates_the_run() {
        let text = r#"{"name": "t", "duration": "1s",
          "clients": {"count": 1, "workload": {"closed": {"requests_per_client": 1}}},
          "server": {"concurrency": 1, "error_rate": 1, "service_time": {"constant": "1ms"}},
          "policy": {"retry": {"max_attempts": 5, "retry_on": ["error"]}}}"#;
        let e = crate::scenario::load_str(text, "t", &Default::default()).unwrap();
        let mut sc = e.points[0].variants[0].scenario.clone();
        let year = SimDuration::from_secs(365 * 86_400);
        sc.policy.retry.backoff = crate::model::Backoff::Exponential {
            base: year,
            multiplier: 1000.0,
            cap: SimDuration(u64::MAX),
            jitter: crate::model::Jitter::None,
        };
        let r = run(&sc, 1, 0);
        // Retries after 1 and 1000 years: the second lies past the end.
        assert_eq!(r.counters.attempts, 2);
        assert!(matches!(
            r.truncated,
            Some(Truncation::EndOfTime { in_flight: 1, at }) if at.as_nanos() > year.as_nanos()
        ));
        assert_eq!(r.ended(), 0);
    }

    /// Per-client budgets and breakers kept for the clients that started a request only run
    /// exactly like a vector of all of them: same counts, same outcomes, the same mean budget
    /// level to within rounding (it is summed in another order).
    #[test]
    fn sparse_policy_instances_run_like_a_vector() {
        for budget in ["token_bucket", "retry_quota", "ratio"] {
            let kind = match budget {
                "token_bucket" => r#""token_bucket": {"max_tokens": 4, "token_ratio": 0.5}"#,
                "retry_quota" => r#""retry_quota": {"initial": 10, "retry_cost": 5}"#,
                _ => r#""ratio": {"percent": 0.1, "min_per_s": 1, "window": "1s"}"#,
            };
            let text = format!(
                r#"{{"name": "t", "duration": "20s",
              "clients": {{"count": 300, "workload": {{"open": {{"rate_per_s": 40}}}}}},
              "server": {{"concurrency": 1, "error_rate": 0.4, "service_time": {{"exponential": {{"mean": "20ms"}}}}}},
              "policy": {{"timeout": "50ms", "retry": {{"max_attempts": 4, "retry_on": ["error", "timeout"]}},
                "budget": {{{kind}}},
                "breaker": {{"failure_rate_threshold": 0.5, "window": {{"count": 4}}, "minimum_calls": 2, "open_duration": "500ms"}}}},
              "metrics": {{"bucket": "100ms"}}}}"#
            );
            let e = crate::scenario::load_str(&text, "t", &Default::default()).unwrap();
            let sc = &e.points[0].variants[0].scenario;
            let dense = run_with(sc, 1, 0, DENSE_INSTANCES);
            let sparse = run_with(sc, 1, 0, 0);
            assert!(
                dense.counters.breaker_refusals > 0,
                "{budget}: breakers act"
            );
            assert!(dense.counters.budget_denials > 0, "{budget}: budgets act");
            assert_eq!(dense.counters, sparse.counters, "{budget}");
            assert_eq!(dense.metrics(), sparse.metrics(), "{budget}");
            let level = crate::metrics::Column::BudgetLevel as usize;
            for (d, s) in dense.series.rows().iter().zip(sparse.series.rows()) {
                assert!(d[level].abs_diff(s[level]) <= 1, "{budget}");
                let (mut d, mut s) = (*d, *s);
                d[level] = 0;
                s[level] = 0;
                assert_eq!(d, s, "{budget}");
            }
        }
    }

    #[test]
    fn event_stays_small() {
        // The event queue moves events around constantly; keep them compact.
        assert!(std::mem::size_of::<Event>() <= 16);
    }
}
