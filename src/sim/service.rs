//! The serving side: attempts arriving at a service, its server (a `queue` of workers or an
//! `occ` row), the work an attempt does after its service time, and the answer.
//!
//! An attempt admitted by a worker takes its service time; then, if its service calls others,
//! it becomes a [`Work`] that makes those calls while holding the worker (one after another,
//! or all at once for `call_mode: parallel`). The worker is released and the answer sent when
//! the work is done: the first call that failed for good decides the outcome, else the
//! service's own error draw, else success (degraded if a fallback answered a call). An answer
//! nobody awaits any more is wasted work.

use rand::RngExt;

use super::features::Features;
use super::{Event, Sim};
use crate::engine::SimTime;
use crate::metrics::{Column, ServiceCounters, TimeSeries, Truncation};
use crate::model::{Admission, Job, Lookup, OccServer, Outage, Outcome, QueueServer, RateLimiter};
use crate::scenario::{Server, ServerKind};

/// What an `occ` write carries when its call keeps its read's instant (`Sim::keep_read`);
/// any other value is a ticket of the row's.
const IN_CALL: u32 = u32::MAX;

/// The server of a service. One per service, so the queue server is kept inline rather
/// than boxed: the hot path reaches it without an indirection.
#[allow(clippy::large_enum_variant)]
enum ServerState {
    Queue(QueueServer),
    Occ(OccServer),
}

/// A service in a run, or one replica of a replicated service (a host): each replica has
/// its own server, rate limit, faults and counts. The first replica of every service is
/// the host of the service's index; a replicated service's others follow every service's
/// first (`Sim::host`), so a run without replicas has one host per service, as before.
pub(super) struct ServiceState {
    server: ServerState,
    /// The admission rate limit.
    limiter: Option<RateLimiter>,
    /// What it did.
    pub(super) counters: ServiceCounters,
    /// Worker time held while waiting on downstream calls, in nanoseconds.
    held_nanos: u128,

    /// Its load over time (call graphs only; a replicated service's is its first
    /// replica's, counting every replica).
    pub series: Option<TimeSeries>,
}

/// What a host is: the service it is a replica of, and the fault windows that strike it.
pub(super) struct Host {
    /// The service, by index in the scenario.
    pub service: u32,
    /// A service's windows, less those naming another replica.
    pub faults: crate::model::Faults,
}

impl Host {
    /// Replica `replica` of service `service` with `server`'s settings.
    pub fn new(server: &Server, service: u32, replica: u32) -> Self {
        Host {
            service,
            faults: if server.pool.replicas > 1 {
                server.faults.for_replica(replica)
            } else {
                server.faults.clone()
            },
        }
    }
}

impl ServiceState {
    /// An idle `host` with `server`'s settings.
    pub fn new(server: &Server, host: &Host, series: Option<TimeSeries>) -> Self {
        ServiceState {
            server: match &server.kind {
                ServerKind::Queue(config) => ServerState::Queue(QueueServer::with_faults(
                    config.clone(),
                    host.faults.clone(),
                )),
                ServerKind::Occ => ServerState::Occ(OccServer::new()),
            },
            limiter: server.rate_limit.map(RateLimiter::new),
            counters: ServiceCounters::default(),
            held_nanos: 0,
            series,
        }
    }

    /// (waiting, holding a worker), for the time series.
    pub fn load(&self) -> (u32, u32) {
        match &self.server {
            ServerState::Queue(q) => (q.queue_len(), q.in_service()),
            ServerState::Occ(_) => (0, 0),
        }
    }

