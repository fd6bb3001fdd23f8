//! The calling side of every edge: logical calls, their attempts, timers, retries and
//! fallbacks.
//!
//! A client's logical request is the root call (on its group's edge, towards the entry
//! service: edge 0 for a single group); a
//! service's call to another is a child of the work that made it, and its end is reported to
//! that work. Both follow one life: attempts are admitted through the edge's policies, sent,
//! answered or timed out, retried with backoff while the policy allows, and the call ends with
//! an outcome once, possibly answered by a fallback.

use rand::RngExt;

use super::features::Features;
use super::policy::Admit;
use super::{AfterRequest, Event, NO_TOKEN, NONE, Sim};
use crate::engine::{SimDuration, SimTime, Ticket};
use crate::metrics::{Column, Truncation};
use crate::model::Outcome;
use crate::scenario::{RETRY_AFTER_CLAMP, RetryAfter, Workload};

/// No parent work: a client's logical request.
pub(super) const ROOT: u32 = u32::MAX;

/// A logical call in progress (or ended, while attempts it sent are still out).
#[derive(Debug, Clone, Copy)]
pub(super) struct CallState {
    /// Its edge in `Sim::edges` (0: a client's request).
    pub edge: u32,
    /// The work that made it, or [`ROOT`].
    pub parent: u32,
    /// The client whose request this is (or serves).
    pub client: u32,
    pub start: SimTime,
    /// start + deadline (bounded by the caller's when the deadline propagates), or never.
    pub deadline: SimTime,
    /// Attempts begun so far (sent, or refused by a bulkhead).
    pub attempts: u32,
    /// The token of the attempt the caller awaits, or [`NO_TOKEN`].
    pub live_token: u32,
    /// The token the next attempt of this slot gets (never reset, so stale events stay stale
    /// when the slot is reused).
    pub next_token: u32,
    /// When the caller gives up on the awaited attempt.
    pub abandon_at: SimTime,
    /// The awaited attempt's timer, when it waits to be entered into the event list until the
    /// attempt reaches its service (`Sim::arm_timer`): its place among equal times.
    pub timer: Option<Ticket>,
    /// Every attempt of a bad call ends `permanent`.
    pub permanent: bool,
    /// The awaited attempt holds a bulkhead permit or is counted by an Envoy limit: the
    /// edge's policies hear when it is over.
    pub holds_permit: bool,
    /// A retry an Envoy limit granted is in flight: the limit hears when it is over.
    pub holds_retry: bool,
    /// The awaited attempt waits for a bulkhead permit (queued or refused).
    pub waiting: bool,
    /// The call has ended; the slot is freed once `outstanding` is 0.
    pub ended: bool,
    /// Attempts sent and not yet accounted for (answered, dropped or discarded).
    pub outstanding: u32,
    /// Last decorrelated-jitter sleep.
    pub decorrelated: SimDuration,
    /// When the awaited attempt was sent (a breaker's slow-call rule).
    pub sent: SimTime,
    /// What the last retry took from a retry quota.
    pub last_retry_cost: f64,
    /// The request's route draw (call graphs with partial calls).
    pub route: u64,
    /// The logical call's id: its idempotency key (a hedge shares its call's).
    pub id: u64,
    /// For a hedge: the call it races for ([`NONE`] for a call itself). A hedge is a call
    /// slot of its own with one attempt, so that its timer, bulkhead permit and send time
    /// are its own; it reports its outcome to its call and never ends a request itself.
    pub hedge_of: u32,
    /// A call's hedges still racing: the first slot of a list linked by `next_hedge`.
    pub hedges: u32,
    /// A hedge's successor in its call's list.
    pub next_hedge: u32,
    /// The token of the attempt that opened the call's current round (the attempt and its
    /// hedges).
    pub round: u32,
    /// Hedges sent in the current round.
    pub hedged: u32,
    /// The outcome of the call's own attempt when it failed while its hedges raced.
    pub round_outcome: Outcome,
    /// An attempt the caller abandoned and cancelled: its service drops it before service.
    pub cancelled: u32,
    /// Times a service executed an attempt of the call (duplicates are the ones after the
    /// first).
    pub executions: u32,
    /// The steps `Sim::retry_at_once` settled ahead and has not counted yet.
    pub ahead: Option<Ahead>,
    /// `occ`: the attempt whose read instant the call keeps for its write on the way
    /// (`Sim::keep_read`), or [`NO_TOKEN`], and that instant.
    pub read_token: u32,
    pub read_at: SimTime,
}

/// An answer and the retry it led to, settled when the service answered
/// (`Sim::retry_at_once`) for the instants they happen at, and counted once the run has
/// reached them: at the call's next settled answer, or when it ends, or at the end of the run (then
/// only those at or before its end). Everything that happens to the call after them comes
/// from events at or after its retry's departure.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ahead {
    /// The answer.
    pub outcome: Outcome,
    /// When it reaches the caller.
    pub answered: SimTime,
    /// When the retry leaves (never, when the deadline ends the call first or the retry
    /// leaves from its own event).
    pub retried: SimTime,
}

impl Ahead {
    /// Counts the steps at or before `until`; returns the instant of the last one counted
    /// (zero if none). Always inlined: at every settled answer (with `#[inline]` alone the
    /// compiler keeps it out of line, 0.3 % more instructions on the AWS column).
    #[inline(always)]
    pub fn count(self, rec: &mut crate::metrics::Recorder, until: SimTime) -> SimTime {
        if self.retried <= until {
            // Both steps (the retry leaves no earlier than the answer arrives): counted
            // together, most often in one bucket of the series.
            rec.attempt_ended_and_retried_at(self.outcome, self.answered, self.retried);
            return self.retried;
        }
        let mut last = SimTime::ZERO;
        if self.answered <= until {
            rec.attempt_ended_at(self.outcome, self.answered);
            last = self.answered;
        }
        if self.retried <= until {
            rec.retry_sent_at(self.retried);
            last = self.retried;
        }
        last
    }
}

