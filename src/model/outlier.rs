//! A caller's outlier detector over the replicas of one service: Envoy's consecutive-failure
//! detection (`outlier_detection` of a cluster: `consecutive_5xx`,
//! `consecutive_gateway_failure`, `interval`, `base_ejection_time`, `max_ejection_time`,
//! `max_ejection_percent`, `always_eject_one_host`), as
//! `source/common/upstream/outlier_detection_impl.cc` implements it, with
//! `split_external_local_origin_errors` off (a timeout counts as a 504) and no jitter. The
//! success-rate and failure-percentage detectors are not modelled.
//!
//! Each answer the caller gets from a replica is reported ([`Report::of`]): a 5xx adds one to
//! the replica's consecutive-5xx count, a gateway failure (502/503/504) to its
//! consecutive-gateway-failure count as well, anything else resets both. A count that reaches
//! its threshold asks to eject the replica, and is reset whether or not the ejection is
//! allowed: it is allowed while the replicas ejected, this one included, are at most
//! `max_ejection_percent` of the pool (or, with `always_eject_one_host`, when none is). An
//! ejected replica's multiplier grows by one (while multiplier x base stays below max + base),
//! and it stays out until the first interval tick at least min(base x multiplier, max) after
//! its ejection; at each tick, a replica that is in and was let back at least an interval
//! before has its multiplier lowered by one. Ticks fall every `interval` from the start of
//! the run.
//!
//! The ticks are not events: a detector is brought up to an instant ([`Detector::advance`])
//! before anything reads or changes it then, which runs every tick due by that instant, in
//! order, first. Nothing else happens to a detector between ticks, so this is the state the
//! ticks would leave as events; a tick at the instant of an answer comes before it.

use crate::engine::{SimDuration, SimTime};

use super::Outcome;

/// `outlier_detection`, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutlierConfig {
    /// Consecutive 5xx answers that eject a replica (>= 1).
    pub consecutive_5xx: u32,
    /// Consecutive gateway failures that eject a replica (>= 1), or `None`: not enforced
    /// (Envoy's default `enforcing_consecutive_gateway_failure` of 0).
    pub consecutive_gateway_failure: Option<u32>,
    /// Time between ticks (> 0).
    pub interval: SimDuration,
    /// The ejection time of a first ejection (> 0).
    pub base_ejection_time: SimDuration,
    /// The longest ejection time (>= `base_ejection_time`).
    pub max_ejection_time: SimDuration,
    /// The largest share of the pool ejected at once, in percent (0 to 100).
    pub max_ejection_percent: u32,
    /// Eject one replica even where the share forbids it, when none is ejected.
    pub always_eject_one_host: bool,
}

/// What an answer from a replica tells its caller's detector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// Anything but a 5xx (a success, a 4xx such as `permanent` or `throttled`): resets both
    /// counts.
    Fine,
    /// A 5xx that is not a gateway failure (`error`): one more consecutive 5xx; the
    /// consecutive gateway failures start over.
    ServerError,
    /// A 502, 503 or 504 (`rejected`, `timeout`): one more of both counts.
    GatewayFailure,
}

impl Report {
    /// How an attempt's outcome, as its caller sees it, counts: `error` is a 500; `rejected`
    /// (a full queue, CoDel's shedding) a 503 and `timeout` a 504, both gateway failures;
    /// `success`, `degraded`, `permanent` (a 4xx) and `throttled` (a 429) are not 5xx; any
    /// other failure a service answers with is a 500.
    pub fn of(outcome: Outcome) -> Report {
        match outcome {
            Outcome::Success | Outcome::Degraded | Outcome::Permanent | Outcome::Throttled => {
                Report::Fine
            }
            Outcome::Rejected | Outcome::Timeout | Outcome::BulkheadFull => Report::GatewayFailure,
            _ => Report::ServerError,
        }
    }
}