    /// Reads the server's totals into the counters at the end of a run that ended at `end`
    /// (`truncated`: cut off); its series, if it keeps one, closes with its service's `load`
    /// (every replica's).
    pub fn close(&mut self, end: SimTime, truncated: bool, (queue_len, in_service): (u32, u32)) {
        let c = &mut self.counters;
        if let ServerState::Queue(server) = &self.server {
            c.busy_nanos = server.busy_nanos + self.held_nanos;
            c.max_queue = u64::from(server.max_queue);
            c.max_in_service = u64::from(server.max_in_service);
            c.expired_dropped += server.expired_dropped;
            c.cancelled += server.cancelled;
            c.shed += server.shed;
            // Utilization's horizon: until the service drained, or the whole run if it was
            // cut off or served nothing.
            let horizon = if !truncated && c.last_service_end > SimTime::ZERO {
                c.last_service_end
            } else {
                c.last_service_end.max(end)
            };
            c.capacity_nanos = server.capacity_nanos(horizon, server.max_in_service);
        }
        if let Some(series) = &mut self.series {
            series.close(crate::metrics::Gauges {
                queue_len,
                in_service,
                ..Default::default()
            });
        }
    }

    /// The counters and the series, at the end.
    pub fn into_results(self) -> (ServiceCounters, Option<TimeSeries>) {
        (self.counters, self.series)
    }
}

/// An attempt holding a worker of its service while the downstream calls it makes run.
#[derive(Debug, Clone, Copy)]
pub(super) struct Work {
    /// The service doing it.
    pub service: u32,
    /// The call whose attempt it serves, and the attempt's token.
    pub call: u32,
    pub token: u32,
    /// When the caller gives up on the attempt (a propagated deadline's bound).
    pub abandon_at: SimTime,
    /// The route draw for this service, in [0, 1).
    pub route: f64,
    /// Index of the next call to consider (sequential calls).
    pub next: u32,
    /// Calls in flight.
    pub pending: u32,
    /// The first call that failed for good.
    pub failure: Option<Outcome>,
    /// A fallback answered one of its calls.
    pub degraded: bool,
    /// When its service time ended and it began waiting on calls.
    pub held_from: SimTime,
}