/// A request's success settled where its service answered (`Sim::succeed_at_once`), counted
/// once the run reaches `answered` (`Sim::reach`), in the place among the events of that
/// instant its answer's event would have taken. Ordered by instant, then place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct SettledEnd {
    /// When the answer reaches the caller: the request's end.
    pub answered: SimTime,
    /// The answer's place among the events of `answered`.
    pub place: Ticket,
    /// When the request started.
    pub start: SimTime,
}

impl CallState {
    /// A call on `edge` made by `parent` (or [`ROOT`]) for `client`'s request, starting
    /// `now`, with nothing sent yet.
    #[inline(always)]
    fn fresh(
        (edge, parent, client): (u32, u32, u32),
        now: SimTime,
        deadline: SimTime,
        permanent: bool,
        route: u64,
    ) -> Self {
        CallState {
            edge,
            parent,
            client,
            start: now,
            deadline,
            attempts: 0,
            live_token: NO_TOKEN,
            next_token: 1,
            abandon_at: SimTime::NEVER,
            timer: None,
            permanent,
            holds_permit: false,
            holds_retry: false,
            waiting: false,
            ended: false,
            outstanding: 0,
            decorrelated: SimDuration::ZERO,
            sent: now,
            last_retry_cost: 0.0,
            route,
            id: 0,
            hedge_of: NONE,
            hedges: NONE,
            next_hedge: NONE,
            round: NO_TOKEN,
            hedged: 0,
            round_outcome: Outcome::Success,
            cancelled: NO_TOKEN,
            executions: 0,
            ahead: None,
            read_token: NO_TOKEN,
            read_at: SimTime::ZERO,
        }
    }

    /// Whether the caller still awaits attempt `token`.
    #[inline]
    pub fn awaits(&self, token: u32) -> bool {
        self.live_token == token
    }
}