/// One replica as its caller's detector sees it.
#[derive(Debug, Clone, Default)]
struct Host {
    consecutive_5xx: u32,
    consecutive_gateway: u32,
    /// When it was ejected, while it is.
    ejected_at: Option<SimTime>,
    /// Envoy's `ejectTimeBackoff`: the multiplier of the next ejection time.
    multiplier: u64,
    /// When it was last let back.
    unejected_at: Option<SimTime>,
    /// Ejections so far.
    ejections: u64,
    /// Time spent ejected, in nanoseconds, up to its last return.
    ejected_nanos: u64,
}

/// One caller's detector over `n` replicas.
#[derive(Debug, Clone)]
pub struct Detector {
    config: OutlierConfig,
    hosts: Vec<Host>,
    /// Replicas ejected now.
    ejected: u32,
    /// The next tick.
    next_tick: SimTime,
}

/// A replica's ejections and the time it spent ejected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ejections {
    /// Times ejected.
    pub count: u64,
    /// Nanoseconds spent ejected.
    pub nanos: u64,
}

impl Detector {
    /// A detector of `config` over `replicas` (>= 1) replicas, none ejected.
    pub fn new(config: OutlierConfig, replicas: u32) -> Self {
        Detector {
            config,
            hosts: vec![Host::default(); replicas as usize],
            ejected: 0,
            next_tick: SimTime::ZERO + config.interval,
        }
    }

    /// Runs every tick due by `now`, in order. Returns whether a replica came back.
    pub fn advance(&mut self, now: SimTime) -> bool {
        let mut changed = false;
        while self.next_tick <= now {
            let t = self.next_tick;
            changed |= self.tick(t);
            self.next_tick = t + self.config.interval;
        }
        changed
    }

    /// One interval tick at `t`: replicas whose ejection time has passed come back, then each
    /// replica that is in and came back at least an interval ago has its multiplier lowered.
    fn tick(&mut self, t: SimTime) -> bool {
        let (base, max) = (
            self.config.base_ejection_time.as_nanos(),
            self.config.max_ejection_time.as_nanos(),
        );
        let mut changed = false;
        for h in &mut self.hosts {
            let Some(at) = h.ejected_at else { continue };
            let time = (u128::from(base) * u128::from(h.multiplier)).min(u128::from(max));
            if time <= u128::from((t - at).as_nanos()) {
                h.ejected_nanos += (t - at).as_nanos();
                h.ejected_at = None;
                h.unejected_at = Some(t);
                h.consecutive_5xx = 0;
                h.consecutive_gateway = 0;
                self.ejected -= 1;
                changed = true;
            }
        }
        for h in &mut self.hosts {
            if h.ejected_at.is_none()
                && h.unejected_at
                    .is_some_and(|u| t - u >= self.config.interval)
            {
                h.multiplier = h.multiplier.saturating_sub(1);
            }
        }
        changed
    }

    /// Replica `k` answered with `report` at `now` (the detector already brought up to
    /// `now`). Returns whether the replica was ejected.
    pub fn report(&mut self, k: u32, report: Report, now: SimTime) -> bool {
        let c = self.config;
        let h = &mut self.hosts[k as usize];
        if report == Report::Fine {
            h.consecutive_5xx = 0;
            h.consecutive_gateway = 0;
            return false;
        }
        let mut gateway_due = false;
        if report == Report::GatewayFailure {
            if let Some(threshold) = c.consecutive_gateway_failure {
                h.consecutive_gateway += 1;
                gateway_due = h.consecutive_gateway == threshold;
            }
        } else {
            h.consecutive_gateway = 0;
        }
        h.consecutive_5xx += 1;
        let five_due = h.consecutive_5xx == c.consecutive_5xx;
        // Envoy's order: the gateway count's detection first.
        let mut ejected = gateway_due && self.detected(k, true, now);
        ejected |= five_due && self.detected(k, false, now);
        ejected
    }