/// The route draw of a request with route `route` at service `service`: uniform in [0, 1),
/// the same for every attempt of the request there, unrelated between services.
pub(super) fn route_draw(route: u64, service: u32) -> f64 {
    let mut z = route ^ (u64::from(service) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

impl<F: Features> Sim<'_, F> {
    /// The service host `h` is (a replica of).
    #[inline(always)]
    pub(super) fn spec(&self, h: usize) -> usize {
        if F::REPLICAS {
            self.hosts[h].service as usize
        } else {
            h
        }
    }

    /// The host of replica `k` of service `s`.
    #[inline(always)]
    pub(super) fn host(&self, s: usize, k: u32) -> usize {
        if k == 0 {
            s
        } else {
            (self.replica_base[s] + k - 1) as usize
        }
    }

    /// (waiting, holding a worker) at service `s`, every replica's added up.
    pub(super) fn service_load(&self, s: usize) -> (u32, u32) {
        let (mut queue_len, mut in_service) = self.services[s].load();
        if F::REPLICAS {
            for k in 1..self.sc.services[s].server.pool.replicas {
                let (q, b) = self.services[self.host(s, k)].load();
                queue_len += q;
                in_service += b;
            }
        }
        (queue_len, in_service)
    }

    /// The event of an attempt of call `slot` (`token`) reaching host `host`.
    #[inline(always)]
    pub(super) fn arrival_event(&self, slot: u32, token: u32, host: usize) -> Event {
        if F::REPLICAS && host >= self.sc.services.len() {
            Event::ReplicaArrival {
                slot,
                token,
                host: host as u32,
            }
        } else {
            Event::ServerArrival { slot, token }
        }
    }

    /// The event of host `host` finishing the service time of attempt `token` of `slot`.
    #[inline(always)]
    fn done_event(&self, slot: u32, token: u32, host: usize) -> Event {
        if F::REPLICAS && host >= self.sc.services.len() {
            Event::ReplicaDone {
                slot,
                token,
                host: host as u32,
            }
        } else {
            Event::ServiceDone { slot, token }
        }
    }

    /// The service attempts of call `slot` go to (its first replica's host).
    #[inline(always)]
    pub(super) fn target(&self, slot: u32) -> usize {
        if !(F::GRAPH && self.graph) {
            // One service: every attempt goes to it.
            return 0;
        }
        self.edges[self.calls[slot].edge as usize].to as usize
    }

    /// An attempt reaches its service's replica `host`.
    #[inline]
    pub(super) fn server_arrival(&mut self, slot: u32, token: u32, host: usize, now: SimTime) {
        let s = host;
        if matches!(self.services[s].server, ServerState::Occ(_)) {
            // The read is instant and is not work. The version travels back and the caller
            // writes at once, unless it gave up before the version arrived: its timer's
            // instant is known, so whether it is still waiting then is known now, and the
            // two hops need no event in between.
            let back = self.sc.network.latency.sample(&mut self.rng.network);
            let call = &self.calls[slot];
            let live = call.awaits(token);
            if live && now + back < call.abandon_at {
                let forth = self.sc.network.latency.sample(&mut self.rng.network);
                let read = self.keep_read(s, slot, token, now);
                self.queue
                    .schedule(now + back + forth, Event::OccWrite { slot, token, read });
            } else if live && call.abandon_at == SimTime::NEVER {
                // The version would come back after the end of simulated time with the
                // caller still waiting for it: the run ends there.
                let read = self.keep_read(s, slot, token, now);
                self.queue
                    .schedule(SimTime::NEVER, Event::OccWrite { slot, token, read });
            } else {
                self.rec.counters.late_replies += 1;
                self.attempt_accounted(slot);
            }
            return;
        }
        self.services[s].counters.attempts += 1;
        self.tally(s, Column::Attempts);
        if F::GRAPH && self.graph && self.calls[slot].awaits(token) {
            self.arrived(slot, now);
        }
        let outage = if F::FAULTS {
            self.hosts[s].faults.outage(now)
        } else {
            None
        };
        match outage {
            Some(Outage::Reject) => {
                self.services[s].counters.outage_rejected += 1;
                self.reply(slot, token, Outcome::Error, now);
                return;
            }
            Some(Outage::Drop) => {
                self.services[s].counters.outage_dropped += 1;
                self.attempt_accounted(slot);
                return;
            }
            None => {}
        }
        let service = &mut self.services[s];
        if F::FAULTS
            && let Some(limiter) = &mut service.limiter
            && !limiter.admit(now)
        {
            service.counters.throttled += 1;
            self.reply(slot, token, Outcome::Throttled, now);
            return;
        }
        if self.discarded_at_arrival(s, slot, token) {
            return;
        }
        let edge = self.calls[slot].edge as usize;
        if F::POLICIES
            && let Some(keys) = &mut self.edges[edge].keys
        {
            let key = self.calls[slot].id;
            let lookup = keys.lookup(key, (slot, token), now);
            if keys.held() > self.sc.limits.max_in_flight {
                self.overflow = Some(Truncation::KeysHeld {
                    limit: self.sc.limits.max_in_flight,
                    at: now,
                });
            }
            match lookup {
                Lookup::Execute => {}
                // It waits at the service for the result of the attempt executing its call.
                Lookup::Wait => return,
                Lookup::Remembered(outcome) => {
                    self.replay(s, slot, token, outcome, now);
                    return;
                }
            }
        }
        if !self.enqueue(s, slot, token, now) {
            self.key_released(s, slot, now);
        }
    }

    /// In a call graph, the attempt of call `slot` its caller awaits reached its service at
    /// `now`.
    fn arrived(&mut self, slot: u32, now: SimTime) {
        let slot = slot as usize;
        if self.arrivals.len() <= slot {
            self.arrivals.resize(slot + 1, SimTime::ZERO);
        }
        self.arrivals[slot] = now;
    }

    /// `occ`: attempt `token` of call `slot` leaves its caller at `sent` on an edge that folds
    /// reads (`Edge::folds_reads`), with no timer. Nothing but an answer ends the caller's
    /// wait, so it is still waiting when the version comes back and writes at once: the read
    /// needs no event, and the write lands three hops after `sent`, carrying its read's
    /// instant. Nothing observes the instant the version reaches the caller, so the hop back
    /// and the write's hop are drawn as one sum (`Dist::sample_pair`).
    #[inline(always)]
    pub(super) fn occ_send(&mut self, slot: u32, token: u32, sent: SimTime) {
        let latency = &self.sc.network.latency;
        let read_at = sent + latency.sample(&mut self.rng.network);
        let trip = latency.sample_pair(&mut self.rng.network);
        let s = self.target(slot);
        let read = self.keep_read(s, slot, token, read_at);
        self.queue
            .schedule(read_at + trip, Event::OccWrite { slot, token, read });
    }

    /// `occ`: keeps the instant `at` of attempt `token`'s read of call `slot` for its write,
    /// and returns what the write carries. The call keeps it when it keeps no other (one
    /// write in flight per call is the rule: a second needs an attempt abandoned after its
    /// read), and the write carries [`IN_CALL`]; otherwise the row of service `s` keeps it
    /// under a ticket, which the write carries.
    #[inline(always)]
    fn keep_read(&mut self, s: usize, slot: u32, token: u32, at: SimTime) -> u32 {
        let call = &mut self.calls[slot];
        if call.read_token == super::NO_TOKEN {
            call.read_token = token;
            call.read_at = at;
            return IN_CALL;
        }
        let ServerState::Occ(row) = &mut self.services[s].server else {
            unreachable!("reads go to an occ service")
        };
        row.read(at)
    }

    /// `occ`: the instant of the read whose write for call `slot` carries `read` (see
    /// [`Sim::keep_read`]); the place that kept it is free again.
    #[inline(always)]
    fn take_read(&mut self, s: usize, slot: u32, read: u32) -> SimTime {
        if read == IN_CALL {
            let call = &mut self.calls[slot];
            call.read_token = super::NO_TOKEN;
            return call.read_at;
        }
        let ServerState::Occ(row) = &mut self.services[s].server else {
            unreachable!("writes go to an occ service")
        };
        row.take_read(read)
    }

    /// Whether service `s` discards attempt `token` of call `slot` as it arrives: its caller
    /// cancelled it, or, with `drop_expired`, no longer waits for it.
    #[inline(always)]
    fn discarded_at_arrival(&mut self, s: usize, slot: u32, token: u32) -> bool {
        let call = &self.calls[slot];
        if call.awaits(token) {
            return false;
        }
        if call.cancelled == token {
            self.services[s].counters.cancelled += 1;
        } else if matches!(
            &self.sc.services[self.spec(s)].server.kind,
            ServerKind::Queue(q) if q.drop_expired
        ) {
            // The service sees at once that nobody waits for this.
            self.services[s].counters.expired_dropped += 1;
        } else {
            return false;
        }
        self.attempt_accounted(slot);
        true
    }

    /// A server holds more than `limits.max_in_flight` attempts: the run stops.
    #[cold]
    fn server_backlog(&mut self, now: SimTime) {
        self.overflow = Some(Truncation::ServerBacklog {
            limit: self.sc.limits.max_in_flight,
            at: now,
        });
    }

    /// Attempt `token` of call `slot` enters the server of queue service `s`: it starts, waits
    /// or is rejected (answered `rejected`). Returns whether the server took it.
    #[inline(always)]
    fn enqueue(&mut self, s: usize, slot: u32, token: u32, now: SimTime) -> bool {
        let call = &self.calls[slot];
        let abandon_at = if call.awaits(token) {
            call.abandon_at
        } else {
            SimTime::ZERO
        };
        let service = &mut self.services[s];
        let ServerState::Queue(server) = &mut service.server else {
            unreachable!("occ services return above")
        };
        let job = Job {
            slot,
            token,
            abandon_at,
        };
        match server.arrive(job, now, &mut self.rng.service) {
            Admission::Start(service) => {
                // Without a worker limit, abandoned work piles up in service instead.
                if u64::from(server.in_service()) > self.sc.limits.max_in_flight {
                    self.server_backlog(now);
                }
                let done = self.done_event(slot, token, s);
                self.queue.schedule(now + service, done);
            }
            Admission::Queued => {
                let held = u64::from(server.queue_len()) + u64::from(server.in_service());
                if held > self.sc.limits.max_in_flight {
                    self.server_backlog(now);
                }
            }
            Admission::Rejected => {
                service.counters.rejected += 1;
                self.reply(slot, token, Outcome::Rejected, now);
                return false;
            }
        }
        true
    }

    /// Service `s` answers attempt `token` of call `slot` from its key memory with
    /// `outcome`, after the memory's cost, without executing it.
    fn replay(&mut self, s: usize, slot: u32, token: u32, outcome: Outcome, now: SimTime) {
        let edge = self.calls[slot].edge as usize;
        let cost = self.edges[edge]
            .policies
            .policy
            .idempotency_key
            .map_or(crate::engine::SimDuration::ZERO, |k| k.cost);
        self.services[s].counters.replayed += 1;
        self.reply(slot, token, outcome, now + cost);
    }

    /// The attempt of call `slot` that held its idempotency key at service `s` was
    /// discarded without executing: the first repeat waiting for it executes in its place.
    /// Does nothing for a call without keys (the common case, checked inline).
    #[inline(always)]
    fn key_released(&mut self, s: usize, slot: u32, now: SimTime) {
        let edge = self.calls[slot].edge as usize;
        if F::POLICIES && self.edges[edge].keys.is_some() {
            self.hand_key_over(s, slot, edge, now);
        }
    }

    /// [`Self::key_released`] for a call with keys.
    #[inline(never)]
    fn hand_key_over(&mut self, s: usize, slot: u32, edge: usize, now: SimTime) {
        let key = self.calls[slot].id;
        loop {
            let Some(keys) = &mut self.edges[edge].keys else {
                return;
            };
            let Some((next, token)) = keys.abandoned(key) else {
                return;
            };
            if !self.discarded_at_arrival(s, next, token) && self.enqueue(s, next, token, now) {
                return;
            }
        }
    }

    /// Service `s` executed an attempt of call `slot` (of an edge that tracks executions),
    /// answering `outcome`: a non-idempotent call's executions after its first are
    /// duplicates; a call with keys is remembered, and the repeats waiting for it are
    /// answered. A bad request refused as `permanent` is not executed. Returns whether a
    /// repeat still awaited takes this execution's answer.
    fn executed(&mut self, s: usize, slot: u32, outcome: Outcome, now: SimTime) -> bool {
        let call = &self.calls[slot];
        if call.permanent {
            self.key_released(s, slot, now);
            return false;
        }
        let edge = call.edge as usize;
        let logical = if call.hedge_of == super::NONE {
            slot
        } else {
            call.hedge_of
        };
        if !self.edges[edge].policies.policy.idempotent {
            let l = &mut self.calls[logical];
            l.executions += 1;
            let c = &mut self.services[s].counters;
            if l.executions >= 2 {
                c.duplicates += 1;
            }
            if l.executions == 2 {
                c.duplicate_calls += 1;
            }
        }
        let key = self.calls[slot].id;
        let mut taken = false;
        if let Some(keys) = &mut self.edges[edge].keys {
            for (waiter, token) in keys.executed(key, outcome, now) {
                taken |= self.calls[waiter].awaits(token);
                self.replay(s, waiter, token, outcome, now);
            }
        }
        taken
    }

    /// `occ`: a conditional write arrives; it lands even if its caller has given up.
    #[inline]
    pub(super) fn occ_write(&mut self, slot: u32, token: u32, read: u32, now: SimTime) {
        let s = self.target(slot);
        let read_at = self.take_read(s, slot, read);
        let ServerState::Occ(row) = &mut self.services[s].server else {
            unreachable!("writes go to an occ service")
        };
        let call = &self.calls[slot];
        let live = call.awaits(token);
        // A bad request is refused without writing.
        let bad = live && call.permanent;
        let won = !bad && row.write(read_at, now);
        let c = &mut self.services[s].counters;
        c.attempts += 1;
        c.served += 1;
        c.last_service_end = now;
        self.tally_pair(s, Column::Attempts, Column::Served);
        if live {
            let outcome = if bad {
                Outcome::Permanent
            } else if won {
                Outcome::Success
            } else {
                Outcome::Conflict
            };
            if outcome == Outcome::Success {
                self.services[s].counters.useful += 1;
            }
            self.reply(slot, token, outcome, now);
        } else {
            self.services[s].counters.wasted += 1;
            self.tally(s, Column::Wasted);
            self.attempt_accounted(slot);
        }
    }

    /// A service's replica `host` finishes the service time of attempt `token` of call
    /// `slot`: it answers, or begins the work of its downstream calls (and counts the
    /// attempt served when that work is done).
    #[inline]
    pub(super) fn service_done(&mut self, slot: u32, token: u32, host: usize, now: SimTime) {
        let s = host;
        let service = self.spec(s);
        let spec = &self.sc.services[service];
        if !(F::GRAPH && self.graph) || spec.calls.is_empty() || self.calls[slot].permanent {
            // A bad request is refused after its service time, before any call.
            self.served(s, now);
            self.release_worker(s, now);
            self.answer(s, slot, token, None, false, now);
            return;
        }
        let call = &self.calls[slot];
        let work = Work {
            service: s as u32,
            call: slot,
            token,
            abandon_at: if call.awaits(token) {
                call.abandon_at
            } else {
                SimTime::ZERO
            },
            route: route_draw(call.route, service as u32),
            next: 0,
            pending: 0,
            failure: None,
            degraded: false,
            held_from: now,
        };
        let w = match self.free_works.pop() {
            Some(w) => {
                self.works[w as usize] = work;
                w
            }
            None => {
                self.works.push(work);
                (self.works.len() - 1) as u32
            }
        };
        if spec.parallel {
            if self.drop_expired_work(w, now) {
                return;
            }
            // The guard keeps the work open while calls that end at once report back.
            self.works[w as usize].pending = 1;
            let first = self.first_edge[service];
            for i in 0..spec.calls.len() as u32 {
                if self.routed(w, first + i) {
                    self.works[w as usize].pending += 1;
                    self.start_call(w, first + i, now);
                }
            }
            self.child_ended(w, Outcome::Success, now);
        } else {
            self.next_call(w, now);
        }
    }

    /// Service `s` finished an attempt at `now` (its service time, and the calls it made).
    #[inline(always)]
    fn served(&mut self, s: usize, now: SimTime) {
        let c = &mut self.services[s].counters;
        c.served += 1;
        c.last_service_end = now;
        self.tally(s, Column::Served);
    }

    /// Whether work `w` makes the call on edge `edge` (its route draw falls in the call's
    /// slice, or the call is made by every attempt).
    #[inline]
    fn routed(&self, w: u32, edge: u32) -> bool {
        match self.edges[edge as usize].route {
            None => true,
            Some((lo, hi)) => {
                let u = self.works[w as usize].route;
                lo <= u && u < hi
            }
        }
    }

    /// With `drop_expired`, work `w` whose caller no longer waits is discarded: its worker
    /// is released, nothing more is called and nothing answered; it counts as dropped
    /// expired (its service time counts in the utilization). Returns whether it was
    /// discarded.
    fn drop_expired_work(&mut self, w: u32, now: SimTime) -> bool {
        let work = self.works[w as usize];
        let s = work.service as usize;
        let drop = match &self.sc.services[self.spec(s)].server.kind {
            ServerKind::Queue(q) => q.drop_expired,
            ServerKind::Occ => false,
        };
        if !drop || self.calls[work.call].awaits(work.token) {
            return false;
        }
        self.services[s].counters.expired_dropped += 1;
        self.services[s].held_nanos += u128::from(now.saturating_since(work.held_from).as_nanos());
        self.free_works.push(w);
        self.release_worker(s, now);
        self.key_released(s, work.call, now);
        self.attempt_accounted(work.call);
        true
    }

    /// Sequential work `w` makes its next routed call, or finishes when none is left.
    fn next_call(&mut self, w: u32, now: SimTime) {
        let work = self.works[w as usize];
        let s = self.spec(work.service as usize);
        let count = self.sc.services[s].calls.len() as u32;
        let first = self.first_edge[s];
        let mut i = work.next;
        while i < count && !self.routed(w, first + i) {
            i += 1;
        }
        if i == count {
            self.finish_work(w, now);
            return;
        }
        if self.drop_expired_work(w, now) {
            return;
        }
        let work = &mut self.works[w as usize];
        work.next = i + 1;
        work.pending = 1;
        // The call may end at once and carry the work on (or finish it): nothing of `w` is
        // read after this.
        self.start_call(w, first + i, now);
    }

    /// A call made by work `w` ended with `outcome`.
    pub(super) fn child_ended(&mut self, w: u32, outcome: Outcome, now: SimTime) {
        let parallel =
            self.sc.services[self.spec(self.works[w as usize].service as usize)].parallel;
        let work = &mut self.works[w as usize];
        work.pending -= 1;
        match outcome {
            Outcome::Success => {}
            Outcome::Degraded => work.degraded = true,
            failed => {
                work.failure.get_or_insert(failed);
            }
        }
        if parallel {
            if work.pending == 0 {
                self.finish_work(w, now);
            }
        } else if work.failure.is_some() {
            self.finish_work(w, now);
        } else {
            self.next_call(w, now);
        }
    }

    /// Work `w` is done: its worker is released and the attempt answered.
    fn finish_work(&mut self, w: u32, now: SimTime) {
        let work = self.works[w as usize];
        self.free_works.push(w);
        let s = work.service as usize;
        self.services[s].held_nanos += u128::from(now.saturating_since(work.held_from).as_nanos());
        if work.failure == Some(Outcome::DeadlineExceeded)
            && !self.calls[work.call].awaits(work.token)
        {
            // A deadline cut the work off when its caller stopped waiting (a propagated
            // deadline ends the call below at that instant): it is abandoned, as a server
            // abandons a call whose deadline passed, not served for nobody.
            self.services[s].counters.expired_dropped += 1;
            self.release_worker(s, now);
            self.key_released(s, work.call, now);
            self.attempt_accounted(work.call);
            return;
        }
        self.served(s, now);
        self.release_worker(s, now);
        self.answer(s, work.call, work.token, work.failure, work.degraded, now);
    }

    /// A worker of service `s` is free at `now`: the next waiting attempt starts.
    #[inline(always)]
    fn release_worker(&mut self, s: usize, now: SimTime) {
        let ServerState::Queue(server) = &mut self.services[s].server else {
            unreachable!("occ services have no workers")
        };
        let (cancels, calls) = (F::POLICIES && self.cancels, &self.calls);
        let cancelled = |j: &Job| cancels && calls[j.slot].cancelled == j.token;
        if let Some((next, service)) = server.complete(now, &mut self.rng.service, cancelled) {
            let done = self.done_event(next.slot, next.token, s);
            self.queue.schedule(now + service, done);
        }
        self.account_dropped(s, now);
    }

    /// Accounts for the attempts service `s` discarded at dequeue, and answers those it
    /// shed `rejected`, as a full server would have.
    #[inline(always)]
    fn account_dropped(&mut self, s: usize, now: SimTime) {
        if let ServerState::Queue(server) = &self.services[s].server
            && !server.discarded()
        {
            return;
        }
        loop {
            let ServerState::Queue(server) = &mut self.services[s].server else {
                return;
            };
            if let Some(job) = server.pop_dropped() {
                self.key_released(s, job.slot, now);
                self.attempt_accounted(job.slot);
            } else if let Some(job) = server.pop_shed() {
                self.key_released(s, job.slot, now);
                self.reply(job.slot, job.token, Outcome::Rejected, now);
            } else {
                return;
            }
        }
    }

    /// Service `s` answers attempt `token` of call `slot`: with the first failed call's
    /// outcome, else its own error draw, else success (degraded if a fallback answered). An
    /// answer nobody awaits is wasted.
    #[inline(always)]
    fn answer(
        &mut self,
        s: usize,
        slot: u32,
        token: u32,
        failure: Option<Outcome>,
        degraded: bool,
        now: SimTime,
    ) {
        let call = &self.calls[slot];
        let awaited = call.awaits(token);
        let tracked = F::POLICIES && self.edges[call.edge as usize].tracks_executions;
        if !awaited && !tracked {
            // The caller gave up before the work was done: nobody reads this answer.
            self.wasted(s, slot, token, now);
            return;
        }
        let outcome = if call.permanent {
            Outcome::Permanent
        } else if let Some(failed) = failure {
            failed
        } else {
            let settings = &self.sc.services[self.spec(s)].server;
            let error_rate = match &settings.kind {
                ServerKind::Queue(q) if F::FAULTS => {
                    self.hosts[s].faults.error_rate(now).unwrap_or(q.error_rate)
                }
                ServerKind::Queue(q) => q.error_rate,
                ServerKind::Occ => 0.0,
            };
            if error_rate > 0.0 && self.rng.failures.random::<f64>() < error_rate {
                Outcome::Error
            } else if degraded {
                Outcome::Degraded
            } else {
                Outcome::Success
            }
        };
        if tracked {
            let taken = self.executed(s, slot, outcome, now);
            if !awaited && taken {
                // The caller gave up on this attempt, but a repeat of the same call waited
                // for its result and takes it: the work was not wasted.
                if outcome == Outcome::Success {
                    self.services[s].counters.useful += 1;
                }
                self.unawaited(slot, token, now);
                return;
            }
            if !awaited {
                self.wasted(s, slot, token, now);
                return;
            }
        }
        if outcome == Outcome::Success {
            self.services[s].counters.useful += 1;
        }
        let service = self.spec(s);
        if F::GRAPH
            && matches!(outcome, Outcome::Success | Outcome::Degraded)
            && let Some(series) = &mut self.services[service].series
        {
            // Only a call graph's services keep series: the caller awaits this attempt, so
            // its arrival is the one kept for the call.
            series.answered(now.saturating_since(self.arrivals[slot as usize]));
        }
        self.reply(slot, token, outcome, now);
    }

    /// Service `s` finished attempt `token` of call `slot` for a caller that no longer
    /// waits: wasted work. Nobody reads the answer, so none is sent, except to a caller
    /// whose percentile hedge delay learns from every answer it receives, late ones
    /// included (it would otherwise only ever see the answers fast enough to win a race).
    #[inline(always)]
    fn wasted(&mut self, s: usize, slot: u32, token: u32, now: SimTime) {
        self.services[s].counters.wasted += 1;
        self.tally(s, Column::Wasted);
        self.unawaited(slot, token, now);
    }

    /// The answer to attempt `token` of call `slot` reaches nobody: the attempt is accounted
    /// for, or its answer goes to a caller that learns from late answers.
    #[inline(always)]
    fn unawaited(&mut self, slot: u32, token: u32, now: SimTime) {
        let call = &self.calls[slot];
        if F::POLICIES
            && call.round == token
            && self.edges[call.edge as usize].policies.learns_late()
        {
            self.reply(slot, token, Outcome::Success, now);
        } else {
            self.attempt_accounted(slot);
        }
    }

    /// The service answers; the answer travels one hop back.
    #[inline(always)]
    fn reply(&mut self, slot: u32, token: u32, outcome: Outcome, now: SimTime) {
        let hop = self.sc.network.latency.sample(&mut self.rng.network);
        if outcome == Outcome::Success {
            if self.successes_at_once && self.succeed_at_once(slot, token, now + hop) {
                return;
            }
        } else if self.fold_retries && self.retry_at_once(slot, token, outcome, now + hop) {
            return;
        }
        self.queue.schedule(
            now + hop,
            Event::Reply {
                slot,
                token,
                outcome,
            },
        );
    }

    /// A concurrency fault window of service `s` starts or ends. Nothing arrives, so the
    /// backlog cannot grow here.
    pub(super) fn fault_edge(&mut self, s: usize, now: SimTime) {
        let ServerState::Queue(server) = &mut self.services[s].server else {
            return;
        };
        let (cancels, calls) = (F::POLICIES && self.cancels, &self.calls);
        let cancelled = |j: &Job| cancels && calls[j.slot].cancelled == j.token;
        for (job, service) in server.refresh_workers(now, &mut self.rng.service, cancelled) {
            let done = self.done_event(job.slot, job.token, s);
            self.queue.schedule(now + service, done);
        }
        self.account_dropped(s, now);
    }
}
