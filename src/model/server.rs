//! The `queue` server: a pool of workers with a waiting room.
//!
//! A state machine with two inputs, [`QueueServer::arrive`] and [`QueueServer::complete`]. It
//! decides admission (start, wait or reject), picks the next waiting attempt (FIFO, LIFO,
//! CoDel or adaptive LIFO), discards expired attempts when deadlines propagate, sheds the
//! attempts CoDel finds too old, and draws service times. It does not
//! know what an attempt is for: the driver schedules the completion events and the replies.
//! Invariant: at most `concurrency` attempts in service and `queue_limit` waiting.

use std::collections::VecDeque;

use rand_pcg::Pcg64;

use crate::engine::{SimDuration, SimTime};
use crate::model::dist::Dist;
use crate::model::fault::Faults;

/// Order in which waiting attempts are served, and which are shed.
///
/// The queue is *standing* at an instant when the waiting room has not been empty at any
/// point within the last `interval`: the last instant at which no attempt waited is at least
/// `interval` ago. While attempts wait, that instant is the one at which the earliest of the
/// attempts waiting without a break since arrived into an empty waiting room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discipline {
    /// First come, first served.
    Fifo,
    /// Last come, first served.
    Lifo,
    /// Controlled delay (Facebook's CoDel variant, "Fail at Scale"): oldest first, but an
    /// attempt that has waited longer than the limit is shed at dequeue (answered
    /// `rejected`). The limit is `target` while the queue is standing, `interval` otherwise.
    Codel {
        /// The longest wait in a standing queue (< `interval`).
        target: SimDuration,
        /// How long the waiting room must stay non-empty for the queue to be standing.
        interval: SimDuration,
    },
    /// Adaptive LIFO: newest first while the queue is standing, oldest first otherwise. It
    /// sheds nothing.
    AdaptiveLifo {
        /// How long the waiting room must stay non-empty for the queue to be standing.
        interval: SimDuration,
    },
}

/// Validated settings of a `queue` server.
#[derive(Debug, Clone)]
pub struct QueueConfig {
    /// Workers; `None` is unlimited.
    pub concurrency: Option<u32>,
    /// Waiting places; `None` is unlimited.
    pub queue_limit: Option<u32>,
    /// Serving order.
    pub discipline: Discipline,
    /// Service time of one attempt.
    pub service_time: Dist,
    /// Extra service time per attempt already in service when one starts.
    pub slowdown_per_inflight: SimDuration,
    /// Probability that a served attempt ends `error`.
    pub error_rate: f64,
    /// Discard, at dequeue, attempts whose client has already given up.
    pub drop_expired: bool,
}

/// An attempt as the server sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job {
    /// The driver's handle of the logical request.
    pub slot: u32,
    /// The driver's handle of the attempt.
    pub token: u32,
    /// When the client gives up on this attempt ([`SimTime::NEVER`] without a timeout).
    pub abandon_at: SimTime,
}

/// What happened to an arriving attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// A worker took it at once; it finishes after this service time.
    Start(SimDuration),
    /// It waits for a worker.
    Queued,
    /// Every worker was busy and the waiting room full.
    Rejected,
}

/// The state of a `queue` server.
#[derive(Debug)]
pub struct QueueServer {
    config: QueueConfig,
    /// Fault windows that change the worker count or slow service down.
    faults: Faults,
    /// Workers now: the configured concurrency, or what a fault imposes.
    workers: Option<u32>,
    in_service: u32,
    /// The attempts waiting, oldest first, each with the instant it arrived.
    waiting: VecDeque<(Job, SimTime)>,
    /// When the waiting room last went from empty to holding an attempt: while it holds
    /// attempts, the last instant at which it was empty.
    nonempty_since: SimTime,
    /// Most attempts ever waiting at once.
    pub max_queue: u32,
    /// Most attempts ever in service at once.
    pub max_in_service: u32,
    /// Worker-busy time in nanoseconds: service time started, plus what the driver adds
    /// for workers held while their attempts wait on downstream calls.
    pub busy_nanos: u128,
    /// Attempts discarded at dequeue because their client had given up.
    pub expired_dropped: u64,
    /// Attempts discarded at dequeue because their caller cancelled them.
    pub cancelled: u64,
    /// Attempts CoDel shed at dequeue (each answered `rejected` by the driver).
    pub shed: u64,
    /// The attempts discarded at dequeue that the driver has not yet taken back
    /// ([`QueueServer::pop_dropped`]): each attempt is accounted for by its driver.
    dropped: Vec<Job>,
    /// The attempts shed at dequeue that the driver has not yet taken back
    /// ([`QueueServer::pop_shed`]) to answer them.
    shed_jobs: Vec<Job>,
}