    /// A count of replica `k` reached its threshold (`gateway`: the gateway failures', else
    /// the 5xx') at `now`: unless the replica is out already, it is ejected if the share
    /// allows, and the count starts over either way. Returns whether it was ejected.
    fn detected(&mut self, k: u32, gateway: bool, now: SimTime) -> bool {
        if self.hosts[k as usize].ejected_at.is_some() {
            return false;
        }
        let ejected = self.may_eject();
        if ejected {
            self.eject(k, now);
        }
        let h = &mut self.hosts[k as usize];
        if gateway {
            h.consecutive_gateway = 0;
        } else {
            h.consecutive_5xx = 0;
        }
        ejected
    }

    /// Whether one more replica may be ejected: Envoy's `100 (ejected + 1) / n <=
    /// max_ejection_percent`, in integers, or none is out and `always_eject_one_host` is set.
    fn may_eject(&self) -> bool {
        let n = self.hosts.len() as u64;
        let share =
            100 * (u64::from(self.ejected) + 1) <= u64::from(self.config.max_ejection_percent) * n;
        share || (self.config.always_eject_one_host && self.ejected == 0)
    }

    /// Ejects replica `k` at `now`.
    fn eject(&mut self, k: u32, now: SimTime) {
        let c = self.config;
        let h = &mut self.hosts[k as usize];
        h.ejected_at = Some(now);
        h.ejections += 1;
        let (base, max) = (
            u128::from(c.base_ejection_time.as_nanos()),
            u128::from(c.max_ejection_time.as_nanos()),
        );
        if u128::from(h.multiplier) * base < max + base {
            h.multiplier += 1;
        }
        self.ejected += 1;
    }

    /// Whether replica `k` is ejected.
    pub fn is_ejected(&self, k: u32) -> bool {
        self.hosts[k as usize].ejected_at.is_some()
    }

    /// Replicas ejected now.
    pub fn ejected(&self) -> u32 {
        self.ejected
    }

    /// Whether the pool is in panic: fewer than half its replicas are in (Envoy's default
    /// `healthy_panic_threshold` of 50 %), so its balancer ignores ejections.
    pub fn panics(&self) -> bool {
        2 * (self.hosts.len() as u64 - u64::from(self.ejected)) < self.hosts.len() as u64
    }

    /// The replicas a balancer may pick: `None` for all of them (none ejected, or a pool in
    /// panic), else those in, in order.
    pub fn eligible(&self) -> Option<Vec<u32>> {
        if self.ejected == 0 || self.panics() {
            return None;
        }
        Some(
            (0..self.hosts.len() as u32)
                .filter(|&k| !self.is_ejected(k))
                .collect(),
        )
    }