impl<F: Features> Sim<'_, F> {
    /// Takes a slot for a new call, and gives it the next call id.
    #[inline(always)]
    fn new_call(&mut self, mut fresh: CallState) -> u32 {
        self.live_slots += 1;
        fresh.id = self.next_call_id;
        self.next_call_id += 1;
        match self.free_calls.pop() {
            Some(slot) => {
                let old = &mut self.calls[slot];
                *old = CallState {
                    next_token: old.next_token,
                    ..fresh
                };
                slot
            }
            None => self.calls.push(fresh),
        }
    }

    /// An attempt of call `slot` is accounted for; the slot is freed if the call has ended
    /// and nothing it sent is still out.
    #[inline(always)]
    pub(super) fn attempt_accounted(&mut self, slot: u32) {
        let call = &mut self.calls[slot];
        call.outstanding -= 1;
        if call.ended && call.outstanding == 0 {
            self.free_slot(slot);
        }
    }

    /// Frees the slot of an ended call with nothing out. A hedge's slot counts as one of
    /// its call's outstanding attempts, which is then accounted for.
    #[inline(always)]
    fn free_slot(&mut self, slot: u32) {
        self.free_calls.push(slot);
        self.live_slots -= 1;
        let of = self.calls[slot].hedge_of;
        if F::POLICIES && of != NONE {
            self.attempt_accounted(of);
        }
    }

    /// Starts a logical request for `client`. Returns a truncation if the in-flight limit is
    /// exceeded.
    pub(super) fn start_request(
        &mut self,
        client: u32,
        group: u32,
        now: SimTime,
    ) -> Option<Truncation> {
        self.reach(self.queue.current());
        if self.in_flight >= self.sc.limits.max_in_flight {
            return Some(Truncation::MaxInFlight {
                limit: self.sc.limits.max_in_flight,
                at: now,
            });
        }
        // Drawn for every request, even at rate 0, so that changing the rate changes nothing
        // else about the traffic (common random numbers).
        let permanent =
            self.arrivals(group).random::<f64>() < self.sc.server().permanent_error_rate;
        let edge = &self.edges[group as usize];
        let deadline = edge
            .policies
            .policy
            .deadline
            .map_or(SimTime::NEVER, |d| now + d);
        let route = if F::GRAPH && self.graph {
            self.rng.routes.random::<u64>()
        } else {
            0
        };
        let slot = self.new_call(CallState::fresh(
            (group, ROOT, client),
            now,
            deadline,
            permanent,
            route,
        ));
        self.in_flight += 1;
        self.rec.counters.requests += 1;
        self.rec.series.add(Column::Started);
        if F::POLICIES {
            self.edges[group as usize]
                .policies
                .call_started(client, now);
        }
        self.rec.counters.max_in_flight = self.rec.counters.max_in_flight.max(self.in_flight);
        self.send_attempt(slot, now);
        None
    }

    /// Work `work` starts its call on edge `edge`.
    pub(super) fn start_call(&mut self, work: u32, edge: u32, now: SimTime) {
        let w = self.works[work as usize];
        let caller = self.calls[w.call];
        let e = &self.edges[edge as usize];
        let policy = e.policies.policy;
        let mut deadline = policy.deadline.map_or(SimTime::NEVER, |d| now + d);
        if e.propagate_deadline {
            deadline = deadline.min(w.abandon_at);
        }
        let rate = self.sc.services[e.to as usize].server.permanent_error_rate;
        let permanent = rate > 0.0 && self.rng.routes.random::<f64>() < rate;
        let slot = self.new_call(CallState::fresh(
            (edge, work, caller.client),
            now,
            deadline,
            permanent,
            caller.route,
        ));
        if self.live_slots > self.sc.limits.max_in_flight {
            self.overflow.get_or_insert(Truncation::MaxInFlight {
                limit: self.sc.limits.max_in_flight,
                at: now,
            });
        }
        let e = &mut self.edges[edge as usize];
        e.counters.calls += 1;
        e.policies.call_started(caller.client, now);
        if deadline <= now {
            // The propagated deadline has already passed: the call is not even sent.
            self.end_call(slot, Outcome::DeadlineExceeded, now);
        } else {
            self.send_attempt(slot, now);
        }
    }

    /// The caller begins the next attempt of call `slot` now: the edge's policies admit it
    /// (it is sent), make it wait for a bulkhead permit, or refuse it.
    #[inline(always)]
    pub(super) fn send_attempt(&mut self, slot: u32, now: SimTime) {
        let call = &self.calls[slot];
        let edge = call.edge as usize;
        let admit = if F::POLICIES {
            self.edges[edge].policies.admit(
                call.client,
                call.attempts > 0,
                call.deadline,
                now,
                &mut self.rng.throttle,
            )
        } else {
            Admit::Send
        };
        match admit {
            Admit::Send => {
                let holds = F::POLICIES && self.edges[edge].policies.hears_attempts();
                let token = self.begin_attempt(slot);
                self.transmit(slot, token, holds, now);
            }
            Admit::BreakerOpen => self.end_call(slot, Outcome::BreakerOpen, now),
            Admit::ThrottledLocally => {
                if edge >= self.client_edges as usize && call.hedge_of == NONE {
                    self.edges[edge].counters.throttled_locally += 1;
                }
                self.end_call(slot, Outcome::ThrottledLocally, now);
            }
            Admit::Wait(until) => {
                let token = self.begin_attempt(slot);
                self.calls[slot].waiting = true;
                self.edges[edge].policies.wait((slot, token));
                self.queue
                    .schedule(until, Event::BulkheadTimer { slot, token });
            }
            Admit::Full => {
                // Refused at once; the refusal is its own event, so that a policy that
                // retries it without delay cannot recurse.
                let token = self.begin_attempt(slot);
                self.calls[slot].waiting = true;
                self.queue
                    .schedule(now, Event::BulkheadTimer { slot, token });
            }
            Admit::Delay(at) => {
                // The attempt is begun now and leaves once it has a token; its timeout runs
                // from then, as the SDK's read timeout starts after the wait. Until it
                // leaves, `sent` holds when its wait began.
                let token = self.begin_attempt(slot);
                self.calls[slot].sent = now;
                self.queue.schedule(at, Event::TokenDue { slot, token });
            }
            Admit::PastDeadline => {
                let deadline = self.calls[slot].deadline;
                self.queue.schedule(deadline, Event::RetryDue { slot });
            }
        }
    }

    /// Attempt `token` of call `slot`, waiting for its client rate limiter's token, looks
    /// again: it leaves now with a token, waits on, or its call ends at its deadline. An
    /// attempt its call no longer awaits (a hedge won the race meanwhile) is forgotten.
    pub(super) fn token_due(&mut self, slot: u32, token: u32, now: SimTime) {
        let call = &self.calls[slot];
        if !call.awaits(token) {
            return;
        }
        let (client, since, deadline) = (call.client, call.sent, call.deadline);
        let edge = call.edge as usize;
        match self.edges[edge]
            .policies
            .limiter_admits(client, since, deadline, now)
        {
            Admit::Delay(at) => self.queue.schedule(at, Event::TokenDue { slot, token }),
            Admit::PastDeadline => {
                self.calls[slot].live_token = NO_TOKEN;
                self.queue.schedule(deadline, Event::RetryDue { slot });
            }
            _ => self.transmit(slot, token, false, now),
        }
    }

    /// Counts a new attempt of call `slot` and makes it the awaited one.
    #[inline(always)]
    fn begin_attempt(&mut self, slot: u32) -> u32 {
        let call = &mut self.calls[slot];
        call.attempts += 1;
        let token = call.next_token;
        call.next_token = call.next_token.wrapping_add(1).max(1);
        call.live_token = token;
        token
    }

    /// Attempt `token` of call `slot` leaves for its service now; `holds` says whether it
    /// holds a bulkhead permit.
    #[inline(always)]
    fn transmit(&mut self, slot: u32, token: u32, holds: bool, now: SimTime) {
        let call = &self.calls[slot];
        let edge = call.edge as usize;
        if F::POLICIES && holds {
            self.edges[edge].policies.attempt_sent(call.client);
        }
        let call = &self.calls[slot];
        let first = call.attempts == 1;
        let hedge = F::POLICIES && call.hedge_of != NONE;
        if hedge {
            if edge < self.client_edges as usize {
                self.rec.counters.hedges += 1;
                // The series counts a hedge with the retries: both are attempts beyond a
                // request's first, and the load figures stack them on the first attempts.
                self.rec.series.add(Column::Retries);
            } else {
                let c = &mut self.edges[edge].counters;
                c.attempts += 1;
                c.hedges += 1;
            }
        } else if edge < self.client_edges as usize {
            if first {
                self.rec.counters.first_attempts += 1;
                self.rec.series.add(Column::FirstAttempts);
            } else {
                self.rec.counters.retries += 1;
                self.rec.series.add(Column::Retries);
            }
        } else {
            let c = &mut self.edges[edge].counters;
            c.attempts += 1;
            if !first {
                c.retries += 1;
            }
        }
        self.dispatch(slot, token, holds, now);
    }

    /// What sending attempt `token` of call `slot` at `now` sets in motion, beyond counting
    /// it: the call awaits it, its hop to the service (or, for an `occ` read that needs no
    /// event, its write), its timer, and a hedging round. `now` may lie ahead of the event
    /// being handled ([`Sim::retry_at_once`]).
    #[inline(always)]
    fn dispatch(&mut self, slot: u32, token: u32, holds: bool, now: SimTime) {
        let call = &mut self.calls[slot];
        let edge = call.edge as usize;
        let timeout = self.edges[edge].timeout;
        // With a timeout or a deadline the caller keeps a timer, even one that lands past
        // the end of simulated time (at NEVER, ending the run if the attempt is still
        // awaited).
        let timed = self.edges[edge].keeps_timer(call.deadline);
        call.sent = now;
        call.holds_permit = holds;
        call.outstanding += 1;
        call.abandon_at = timeout
            .map_or(SimTime::NEVER, |t| now + t)
            .min(call.deadline);
        let abandon_at = call.abandon_at;
        let hedge = F::POLICIES && call.hedge_of != NONE;
        if !timed && self.edges[edge].folds_reads {
            self.occ_send(slot, token, now);
        } else {
            let arrival = if F::REPLICAS {
                self.pick_arrival(slot, token, edge, now)
            } else {
                Event::ServerArrival { slot, token }
            };
            let hop = self.sc.network.latency.sample(&mut self.rng.network);
            let arrives = now + hop;
            self.queue.schedule(arrives, arrival);
            if timed {
                let event = Event::AttemptTimer { slot, token };
                // The timer cannot fire before the attempt reaches its service: it is entered
                // then, if the attempt is still awaited (one answered there and settled, or
                // one a hedge has beaten, is not), in the place it takes now.
                let later = self.timers_on_arrival && abandon_at > arrives;
                let ticket = later.then(|| self.queue.ticket());
                self.calls[slot].timer = ticket;
                if !later {
                    self.queue.schedule_timer(abandon_at, event);
                }
            }
        }
        if F::POLICIES && self.edges[edge].policies.hedges() {
            let call = &mut self.calls[slot];
            call.round = token;
            if !hedge {
                // The attempt opens a round that its hedges join.
                call.hedged = 0;
                self.arm_hedge(slot, token, now);
            }
        }
    }

    /// The arrival event of attempt `token` of call `slot`, sent on `edge` now, at the host
    /// `Sim::pick_host` picks.
    #[inline(never)]
    fn pick_arrival(&mut self, slot: u32, token: u32, edge: usize, now: SimTime) -> Event {
        let host = self.pick_host(slot, edge, now);
        self.arrival_event(slot, token, host as usize)
    }

    /// The host the attempt of call `slot` on `edge` now being sent goes to: the service
    /// called, or, where it has replicas, the one the edge's balancer picks (the first
    /// attempt's for a sticky call; with `previous_hosts`, a retry's balancer picks again
    /// while it picks one the call tried; a replica the edge's outlier detector has ejected
    /// by `now` is never picked, unless the pool is in panic, and a sticky call whose replica
    /// is ejected is balanced anew). The balancer counts the attempt out there until
    /// the caller stops waiting for it (`Sim::attempt_over`). Kept out of line: the hot
    /// path of a run without replicas never calls it, and stays as it was.
    #[inline(always)]
    fn pick_host(&mut self, slot: u32, edge: usize, now: SimTime) -> u32 {
        let to = self.edges[edge].to as usize;
        let Some(pool) = &mut self.pools[edge] else {
            return to as u32;
        };
        if let Some(d) = &mut pool.detector
            && d.advance(now)
        {
            pool.balancer.set_eligible(d.eligible());
        }
        let s = slot as usize;
        if self.picked.len() <= s {
            self.picked.resize(s + 1, NONE);
        }
        let first = self.calls[slot].attempts == 1;
        let last = self.picked[s];
        // What each replica holds, for a balancer that sees the queues.
        let (services, base) = (&self.services, self.replica_base[to]);
        let held = |k: u32| {
            let h = if k == 0 { to } else { (base + k - 1) as usize };
            let (waiting, in_service) = services[h].load();
            waiting + in_service
        };
        let queue: Option<&dyn Fn(u32) -> u32> = if pool.sees_queue { Some(&held) } else { None };
        // A sticky call goes back to its replica unless that one is ejected.
        let stays = pool.sticky && !first && pool.balancer.is_eligible(last);
        let k = match pool.previous_hosts {
            Some(reselections) => {
                if self.tried.len() <= s {
                    self.tried.resize_with(s + 1, Vec::new);
                }
                let tried = &mut self.tried[s];
                if first {
                    tried.clear();
                }
                let k = if stays && !tried.contains(&last) {
                    pool.balancer.pick_again(last)
                } else {
                    let t = &*tried;
                    pool.balancer.pick_seeing(
                        &mut self.rng.balancer,
                        reselections,
                        |k| t.contains(&k),
                        queue,
                    )
                };
                tried.push(k);
                k
            }
            None if stays => pool.balancer.pick_again(last),
            None => pool
                .balancer
                .pick_seeing(&mut self.rng.balancer, 0, |_| false, queue),
        };
        self.picked[s] = k;
        let at = self.replica_series_at[to] + k;
        self.replica_series[at as usize].add(Column::Attempts);
        self.host(to, k) as u32
    }

    /// Attempt `token` of call `slot` has reached its service: if its caller still awaits it
    /// and its timer waits to be entered (`dispatch`), the timer joins the event list, in the
    /// place it took when the attempt was sent. An attempt whose answer on arrival is settled
    /// (`retry_at_once`) never gets one: a caller would have cancelled it.
    #[inline(always)]
    pub(super) fn arm_timer(&mut self, slot: u32, token: u32) {
        let call = &mut self.calls[slot];
        if call.awaits(token)
            && let Some(ticket) = call.timer.take()
        {
            let at = call.abandon_at;
            self.queue
                .schedule_timer_as(at, ticket, Event::AttemptTimer { slot, token });
        }
    }

    /// Schedules the next hedge of the round `token` of call `slot`, if the edge has a delay
    /// to go by and it falls before the call's deadline.
    fn arm_hedge(&mut self, slot: u32, token: u32, now: SimTime) {
        let call = &self.calls[slot];
        if let Some(delay) = self.edges[call.edge as usize].policies.hedge_delay()
            && now + delay < call.deadline
        {
            self.queue
                .schedule(now + delay, Event::HedgeDue { slot, token });
        }
    }

    /// The hedge delay of round `token` of call `slot` is over: unless the round is decided,
    /// another attempt of the call is sent (if the limit per attempt and the hedge budget
    /// allow), racing the others, and the next hedge is armed.
    pub(super) fn hedge_due(&mut self, slot: u32, token: u32, now: SimTime) {
        let call = &self.calls[slot];
        let racing = call.live_token == token || call.hedges != NONE;
        if call.ended || call.round != token || !racing || now >= call.deadline {
            return;
        }
        let (edge, hedged) = (call.edge, call.hedged);
        if !self.edges[edge as usize].policies.may_hedge(hedged) {
            return;
        }
        let call = &mut self.calls[slot];
        call.hedged += 1;
        call.outstanding += 1;
        let p = *call;
        let mut hedge = CallState::fresh(
            (p.edge, p.parent, p.client),
            now,
            p.deadline,
            p.permanent,
            p.route,
        );
        hedge.hedge_of = slot;
        hedge.next_hedge = p.hedges;
        let h = self.new_call(hedge);
        let call = &mut self.calls[slot];
        call.hedges = h;
        // A hedge carries its call's key.
        self.calls[h].id = p.id;
        if self.live_slots > self.sc.limits.max_in_flight {
            self.overflow.get_or_insert(Truncation::MaxInFlight {
                limit: self.sc.limits.max_in_flight,
                at: now,
            });
        }
        self.send_attempt(h, now);
        // Sending may have decided the round (a breaker refusing the only attempt left).
        let call = &self.calls[slot];
        if call.round == token && !call.ended && call.hedged < self.max_hedges(edge) {
            self.arm_hedge(slot, token, now);
        }
    }

    /// The most hedges per attempt on edge `edge`.
    fn max_hedges(&self, edge: u32) -> u32 {
        self.edges[edge as usize]
            .policies
            .policy
            .hedge
            .map_or(0, |h| h.max_hedges)
    }

    /// Hedge `h` is over (answered, refused or timed out) with `outcome`. It wins its call's
    /// round with a success, or with a failure the policy does not retry (and then its
    /// call ends); any other failure drops it from the round, and the call's usual logic
    /// decides once every attempt of the round has failed.
    fn hedge_over(&mut self, h: u32, outcome: Outcome, now: SimTime) {
        let slot = self.calls[h].hedge_of;
        self.unlink_hedge(slot, h);
        self.end_hedge(h);
        let edge = self.calls[slot].edge as usize;
        let retry_on = self.edges[edge].policies.policy.retry.retry_on;
        let local = matches!(
            outcome,
            Outcome::BulkheadFull | Outcome::BreakerOpen | Outcome::ThrottledLocally
        );
        if matches!(outcome, Outcome::Success | Outcome::Degraded)
            || (!local && !retry_on.contains(outcome))
        {
            if matches!(outcome, Outcome::Success | Outcome::Degraded) {
                if edge < self.client_edges as usize {
                    self.rec.counters.hedge_wins += 1;
                } else {
                    self.edges[edge].counters.hedge_wins += 1;
                }
            }
            self.end_call(slot, outcome, now);
            return;
        }
        let call = &self.calls[slot];
        if call.live_token == NO_TOKEN && call.hedges == NONE {
            // Every attempt of the round failed: decide on the last failure the service
            // gave (a local refusal of a hedge is not one).
            let last = if local { call.round_outcome } else { outcome };
            self.decide(slot, last, now);
        }
    }

    /// Removes hedge `h` from the racing list of call `slot`.
    fn unlink_hedge(&mut self, slot: u32, h: u32) {
        let next = self.calls[h].next_hedge;
        let mut at = self.calls[slot].hedges;
        if at == h {
            self.calls[slot].hedges = next;
            return;
        }
        while at != NONE {
            let after = self.calls[at].next_hedge;
            if after == h {
                self.calls[at].next_hedge = next;
                return;
            }
            at = after;
        }
    }

    /// Hedge `h` ends; its slot is freed once its attempt is accounted for.
    fn end_hedge(&mut self, h: u32) {
        let hedge = &mut self.calls[h];
        hedge.live_token = NO_TOKEN;
        hedge.ended = true;
        if hedge.outstanding == 0 {
            self.free_slot(h);
        }
    }

    /// Call `slot`'s round is decided: the attempts still racing (its own, its hedges) are
    /// abandoned; with `cancel`, each is marked for its service to drop before service.
    fn abandon_round(&mut self, slot: u32, now: SimTime) {
        let edge = self.calls[slot].edge as usize;
        let cancel = self.edges[edge].policies.cancels();
        // The call itself, then its hedges in list order (read before each is ended).
        let mut next = self.calls[slot].hedges;
        self.calls[slot].hedges = NONE;
        let mut at = slot;
        loop {
            let s = at;
            if s == NONE {
                break;
            }
            at = next;
            if next != NONE {
                next = self.calls[next].next_hedge;
            }
            let call = &mut self.calls[s];
            let token = call.live_token;
            if token != NO_TOKEN {
                if call.waiting {
                    // Still waiting for a bulkhead permit: it gives up its place.
                    call.waiting = false;
                    call.live_token = NO_TOKEN;
                    let calls = &self.calls;
                    self.edges[edge]
                        .policies
                        .stop_waiting(|(s, t)| calls[s].awaits(t) && calls[s].waiting);
                } else {
                    if cancel {
                        call.cancelled = token;
                    }
                    self.attempt_over(s, None, now);
                }
            }
            if s != slot {
                self.end_hedge(s);
            }
        }
    }

    /// The caller stops waiting for the awaited attempt of call `slot`, answered with
    /// `outcome` (`None`: abandoned, when its call's round was decided): its bulkhead permit
    /// comes back and may go to a waiter, which is sent at once.
    #[inline(always)]
    fn attempt_over(&mut self, slot: u32, outcome: Option<Outcome>, now: SimTime) {
        if F::REPLICAS {
            self.balanced_over(slot, outcome, now);
        }
        let call = &mut self.calls[slot];
        call.live_token = NO_TOKEN;
        if !F::POLICIES || !call.holds_permit {
            return;
        }
        call.holds_permit = false;
        let (edge, client) = (call.edge as usize, call.client);
        let calls = &self.calls;
        let next = self.edges[edge]
            .policies
            .attempt_over(client, |(s, t)| calls[s].awaits(t) && calls[s].waiting);
        if let Some((s, t)) = next {
            self.calls[s].waiting = false;
            self.transmit(s, t, true, now);
        }
    }

    /// The awaited attempt of call `slot` is over for its caller at `now`, with `outcome`
    /// (`None`: abandoned): the edge's balancer, if any, counts it out of the replica it went
    /// to, and the edge's outlier detector, if any, learns the outcome (an abandoned attempt
    /// tells it nothing). The replica is remembered for a sticky call's next attempt. Out of
    /// line, as `Sim::pick_host`.
    #[inline(never)]
    fn balanced_over(&mut self, slot: u32, outcome: Option<Outcome>, now: SimTime) {
        let edge = self.calls[slot].edge as usize;
        if let Some(pool) = &mut self.pools[edge] {
            let k = self.picked[slot as usize];
            pool.balancer.done(k);
            if let (Some(d), Some(outcome)) = (&mut pool.detector, outcome) {
                let back = d.advance(now);
                let out = d.report(k, crate::model::Report::of(outcome), now);
                if back || out {
                    pool.balancer.set_eligible(d.eligible());
                }
            }
        }
    }

    /// With `Sim::fold_retries`: the service answers attempt `token` of call `slot` with
    /// `outcome`, and the answer will reach the caller at `answered`. If the caller then still
    /// awaits it (its timer, if any, fires later) and the policy retries, the caller's next
    /// steps depend on nothing that can happen in between (passive policies), so they are
    /// taken here for the instants they happen at, as `reply_arrived` and `decide` would take
    /// them: the answer arrives, the retry waits its backoff until `due` and leaves then.
    /// When hop delays have no atom (`Sim::departs_at_once`), or on an `occ` row with no
    /// timer (its read needs no event either), the retry is sent from here for `due`
    /// ([`Sim::dispatch`]: its arrival at the service is the next event, and its timer is
    /// entered there). Otherwise, or when it would leave at or after the call's deadline, it
    /// leaves from its own `RetryDue` event, as `decide` would send it (or the call ends at
    /// the deadline there). What is settled is counted when the run reaches it ([`Ahead`]).
    /// Returns false when the answer must travel as an event: the caller no longer awaits it
    /// or its timer fires first, or the call ends.
    pub(super) fn retry_at_once(
        &mut self,
        slot: u32,
        token: u32,
        outcome: Outcome,
        answered: SimTime,
    ) -> bool {
        let call = &self.calls[slot];
        if !call.awaits(token) || answered >= call.abandon_at {
            return false;
        }
        let retry = &self.edges[0].policies.policy.retry;
        let exhausted = retry.max_attempts.is_some_and(|m| call.attempts >= m);
        if exhausted
            || matches!(outcome, Outcome::Success | Outcome::Degraded)
            || !retry.retry_on.contains(outcome)
        {
            return false;
        }
        // The steps settled at the last answer lie behind: this answer is to their retry.
        if let Some(ahead) = self.calls[slot].ahead.take() {
            ahead.count(&mut self.rec, answered);
        }
        let due = answered + self.retry_delay(slot, outcome);
        let call = &mut self.calls[slot];
        // The answered attempt is over and accounted for (the call has not ended, so its
        // slot stays); passive policies: no permit to return, no budget to pay.
        call.live_token = NO_TOKEN;
        call.outstanding -= 1;
        call.last_retry_cost = 0.0;
        let timed = self.edges[0].keeps_timer(call.deadline);
        let at_once = self.departs_at_once || (!timed && self.edges[0].folds_reads);
        if due >= call.deadline || !at_once {
            // The retry leaves from its own event; or, when it would leave at or after the
            // deadline, the call ends at the deadline from that event.
            call.ahead = Some(Ahead {
                outcome,
                answered,
                retried: SimTime::NEVER,
            });
            self.queue
                .schedule(due.min(call.deadline), Event::RetryDue { slot });
            return true;
        }
        call.ahead = Some(Ahead {
            outcome,
            answered,
            retried: due,
        });
        let token = self.begin_attempt(slot);
        self.dispatch(slot, token, false, due);
        true
    }

    /// With `Sim::successes_at_once`: the service answers attempt `token` of request `slot`
    /// with a success, and the answer will reach the caller at `answered`. If the caller then
    /// still awaits it (its timer, if any, fires later) and nothing else it sent is still out,
    /// the request ends there whatever happens in between (passive policies, no hedges, no
    /// think time to draw: an open workload, or a closed client's last request). So it ends
    /// here, for `answered`: its slot is freed, and its end is counted, and it leaves the
    /// requests in flight, when the run reaches `answered` ([`SettledEnd`]). Returns false
    /// when the answer must travel as an event.
    pub(super) fn succeed_at_once(&mut self, slot: u32, token: u32, answered: SimTime) -> bool {
        let call = &self.calls[slot];
        if !call.awaits(token) || answered >= call.abandon_at || call.outstanding != 1 {
            return false;
        }
        let g = if F::GROUPS { call.edge as usize } else { 0 };
        match self.after_request[g] {
            AfterRequest::Nothing => {}
            // The client's next request starts after a think time drawn at the end.
            AfterRequest::Think => return false,
            AfterRequest::Count { base } => {
                let left = &mut self.remaining[(base + call.client - self.group_base[g]) as usize];
                if *left > 1 {
                    return false;
                }
                *left = 0;
            }
        }
        // The steps settled at the last answer lie behind: this answer is to their retry.
        if let Some(ahead) = self.calls[slot].ahead.take() {
            ahead.count(&mut self.rec, answered);
        }
        let call = &mut self.calls[slot];
        call.live_token = NO_TOKEN;
        call.outstanding = 0;
        call.ended = true;
        let start = call.start;
        self.free_slot(slot);
        // The place the answer's event would take, taken as it would be.
        let place = self.queue.ticket();
        self.settled_ends.push(std::cmp::Reverse(SettledEnd {
            answered,
            place,
            start,
        }));
        true
    }

    /// How long call `slot` waits before retrying after `outcome`: its backoff (drawing
    /// jitter), or a throttling service's `retry_after` if the policy honours it and it is
    /// longer.
    #[inline(always)]
    fn retry_delay(&mut self, slot: u32, outcome: Outcome) -> SimDuration {
        let call = &mut self.calls[slot];
        let e = &self.edges[call.edge as usize];
        let retry = &e.policies.policy.retry;
        // The outcome is asked first: a run without throttling never reads the setting.
        let backoff = if outcome == Outcome::Throttled
            && let Some(throttled) = &retry.throttled_backoff
        {
            throttled
        } else {
            &retry.backoff
        };
        let delay = backoff.delay(call.attempts, &mut call.decorrelated, &mut self.rng.jitter);
        if outcome == Outcome::Throttled
            && retry.retry_after != RetryAfter::Ignore
            && let Some(after) = self.sc.services[e.to as usize]
                .server
                .rate_limit
                .and_then(|r| r.retry_after)
        {
            return match retry.retry_after {
                RetryAfter::Clamp => after.clamp(delay, delay + RETRY_AFTER_CLAMP),
                _ => delay.max(after),
            };
        }
        delay
    }

    /// A retry's backoff is over.
    #[inline]
    pub(super) fn retry_due(&mut self, slot: u32, now: SimTime) {
        if now >= self.calls[slot].deadline {
            self.end_call(slot, Outcome::DeadlineExceeded, now);
        } else {
            self.send_attempt(slot, now);
        }
    }

    /// An answer reaches the caller of call `slot`.
    #[inline]
    pub(super) fn reply_arrived(&mut self, slot: u32, token: u32, outcome: Outcome, now: SimTime) {
        let call = &self.calls[slot];
        if call.awaits(token) {
            self.attempt_over(slot, Some(outcome), now);
            self.attempt_failed_or_succeeded(slot, outcome, now);
        } else {
            if call.edge < self.client_edges {
                self.rec.counters.late_replies += 1;
            }
            // `round` is the hedging edge's last attempt sent, whose send time `sent` is.
            if call.round == token {
                let latency = now - call.sent;
                self.edges[call.edge as usize]
                    .policies
                    .answered_late(latency);
            }
        }
        self.attempt_accounted(slot);
    }

    /// The caller's timer for attempt `token` of call `slot` fires.
    #[inline]
    pub(super) fn attempt_timer(&mut self, slot: u32, token: u32, now: SimTime) {
        let call = &self.calls[slot];
        if !call.awaits(token) {
            return;
        }
        let deadline = call.deadline;
        self.attempt_over(slot, Some(Outcome::Timeout), now);
        if now >= deadline {
            if self.calls[slot].edge < self.client_edges {
                self.rec.attempt_ended(Outcome::Timeout);
            }
            self.learn(slot, Outcome::Timeout, now);
            self.end_call(slot, Outcome::DeadlineExceeded, now);
        } else {
            self.attempt_failed_or_succeeded(slot, Outcome::Timeout, now);
        }
    }

    /// An attempt's wait for a bulkhead permit ends.
    pub(super) fn bulkhead_timer(&mut self, slot: u32, token: u32, now: SimTime) {
        let call = &mut self.calls[slot];
        if !(call.awaits(token) && call.waiting) {
            // It got a permit and was sent.
            return;
        }
        call.waiting = false;
        call.live_token = NO_TOKEN;
        let edge = call.edge as usize;
        let calls = &self.calls;
        let e = &mut self.edges[edge];
        e.policies
            .stop_waiting(|(s, t)| calls[s].awaits(t) && calls[s].waiting);
        e.counters.bulkhead_full += 1;
        self.attempt_failed_or_succeeded(slot, Outcome::BulkheadFull, now);
    }

    /// The edge's policies learn the outcome of the awaited attempt of call `slot`.
    #[inline(always)]
    fn learn(&mut self, slot: u32, outcome: Outcome, now: SimTime) {
        if !F::POLICIES {
            return;
        }
        let call = &self.calls[slot];
        let retried = (call.attempts > 1).then_some(call.last_retry_cost);
        self.edges[call.edge as usize].policies.learn(
            call.client,
            outcome,
            call.sent,
            retried,
            now,
        );
    }

    /// The caller learned the outcome of its attempt: end the call, or schedule the retry.
    #[inline(always)]
    fn attempt_failed_or_succeeded(&mut self, slot: u32, outcome: Outcome, now: SimTime) {
        let edge = self.calls[slot].edge as usize;
        if edge < self.client_edges as usize {
            self.rec.attempt_ended(outcome);
        }
        // A bulkhead refusal is local: nothing was sent for a breaker or budget to learn of.
        if outcome != Outcome::BulkheadFull {
            self.learn(slot, outcome, now);
        }
        let call = &self.calls[slot];
        if F::POLICIES && call.hedge_of != NONE {
            self.hedge_over(slot, outcome, now);
            return;
        }
        if F::POLICIES && call.hedges != NONE {
            // The call's own attempt is over while its hedges still race: a success or a
            // failure the policy does not retry decides the round; any other failure leaves
            // it to the hedges.
            let retry_on = self.edges[edge].policies.policy.retry.retry_on;
            if matches!(outcome, Outcome::Success | Outcome::Degraded)
                || !retry_on.contains(outcome)
            {
                self.end_call(slot, outcome, now);
            } else {
                self.calls[slot].round_outcome = outcome;
            }
            return;
        }
        self.decide(slot, outcome, now);
    }

    /// Every attempt of call `slot`'s round is over, the last with `outcome`: end the call,
    /// or schedule the retry.
    #[inline(always)]
    fn decide(&mut self, slot: u32, outcome: Outcome, now: SimTime) {
        if F::POLICIES && self.calls[slot].holds_retry {
            self.retry_over(slot);
        }
        let edge = self.calls[slot].edge as usize;
        let e = &self.edges[edge];
        let retry = &e.policies.policy.retry;
        let call = &mut self.calls[slot];
        let exhausted = retry.max_attempts.is_some_and(|m| call.attempts >= m);
        if matches!(outcome, Outcome::Success | Outcome::Degraded)
            || !retry.retry_on.contains(outcome)
            || exhausted
        {
            self.end_call(slot, outcome, now);
            return;
        }
        let delay = self.retry_delay(slot, outcome);
        let call = &mut self.calls[slot];
        let due = now + delay;
        if due >= call.deadline {
            // The retry would start after the deadline: the call ends at the deadline.
            let deadline = call.deadline;
            self.queue.schedule(deadline, Event::RetryDue { slot });
            return;
        }
        // The budget is asked when the retry is decided, before the backoff, and not for a
        // retry the deadline would cancel anyway.
        let client = call.client;
        let verdict = if F::POLICIES {
            self.edges[edge].policies.may_retry(client, outcome, now)
        } else {
            Some(0.0)
        };
        match verdict {
            Some(cost) => {
                let call = &mut self.calls[slot];
                call.last_retry_cost = cost;
                call.holds_retry = F::POLICIES && self.edges[edge].policies.counts_retries();
            }
            None => {
                if edge < self.client_edges as usize {
                    self.rec.counters.budget_denials += 1;
                } else {
                    self.edges[edge].counters.budget_denials += 1;
                }
                self.end_call(slot, Outcome::BudgetExhausted, now);
                return;
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

    /// The retry an Envoy limit granted call `slot` is over (Envoy's `resetRetry`).
    #[cold]
    #[inline(never)]
    fn retry_over(&mut self, slot: u32) {
        let call = &mut self.calls[slot];
        call.holds_retry = false;
        let (edge, client) = (call.edge as usize, call.client);
        self.edges[edge].policies.retry_over(client);
    }

    /// Call `slot` is over with `outcome`: a failure is answered by the edge's fallback if
    /// it has one (after the fallback's latency the call ends `degraded`).
    #[inline(always)]
    pub(super) fn end_call(&mut self, slot: u32, outcome: Outcome, now: SimTime) {
        let call = &self.calls[slot];
        if F::POLICIES && call.hedge_of != NONE {
            // A hedge ends only its part in the race.
            self.hedge_over(slot, outcome, now);
            return;
        }
        if (F::POLICIES && call.hedges != NONE) || call.live_token != NO_TOKEN {
            // A hedge won: the attempts still racing are abandoned.
            self.abandon_round(slot, now);
        }
        if F::POLICIES && self.calls[slot].holds_retry {
            self.retry_over(slot);
        }
        let edge = self.calls[slot].edge as usize;
        let e = &mut self.edges[edge];
        if matches!(outcome, Outcome::Success | Outcome::Degraded) {
            e.counters.succeeded += 1;
            self.finish_call(slot, outcome, now);
            return;
        }
        e.counters.failed += 1;
        match &e.policies.policy.fallback {
            Some(latency) => {
                e.counters.degraded += 1;
                self.calls[slot].live_token = NO_TOKEN;
                let after = latency.sample(&mut self.rng.fallbacks);
                self.queue
                    .schedule(now + after, Event::FallbackDone { slot });
            }
            None => self.finish_call(slot, outcome, now),
        }
    }

    /// Request `slot` ended with `outcome`: counted on the entry route it took, if any.
    #[cold]
    fn count_route(&mut self, slot: u32, outcome: Outcome) {
        let u = super::service::route_draw(self.calls[slot].route, 0);
        for &e in &self.entry_routes {
            let edge = &mut self.edges[e as usize];
            if let Some((lo, hi)) = edge.route
                && lo <= u
                && u < hi
            {
                edge.counters.route_requests += 1;
                if outcome == Outcome::Success {
                    edge.counters.route_succeeded += 1;
                }
            }
        }
    }

    /// Call `slot` ends with `outcome`, once (directly, or when its fallback answers): a
    /// request's end is recorded (and a closed
    /// workload's client thinks, then starts its next); a call between services reports to
    /// the work that made it.
    #[inline(always)]
    pub(super) fn finish_call(&mut self, slot: u32, outcome: Outcome, now: SimTime) {
        if let Some(ahead) = self.calls[slot].ahead.take() {
            ahead.count(&mut self.rec, now);
        }
        let call = &mut self.calls[slot];
        call.live_token = NO_TOKEN;
        call.ended = true;
        let (client, start, parent) = (call.client, call.start, call.parent);
        let group = if F::GROUPS { call.edge } else { 0 };
        let attempts = call.attempts;
        if call.outstanding == 0 {
            self.free_slot(slot);
        }
        if parent != ROOT {
            self.child_ended(parent, outcome, now);
            return;
        }
        self.rec.request_ended(outcome, now - start, now);
        if F::GROUPS && self.client_edges > 1 {
            self.rec
                .group_ended(group as usize, outcome, now - start, attempts);
        }
        self.in_flight -= 1;
        if F::GRAPH && !self.entry_routes.is_empty() {
            self.count_route(slot, outcome);
        }
        let g = group as usize;
        match self.after_request[g] {
            AfterRequest::Nothing => return,
            AfterRequest::Think => {}
            AfterRequest::Count { base } => {
                let left = &mut self.remaining[(base + client - self.group_base[g]) as usize];
                *left = left.saturating_sub(1);
                if *left == 0 {
                    return;
                }
            }
        }
        let sc = self.sc;
        let Workload::Closed(closed) = &sc.clients[g].workload else {
            unreachable!("clients that think belong to closed workloads")
        };
        let think = closed.think_time.sample(self.arrivals(group));
        self.queue
            .schedule(now + think, Event::ClientReady { client, group });
    }
}