impl QueueServer {
    /// An idle server without faults.
    pub fn new(config: QueueConfig) -> Self {
        Self::with_faults(config, Faults::default())
    }

    /// An idle server whose concurrency and service times follow `faults`.
    pub fn with_faults(config: QueueConfig, faults: Faults) -> Self {
        QueueServer {
            workers: faults
                .concurrency(SimTime::ZERO)
                .map_or(config.concurrency, Some),
            faults,
            config,
            in_service: 0,
            waiting: VecDeque::new(),
            nonempty_since: SimTime::ZERO,
            max_queue: 0,
            max_in_service: 0,
            busy_nanos: 0,
            expired_dropped: 0,
            cancelled: 0,
            shed: 0,
            dropped: Vec::new(),
            shed_jobs: Vec::new(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// Attempts in service now.
    pub fn in_service(&self) -> u32 {
        self.in_service
    }

    /// Attempts waiting now.
    pub fn queue_len(&self) -> u32 {
        self.waiting.len() as u32
    }

    fn has_free_worker(&self) -> bool {
        self.workers.is_none_or(|c| self.in_service < c)
    }

    /// Workers now (`None`: unlimited).
    pub fn workers(&self) -> Option<u32> {
        self.workers
    }

    /// Worker-nanoseconds available over `[0, horizon)`: the workers in force at each instant
    /// (the configured concurrency, or what a fault window imposes), integrated over time;
    /// `unlimited` stands for the configured count when there is none. Utilization is busy
    /// time over this, so a window that raises the worker count raises the capacity with it.
    pub fn capacity_nanos(&self, horizon: SimTime, unlimited: u32) -> u128 {
        let base = self.config.concurrency.unwrap_or(unlimited);
        let mut edges: Vec<SimTime> = self
            .faults
            .concurrency_edges()
            .into_iter()
            .filter(|&t| t < horizon)
            .collect();
        edges.insert(0, SimTime::ZERO);
        edges.dedup();
        edges.push(horizon);
        edges
            .windows(2)
            .map(|w| {
                let workers = self.faults.concurrency(w[0]).unwrap_or(base);
                u128::from(workers) * u128::from(w[1].saturating_since(w[0]).as_nanos())
            })
            .sum()
    }

    /// Re-reads the worker count at `now` (the driver calls this at every edge of a
    /// concurrency fault window). Attempts in service keep their workers when the count falls;
    /// when it rises, waiting attempts start: they are returned with their service times.
    /// `cancelled` tells which waiting attempts their callers cancelled (they are discarded).
    pub fn refresh_workers(
        &mut self,
        now: SimTime,
        rng: &mut Pcg64,
        cancelled: impl Fn(&Job) -> bool,
    ) -> Vec<(Job, SimDuration)> {
        self.workers = self
            .faults
            .concurrency(now)
            .map_or(self.config.concurrency, Some);
        let mut started = Vec::new();
        while self.has_free_worker()
            && let Some(job) = self.next_waiting(now, &cancelled)
        {
            started.push((job, self.start(now, rng)));
        }
        started
    }

    /// An attempt arrives at `now`. An arrival while every worker is busy (or a stall holds
    /// them all) waits if there is room.
    #[inline(always)]
    pub fn arrive(&mut self, job: Job, now: SimTime, rng: &mut Pcg64) -> Admission {
        if self.has_free_worker() {
            Admission::Start(self.start(now, rng))
        } else if self
            .config
            .queue_limit
            .is_none_or(|l| (self.waiting.len() as u32) < l)
        {
            if self.waiting.is_empty() {
                self.nonempty_since = now;
            }
            self.waiting.push_back((job, now));
            self.max_queue = self.max_queue.max(self.waiting.len() as u32);
            Admission::Queued
        } else {
            Admission::Rejected
        }
    }

    /// A worker finished at `now`. Returns the waiting attempt it starts next, with its service
    /// time, after discarding expired ones if `drop_expired` is set and those `cancelled`
    /// says their callers cancelled.
    #[inline(always)]
    pub fn complete(
        &mut self,
        now: SimTime,
        rng: &mut Pcg64,
        cancelled: impl Fn(&Job) -> bool,
    ) -> Option<(Job, SimDuration)> {
        debug_assert!(self.in_service > 0, "completion with no attempt in service");
        self.in_service -= 1;
        if !self.has_free_worker() {
            // The worker count fell below what is in service (a fault window began).
            return None;
        }
        let job = self.next_waiting(now, &cancelled)?;
        Some((job, self.start(now, rng)))
    }

    /// Whether attempts discarded or shed at dequeue wait to be handed back.
    #[inline(always)]
    pub fn discarded(&self) -> bool {
        !self.dropped.is_empty() || !self.shed_jobs.is_empty()
    }

    /// Hands back one of the attempts discarded at dequeue not yet handed back.
    #[inline]
    pub fn pop_dropped(&mut self) -> Option<Job> {
        self.dropped.pop()
    }

    /// Hands back one of the attempts shed at dequeue not yet handed back.
    #[inline]
    pub fn pop_shed(&mut self) -> Option<Job> {
        self.shed_jobs.pop()
    }

    /// Whether the queue is standing at `now`: the waiting room holds attempts and has not
    /// been empty at any point within the last `interval`.
    fn standing(&self, now: SimTime, interval: SimDuration) -> bool {
        !self.waiting.is_empty() && now.saturating_since(self.nonempty_since) >= interval
    }

    /// Takes the next waiting attempt in serving order, discarding expired ones if
    /// `drop_expired` is set and cancelled ones, and shedding those CoDel finds too old.
    /// Whether the queue is standing is decided once, before anything leaves it.
    #[inline(always)]
    fn next_waiting(&mut self, now: SimTime, cancelled: impl Fn(&Job) -> bool) -> Option<Job> {
        let (newest_first, limit) = match self.config.discipline {
            Discipline::Fifo => (false, None),
            Discipline::Lifo => (true, None),
            Discipline::Codel { target, interval } => (
                false,
                Some(if self.standing(now, interval) {
                    target
                } else {
                    interval
                }),
            ),
            Discipline::AdaptiveLifo { interval } => (self.standing(now, interval), None),
        };
        loop {
            let (job, since) = if newest_first {
                self.waiting.pop_back()
            } else {
                self.waiting.pop_front()
            }?;
            if self.config.drop_expired && job.abandon_at <= now {
                self.expired_dropped += 1;
                self.dropped.push(job);
                continue;
            }
            if cancelled(&job) {
                self.cancelled += 1;
                self.dropped.push(job);
                continue;
            }
            if let Some(limit) = limit
                && now.saturating_since(since) > limit
            {
                self.shed += 1;
                self.shed_jobs.push(job);
                continue;
            }
            return Some(job);
        }
    }

    /// Occupies a worker at `now` and draws the service time.
    #[inline]
    fn start(&mut self, now: SimTime, rng: &mut Pcg64) -> SimDuration {
        let mut service = self.config.service_time.sample(rng);
        if self.config.slowdown_per_inflight > SimDuration::ZERO {
            service = service.saturating_add(SimDuration::from_nanos(
                self.config
                    .slowdown_per_inflight
                    .as_nanos()
                    .saturating_mul(u64::from(self.in_service)),
            ));
        }
        if !self.faults.is_empty() {
            let factor = self.faults.service_time_factor(now);
            if factor != 1.0 {
                service = service.mul_f64(factor);
            }
        }
        self.in_service += 1;
        self.max_in_service = self.max_in_service.max(self.in_service);
        self.busy_nanos += u128::from(service.as_nanos());
        service
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn server(concurrency: u32, queue_limit: u32, discipline: Discipline) -> QueueServer {
        QueueServer::new(QueueConfig {
            concurrency: Some(concurrency),
            queue_limit: Some(queue_limit),
            discipline,
            service_time: Dist::Constant(SimDuration::from_millis(1)),
            slowdown_per_inflight: SimDuration::ZERO,
            error_rate: 0.0,
            drop_expired: true,
        })
    }

    fn job(slot: u32, abandon_ms: u64) -> Job {
        Job {
            slot,
            token: 1,
            abandon_at: SimTime(abandon_ms * 1_000_000),
        }
    }

    #[test]
    fn admits_queues_then_rejects() {
        let mut rng = Pcg64::seed_from_u64(1);
        let mut s = server(1, 1, Discipline::Fifo);
        assert!(matches!(
            s.arrive(job(0, 99), SimTime::ZERO, &mut rng),
            Admission::Start(_)
        ));
        assert_eq!(
            s.arrive(job(1, 99), SimTime::ZERO, &mut rng),
            Admission::Queued
        );
        assert_eq!(
            s.arrive(job(2, 99), SimTime::ZERO, &mut rng),
            Admission::Rejected
        );
        assert_eq!((s.in_service(), s.queue_len()), (1, 1));
    }

    #[test]
    fn lifo_serves_the_newest_and_expired_jobs_are_dropped() {
        let mut rng = Pcg64::seed_from_u64(1);
        let mut s = server(1, 10, Discipline::Lifo);
        s.arrive(job(0, 99), SimTime::ZERO, &mut rng);
        s.arrive(job(1, 99), SimTime::ZERO, &mut rng);
        s.arrive(job(2, 99), SimTime::ZERO, &mut rng);
        s.arrive(job(3, 1), SimTime::ZERO, &mut rng); // expires at 1 ms
        let (next, _) = s.complete(SimTime(2_000_000), &mut rng, |_| false).unwrap();
        assert_eq!(next.slot, 2);
        assert_eq!(s.expired_dropped, 1);
    }

    #[test]
    fn cancelled_jobs_are_dropped_at_dequeue() {
        let mut rng = Pcg64::seed_from_u64(1);
        let mut s = server(1, 10, Discipline::Fifo);
        for i in 0..4 {
            s.arrive(job(i, 99), SimTime::ZERO, &mut rng);
        }
        let (next, _) = s
            .complete(SimTime(1_000_000), &mut rng, |j| j.slot % 2 == 1)
            .unwrap();
        assert_eq!(next.slot, 2, "1 was cancelled");
        assert_eq!((s.cancelled, s.expired_dropped), (1, 0));
        assert_eq!(s.pop_dropped().map(|j| j.slot), Some(1));
        assert_eq!(s.pop_dropped(), None);
    }

    #[test]
    fn slowdown_adds_per_attempt_in_service() {
        let mut rng = Pcg64::seed_from_u64(1);
        let mut cfg = server(10, 0, Discipline::Fifo).config().clone();
        cfg.slowdown_per_inflight = SimDuration::from_millis(10);
        let mut s = QueueServer::new(cfg);
        let ms = |a| match a {
            Admission::Start(d) => d.as_nanos() / 1_000_000,
            other => panic!("{other:?}"),
        };
        assert_eq!(ms(s.arrive(job(0, 99), SimTime::ZERO, &mut rng)), 1);
        assert_eq!(ms(s.arrive(job(1, 99), SimTime::ZERO, &mut rng)), 11);
        assert_eq!(ms(s.arrive(job(2, 99), SimTime::ZERO, &mut rng)), 21);
    }

    #[test]
    fn a_stall_holds_arrivals_and_releases_them_when_it_ends() {
        use crate::model::fault::{Fault, FaultEffect};
        let mut rng = Pcg64::seed_from_u64(1);
        let cfg = server(2, 3, Discipline::Fifo).config().clone();
        let s_ = |n: u64| SimTime(n * 1_000_000_000);
        let faults = Faults::new(vec![Fault {
            from: s_(1),
            to: s_(2),
            effect: FaultEffect::Concurrency(0),
            replica: None,
        }]);
        let mut s = QueueServer::with_faults(cfg, faults);
        assert!(matches!(
            s.arrive(job(0, 99_999), SimTime::ZERO, &mut rng),
            Admission::Start(_)
        ));
        assert!(
            s.refresh_workers(s_(1), &mut rng, |_| false).is_empty(),
            "the stall starts"
        );
        assert_eq!(s.workers(), Some(0));
        // The attempt in service keeps its worker but nothing new starts.
        assert_eq!(s.complete(s_(1), &mut rng, |_| false), None);
        for i in 1..4 {
            assert_eq!(s.arrive(job(i, 99_999), s_(1), &mut rng), Admission::Queued);
        }
        assert_eq!(
            s.arrive(job(4, 99_999), s_(1), &mut rng),
            Admission::Rejected,
            "queue_limit still applies"
        );
        let started = s.refresh_workers(s_(2), &mut rng, |_| false);
        let slots: Vec<u32> = started.iter().map(|(j, _)| j.slot).collect();
        assert_eq!(slots, vec![1, 2], "two workers again, oldest first");
        assert_eq!((s.in_service(), s.queue_len()), (2, 1));
    }

    #[test]
    fn a_slowdown_window_stretches_service_that_starts_inside_it() {
        use crate::model::fault::{Fault, FaultEffect};
        let mut rng = Pcg64::seed_from_u64(1);
        let cfg = server(10, 0, Discipline::Fifo).config().clone();
        let faults = Faults::new(vec![Fault {
            from: SimTime(5_000_000),
            to: SimTime(10_000_000),
            effect: FaultEffect::ServiceTimeFactor(3.0),
            replica: None,
        }]);
        let mut s = QueueServer::with_faults(cfg, faults);
        let at = |ms: u64, s: &mut QueueServer, rng: &mut Pcg64| match s.arrive(
            job(0, 99),
            SimTime(ms * 1_000_000),
            rng,
        ) {
            Admission::Start(d) => d.as_nanos() / 1_000_000,
            other => panic!("{other:?}"),
        };
        assert_eq!(at(4, &mut s, &mut rng), 1);
        assert_eq!(at(5, &mut s, &mut rng), 3);
        assert_eq!(at(10, &mut s, &mut rng), 1);
    }
    const CODEL: Discipline = Discipline::Codel {
        target: SimDuration::from_millis(5),
        interval: SimDuration::from_millis(100),
    };

    fn ms(n: u64) -> SimTime {
        SimTime(n * 1_000_000)
    }

    /// The slots of the attempts shed so far, in arrival order.
    fn shed_slots(s: &mut QueueServer) -> Vec<u32> {
        let mut slots: Vec<u32> = std::iter::from_fn(|| s.pop_shed())
            .map(|j| j.slot)
            .collect();
        slots.sort_unstable();
        slots
    }

    #[test]
    fn codel_sheds_exactly_the_attempts_that_waited_past_the_target_in_a_standing_queue() {
        let mut rng = Pcg64::seed_from_u64(1);
        let mut s = server(1, 100, CODEL);
        assert!(matches!(
            s.arrive(job(0, 99_999), ms(0), &mut rng),
            Admission::Start(_)
        ));
        // The waiting room holds attempts from 0 ms on: at 300 ms the queue is standing.
        let just_over = SimTime(ms(295).0 - 1);
        for (slot, at) in [(1, ms(0)), (2, ms(10)), (3, ms(200)), (4, just_over)] {
            assert_eq!(s.arrive(job(slot, 99_999), at, &mut rng), Admission::Queued);
        }
        for (slot, at) in [(5, 295), (6, 298), (7, 299)] {
            assert_eq!(
                s.arrive(job(slot, 99_999), ms(at), &mut rng),
                Admission::Queued
            );
        }
        let (next, _) = s.complete(ms(300), &mut rng, |_| false).unwrap();
        // Slots 1 to 4 waited 300, 290, 100 and 5 ms + 1 ns: shed. Slot 5 waited exactly
        // the target, 5 ms.
        assert_eq!(next.slot, 5);
        assert_eq!((s.shed, s.expired_dropped, s.cancelled), (4, 0, 0));
        assert_eq!(shed_slots(&mut s), vec![1, 2, 3, 4]);
        assert_eq!(
            s.pop_dropped(),
            None,
            "shed attempts are not silently dropped"
        );
        // The rest in arrival order, each 3 ms old when its turn comes.
        let (next, _) = s.complete(ms(301), &mut rng, |_| false).unwrap();
        assert_eq!(next.slot, 6);
        let (next, _) = s.complete(ms(302), &mut rng, |_| false).unwrap();
        assert_eq!(next.slot, 7);
        assert_eq!(s.complete(ms(303), &mut rng, |_| false), None);
        assert_eq!((s.shed, s.queue_len()), (4, 0));
    }

    #[test]
    fn codel_allows_the_interval_right_after_the_waiting_room_was_empty() {
        let mut rng = Pcg64::seed_from_u64(1);
        let mut s = server(1, 100, CODEL);
        s.arrive(job(0, 99_999), ms(0), &mut rng);
        // The waiting room is empty until 1000 ms.
        s.arrive(job(1, 99_999), ms(1000), &mut rng);
        s.arrive(job(2, 99_999), ms(1000), &mut rng);
        // 60 ms later it has not been non-empty for a whole interval: the limit is 100 ms,
        // so an attempt 60 ms old (far past the 5 ms target) is served.
        let (next, _) = s.complete(ms(1060), &mut rng, |_| false).unwrap();
        assert_eq!((next.slot, s.shed), (1, 0));
        // At 1100 ms it has held attempts for the whole interval: the limit is the target.
        assert_eq!(s.complete(ms(1100), &mut rng, |_| false), None);
        assert_eq!((s.shed, shed_slots(&mut s)), (1, vec![2]));
        // Emptied, the waiting room starts a new stretch: again the interval applies.
        s.arrive(job(0, 99_999), ms(1100), &mut rng);
        s.arrive(job(3, 99_999), ms(1150), &mut rng);
        let (next, _) = s.complete(ms(1249), &mut rng, |_| false).unwrap();
        assert_eq!(
            (next.slot, s.shed),
            (3, 1),
            "99 ms old, non-empty for 99 ms"
        );
    }

    #[test]
    fn codel_leaves_expired_and_cancelled_attempts_to_their_own_counts() {
        let mut rng = Pcg64::seed_from_u64(1);
        let mut s = server(1, 100, CODEL);
        s.arrive(job(0, 99_999), ms(0), &mut rng);
        s.arrive(job(1, 100), ms(0), &mut rng); // its client gives up at 100 ms
        s.arrive(job(2, 99_999), ms(0), &mut rng); // cancelled
        s.arrive(job(3, 99_999), ms(0), &mut rng); // too old
        assert_eq!(s.complete(ms(500), &mut rng, |j| j.slot == 2), None);
        assert_eq!((s.expired_dropped, s.cancelled, s.shed), (1, 1, 1));
        assert_eq!(shed_slots(&mut s), vec![3]);
    }

    #[test]
    fn adaptive_lifo_serves_newest_first_only_while_the_queue_stands() {
        let mut rng = Pcg64::seed_from_u64(1);
        let interval = SimDuration::from_millis(100);
        let mut s = server(1, 100, Discipline::AdaptiveLifo { interval });
        s.arrive(job(0, 99_999), ms(0), &mut rng);
        for slot in 1..=4 {
            s.arrive(job(slot, 99_999), ms(0), &mut rng);
        }
        fn next(at: u64, s: &mut QueueServer, rng: &mut Pcg64) -> Option<u32> {
            s.complete(ms(at), rng, |_| false).map(|(j, _)| j.slot)
        }
        // Not yet standing (non-empty for 50 ms): oldest first.
        assert_eq!(next(50, &mut s, &mut rng), Some(1));
        // Standing at 100 ms: newest first.
        assert_eq!(next(100, &mut s, &mut rng), Some(4));
        assert_eq!(next(150, &mut s, &mut rng), Some(3));
        assert_eq!(
            next(900, &mut s, &mut rng),
            Some(2),
            "nothing is shed, however old"
        );
        assert_eq!(s.queue_len(), 0);
        // Empty again: a new stretch is served oldest first until it has lasted 100 ms.
        for (slot, at) in [(5, 1000), (6, 1010), (7, 1020)] {
            s.arrive(job(slot, 99_999), ms(at), &mut rng);
        }
        assert_eq!(next(1099, &mut s, &mut rng), Some(5));
        assert_eq!(next(1100, &mut s, &mut rng), Some(7));
        assert_eq!((s.shed, s.expired_dropped), (0, 0));
    }
}