    /// Each replica's ejections and time ejected up to `end` (the detector brought up to
    /// `end`), a replica still out counted as out until then.
    pub fn ejections(&self, end: SimTime) -> impl Iterator<Item = Ejections> + '_ {
        self.hosts.iter().map(move |h| Ejections {
            count: h.ejections,
            nanos: h.ejected_nanos + h.ejected_at.map_or(0, |at| (end - at).as_nanos()),
        })
    }

    /// The multiplier of replica `k`'s next ejection time.
    pub fn multiplier(&self, k: u32) -> u64 {
        self.hosts[k as usize].multiplier
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(max_ejection_percent: u32) -> OutlierConfig {
        OutlierConfig {
            consecutive_5xx: 5,
            consecutive_gateway_failure: None,
            interval: SimDuration::from_secs(10),
            base_ejection_time: SimDuration::from_secs(30),
            max_ejection_time: SimDuration::from_secs(300),
            max_ejection_percent,
            always_eject_one_host: false,
        }
    }

    fn at(s: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_secs(s)
    }

    /// Reports `n` errors of replica `k` at `t`, returning whether the last ejected it.
    fn errors(d: &mut Detector, k: u32, n: u32, t: SimTime) -> bool {
        d.advance(t);
        (0..n).fold(false, |_, _| d.report(k, Report::ServerError, t))
    }

    #[test]
    fn the_fifth_consecutive_error_ejects_and_a_success_starts_the_count_over() {
        let mut d = Detector::new(config(25), 4);
        assert!(!errors(&mut d, 0, 4, at(1)));
        d.report(0, Report::Fine, at(1));
        assert!(!errors(&mut d, 0, 4, at(1)));
        assert!(errors(&mut d, 0, 1, at(2)));
        assert_eq!(d.eligible(), Some(vec![1, 2, 3]));
    }

    #[test]
    fn an_ejection_lasts_until_the_first_tick_its_time_has_passed() {
        let mut d = Detector::new(config(25), 4);
        assert!(errors(&mut d, 0, 5, at(5)));
        // 30 s after 5 s is 35 s: the ticks at 10, 20 and 30 s keep it out, 40 s lets it in.
        assert!(!d.advance(at(39)));
        assert!(d.is_ejected(0));
        assert!(d.advance(at(40)));
        assert!(!d.is_ejected(0));
        // Ejected again at once: the multiplier is 2, so 60 s from 40 s, back at the 100 s tick.
        assert!(errors(&mut d, 0, 5, at(40)));
        assert_eq!(d.multiplier(0), 2);
        d.advance(at(99));
        assert!(d.is_ejected(0));
        d.advance(at(100));
        assert!(!d.is_ejected(0));
        let e: Vec<Ejections> = d.ejections(at(100)).collect();
        assert_eq!(
            e[0],
            Ejections {
                count: 2,
                nanos: 95_000_000_000
            }
        );
    }

    #[test]
    fn a_healthy_replica_loses_a_multiplier_each_interval() {
        let mut d = Detector::new(config(25), 4);
        assert!(errors(&mut d, 0, 5, at(0)));
        d.advance(at(30));
        assert!(!d.is_ejected(0));
        assert_eq!(
            d.multiplier(0),
            1,
            "no decrement at the tick that lets it in"
        );
        d.advance(at(40));
        assert_eq!(d.multiplier(0), 0);
    }

    #[test]
    fn the_multiplier_stops_growing_past_max_over_base() {
        // Ejected again at each return: out 30, 60, ... s, capped at 300 s, the ticks every
        // 10 s from 0 landing on each return. The multiplier grows while 30 m < 300 + 30, so
        // up to 11, and never falls: a replica let back at a tick is not lowered then.
        let mut d = Detector::new(config(100), 1);
        let mut t = 0;
        for n in 1..=15u64 {
            assert!(errors(&mut d, 0, 5, at(t)));
            assert_eq!(d.multiplier(0), n.min(11));
            let out = (30 * n).min(300);
            d.advance(at(t + out - 1));
            assert!(d.is_ejected(0), "ejection {n} lasts {out} s");
            t += out;
            d.advance(at(t));
            assert!(!d.is_ejected(0), "ejection {n} is over after {out} s");
        }
    }

    #[test]
    fn the_share_limits_ejections_as_envoy_rounds_it() {
        // 10 % of 4: one ejected would be 25 % > 10 %.
        let mut d = Detector::new(config(10), 4);
        assert!(!errors(&mut d, 0, 5, at(1)));
        let mut one = Detector::new(
            OutlierConfig {
                always_eject_one_host: true,
                ..config(10)
            },
            4,
        );
        assert!(errors(&mut one, 0, 5, at(1)));
        assert!(!errors(&mut one, 1, 5, at(1)), "only when none is out");
        // 25 % of 4: one, not two; 50 %: two.
        let mut d = Detector::new(config(25), 4);
        assert!(errors(&mut d, 0, 5, at(1)));
        assert!(!errors(&mut d, 1, 5, at(1)));
        let mut d = Detector::new(config(50), 4);
        assert!(errors(&mut d, 0, 5, at(1)));
        assert!(errors(&mut d, 1, 5, at(1)));
        assert!(!d.panics(), "2 of 4 in is not fewer than half");
        assert_eq!(d.eligible(), Some(vec![2, 3]));
    }

    #[test]
    fn a_refused_ejection_still_starts_the_count_over() {
        let mut d = Detector::new(config(10), 4);
        assert!(!errors(&mut d, 0, 5, at(1)));
        let mut one = Detector::new(
            OutlierConfig {
                always_eject_one_host: true,
                ..config(10)
            },
            4,
        );
        assert!(errors(&mut one, 1, 5, at(1)));
        // Replica 0's count starts over after its refused ejection: four more do nothing.
        assert!(!errors(&mut one, 0, 9, at(1)));
    }

    #[test]
    fn gateway_failures_eject_only_where_enforced_and_a_500_breaks_their_run() {
        let mut d = Detector::new(
            OutlierConfig {
                consecutive_5xx: 100,
                consecutive_gateway_failure: Some(3),
                ..config(25)
            },
            4,
        );
        d.report(0, Report::GatewayFailure, at(1));
        d.report(0, Report::GatewayFailure, at(1));
        d.report(0, Report::ServerError, at(1));
        assert!(!d.report(0, Report::GatewayFailure, at(1)));
        assert!(!d.report(0, Report::GatewayFailure, at(1)));
        assert!(d.report(0, Report::GatewayFailure, at(1)));
        // Timeouts count as 5xx too: five eject where gateway detection is off.
        let mut d = Detector::new(config(25), 4);
        let ejected = (0..5).fold(false, |_, _| d.report(2, Report::GatewayFailure, at(1)));
        assert!(ejected);
    }

    #[test]
    fn outcomes_count_as_envoy_maps_them() {
        assert_eq!(Report::of(Outcome::Error), Report::ServerError);
        assert_eq!(Report::of(Outcome::Rejected), Report::GatewayFailure);
        assert_eq!(Report::of(Outcome::Timeout), Report::GatewayFailure);
        assert_eq!(Report::of(Outcome::Throttled), Report::Fine);
        assert_eq!(Report::of(Outcome::Permanent), Report::Fine);
        assert_eq!(Report::of(Outcome::Success), Report::Fine);
    }

    proptest::proptest! {
        /// Whatever the answers and ticks, a detector never holds more replicas out than its
        /// share allows (one, with `always_eject_one_host`, where the share allows none), its
        /// count of ejected replicas is the replicas it says are out, and its balancer may
        /// pick only replicas that are in, or all of them in panic.
        #[test]
        fn never_more_than_the_allowed_share_is_ejected(
            replicas in 1u32..12,
            percent in 0u32..=100,
            one in proptest::bool::ANY,
            threshold in 1u32..4,
            steps in proptest::collection::vec((0u32..12, 0u8..3, 0u64..4000), 1..400),
        ) {
            let c = OutlierConfig {
                consecutive_5xx: threshold,
                consecutive_gateway_failure: Some(threshold + 1),
                interval: SimDuration::from_millis(1000),
                base_ejection_time: SimDuration::from_millis(1500),
                max_ejection_time: SimDuration::from_millis(5000),
                max_ejection_percent: percent,
                always_eject_one_host: one,
            };
            let allowed = (u64::from(percent) * u64::from(replicas) / 100) as u32;
            let allowed = if one { allowed.max(1) } else { allowed };
            let mut d = Detector::new(c, replicas);
            let mut now = SimTime::ZERO;
            for (k, kind, dt) in steps {
                now += SimDuration::from_millis(dt);
                d.advance(now);
                let report = [Report::Fine, Report::ServerError, Report::GatewayFailure];
                d.report(k % replicas, report[kind as usize], now);
                let out = (0..replicas).filter(|&k| d.is_ejected(k)).count() as u32;
                proptest::prop_assert_eq!(out, d.ejected());
                proptest::prop_assert!(out <= allowed, "{} out of {}, {} % allows {}", out, replicas, percent, allowed);
                match d.eligible() {
                    None => proptest::prop_assert!(out == 0 || d.panics()),
                    Some(e) => proptest::prop_assert!(e.iter().all(|&k| !d.is_ejected(k)) && e.len() as u32 == replicas - out),
                }
            }
        }
    }
}
