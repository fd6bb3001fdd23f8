//! A caller's load balancer over the replicas of one service: which replica an attempt goes
//! to. By default it is not the servers' view: it sees only the attempts its own caller has
//! out to each replica (sent and not yet over for the caller: answered, timed out or
//! abandoned), as an Envoy or gRPC client balancer does. A pick may instead be given each
//! replica's real load (what it holds, waiting or in service), [`Sees::Queue`], as a
//! balancer told by the servers would see it.
//!
//! Four kinds, named as Envoy's `lb_policy` and gRPC's balancers name them: `random`,
//! `round_robin`, `least_request` (power of `choice_count` choices: that many replicas drawn
//! at random, with replacement, and the one with the fewest outstanding attempts taken, the
//! first drawn on a tie) and `least_outstanding` (every replica looked at, the fewest
//! outstanding taken; a tie goes to the first met from a random starting replica).
//!
//! A pick may be asked to avoid replicas (a retry's `previous_hosts`): the balancer picks
//! again, at most `reselections` times, and a pick that still hits one is kept, as Envoy's
//! `host_selection_retry_max_attempts` does.
//!
//! Where its caller's outlier detector has ejected replicas (`crate::model::outlier`), the
//! balancer picks among the others only ([`Balancer::set_eligible`]), by the same rule: a
//! random pick or a least-request draw is uniform over them, a round robin takes the next of
//! them in turn, least outstanding looks at them alone; with every replica eligible, it draws
//! exactly as it would without a detector.

use rand::RngExt;
use rand_pcg::Pcg64;

/// Which replica a balancer takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BalancerKind {
    /// Uniformly at random.
    Random,
    /// Each replica in turn, from replica 0.
    RoundRobin,
    /// The fewest outstanding attempts among `choice_count` replicas drawn at random
    /// (`choice_count` >= 1; 2 is the power of two choices).
    LeastRequest { choice_count: u32 },
    /// The fewest outstanding attempts among all replicas.
    LeastOutstanding,
}

impl BalancerKind {
    /// Whether picks read the outstanding attempts (so they must be kept).
    pub fn counts(&self) -> bool {
        matches!(
            self,
            BalancerKind::LeastRequest { .. } | BalancerKind::LeastOutstanding
        )
    }
}

/// What a balancer that compares replicas (`least_request`, `least_outstanding`) reads of
/// each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sees {
    /// The attempts its own caller has out to the replica (the default, as Envoy and gRPC).
    #[default]
    Outstanding,
    /// What the replica holds, waiting or in service, whoever sent it.
    Queue,
}

/// One caller's balancer over `n` replicas.
#[derive(Debug, Clone)]
pub struct Balancer {
    kind: BalancerKind,
    /// Attempts out to each replica.
    outstanding: Vec<u32>,
    /// The next replica of a round robin.
    next: u32,
    /// The replicas it may pick, in order, where some are ejected; `None`: all of them.
    eligible: Option<Vec<u32>>,
}

impl Balancer {
    /// A balancer of `kind` over `replicas` (>= 1) replicas with nothing out.
    pub fn new(kind: BalancerKind, replicas: u32) -> Self {
        Balancer {
            kind,
            outstanding: vec![0; replicas as usize],
            next: 0,
            eligible: None,
        }
    }

    /// The number of replicas.
    pub fn replicas(&self) -> u32 {
        self.outstanding.len() as u32
    }

    /// Picks a replica for an attempt, picking again up to `reselections` times while the
    /// pick is one `avoid` rejects (the last pick is kept). The attempt is counted out to it.
    /// A balancer that compares replicas reads what its caller has out to each.
    pub fn pick(&mut self, rng: &mut Pcg64, reselections: u32, avoid: impl Fn(u32) -> bool) -> u32 {
        self.pick_seeing(rng, reselections, avoid, None)
    }

    /// As [`Balancer::pick`], but a balancer that compares replicas reads `queue(k)` of
    /// replica `k` where `queue` is given ([`Sees::Queue`]), else what its caller has out.
    pub fn pick_seeing(
        &mut self,
        rng: &mut Pcg64,
        reselections: u32,
        avoid: impl Fn(u32) -> bool,
        queue: Option<&dyn Fn(u32) -> u32>,
    ) -> u32 {
        let mut k = self.pick_once(rng, queue);
        for _ in 0..reselections {
            if !avoid(k) {
                break;
            }
            k = self.pick_once(rng, queue);
        }
        self.outstanding[k as usize] += 1;
        k
    }

    /// Counts an attempt out to replica `k` without picking: a sticky call's retry goes
    /// where its first attempt went.
    pub fn pick_again(&mut self, k: u32) -> u32 {
        self.outstanding[k as usize] += 1;
        k
    }

    /// The caller is no longer waiting for an attempt it sent to replica `k`.
    pub fn done(&mut self, k: u32) {
        self.outstanding[k as usize] -= 1;
    }

    /// Picks only among `eligible` (in increasing order, not empty) from now on, or among all
    /// replicas with `None`.
    pub fn set_eligible(&mut self, eligible: Option<Vec<u32>>) {
        self.eligible = eligible;
    }

    /// Whether replica `k` may be picked.
    pub fn is_eligible(&self, k: u32) -> bool {
        self.eligible
            .as_ref()
            .is_none_or(|e| e.binary_search(&k).is_ok())
    }

    /// One pick by the balancer's rule, reading `queue` of each replica where given.
    fn pick_once(&mut self, rng: &mut Pcg64, queue: Option<&dyn Fn(u32) -> u32>) -> u32 {
        if self.eligible.is_some() {
            return self.pick_eligible(rng, queue);
        }
        let n = self.replicas();
        let outstanding = &self.outstanding;
        let load = |k: u32| match queue {
            Some(q) => q(k),
            None => outstanding[k as usize],
        };
        match self.kind {
            BalancerKind::Random => rng.random_range(0..n),
            BalancerKind::RoundRobin => {
                let k = self.next;
                self.next = (k + 1) % n;
                k
            }
            BalancerKind::LeastRequest { choice_count } => {
                let mut best = rng.random_range(0..n);
                for _ in 1..choice_count {
                    let k = rng.random_range(0..n);
                    if load(k) < load(best) {
                        best = k;
                    }
                }
                best
            }
            BalancerKind::LeastOutstanding => {
                let start = rng.random_range(0..n);
                let mut best = start;
                for i in 1..n {
                    let k = (start + i) % n;
                    if load(k) < load(best) {
                        best = k;
                    }
                }
                best
            }
        }
    }
}

impl Balancer {
    /// One pick by the balancer's rule among the eligible replicas only, reading `queue` of
    /// each replica where given.
    #[cold]
    fn pick_eligible(&mut self, rng: &mut Pcg64, queue: Option<&dyn Fn(u32) -> u32>) -> u32 {
        let e = self.eligible.as_deref().expect("some replicas are ejected");
        let m = e.len() as u32;
        let outstanding = &self.outstanding;
        let load = |k: u32| match queue {
            Some(q) => q(k),
            None => outstanding[k as usize],
        };
        let fewest = |a: u32, b: u32| load(b) < load(a);
        match self.kind {
            BalancerKind::Random => e[rng.random_range(0..m) as usize],
            BalancerKind::RoundRobin => {
                // The first eligible replica at or after the one whose turn it is.
                let i = e.partition_point(|&k| k < self.next);
                let k = e.get(i).copied().unwrap_or(e[0]);
                self.next = (k + 1) % self.replicas();
                k
            }
            BalancerKind::LeastRequest { choice_count } => {
                let mut best = e[rng.random_range(0..m) as usize];
                for _ in 1..choice_count {
                    let k = e[rng.random_range(0..m) as usize];
                    if fewest(best, k) {
                        best = k;
                    }
                }
                best
            }
            BalancerKind::LeastOutstanding => {
                let start = rng.random_range(0..m);
                let mut best = e[start as usize];
                for i in 1..m {
                    let k = e[((start + i) % m) as usize];
                    if fewest(best, k) {
                        best = k;
                    }
                }
                best
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng() -> Pcg64 {
        Pcg64::seed_from_u64(7)
    }

    #[test]
    fn round_robin_takes_each_replica_in_turn() {
        let mut b = Balancer::new(BalancerKind::RoundRobin, 3);
        let picks: Vec<u32> = (0..7).map(|_| b.pick(&mut rng(), 0, |_| false)).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn least_outstanding_takes_the_idle_replica() {
        let mut b = Balancer::new(BalancerKind::LeastOutstanding, 4);
        let mut r = rng();
        let first: Vec<u32> = (0..4).map(|_| b.pick(&mut r, 0, |_| false)).collect();
        let mut sorted = first.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            [0, 1, 2, 3],
            "four picks with nothing answered fill every replica"
        );
        b.done(2);
        assert_eq!(b.pick(&mut r, 0, |_| false), 2);
    }

    #[test]
    fn a_balancer_that_sees_the_queue_reads_it_and_not_what_it_has_out() {
        // The caller has 3 out to replica 1 and nothing elsewhere, but replica 1 is the one
        // whose queue is empty: others' attempts fill replicas 0, 2 and 3.
        let mut b = Balancer::new(BalancerKind::LeastOutstanding, 4);
        for _ in 0..3 {
            b.pick_again(1);
        }
        let queue = |k: u32| if k == 1 { 0 } else { 5 };
        let mut r = rng();
        for _ in 0..20 {
            assert_eq!(b.pick_seeing(&mut r, 0, |_| false, Some(&queue)), 1);
            b.done(1);
        }
        // Without the queue it reads what it has out and avoids replica 1.
        assert_ne!(b.pick(&mut r, 0, |_| false), 1);
    }

    #[test]
    fn least_request_never_takes_the_busier_of_its_choices() {
        // Two replicas, two choices: the busier is taken only when both draws name it.
        let mut b = Balancer::new(BalancerKind::LeastRequest { choice_count: 2 }, 2);
        let mut r = rng();
        b.pick(&mut r, 0, |_| false);
        let mut busier = 0;
        for _ in 0..4000 {
            let before = b.outstanding.clone();
            let k = b.pick(&mut r, 0, |_| false);
            if before[k as usize] > before[1 - k as usize] {
                busier += 1;
            }
            b.done(k);
        }
        // One pair of draws in four names the busier replica twice.
        assert!((800..1200).contains(&busier), "{busier}");
    }

    #[test]
    fn every_kind_skips_the_replicas_it_may_not_pick() {
        let kinds = [
            BalancerKind::Random,
            BalancerKind::RoundRobin,
            BalancerKind::LeastRequest { choice_count: 2 },
            BalancerKind::LeastOutstanding,
        ];
        for kind in kinds {
            let mut b = Balancer::new(kind, 5);
            b.set_eligible(Some(vec![1, 3, 4]));
            let mut r = rng();
            let mut seen = [0u32; 5];
            for _ in 0..3000 {
                let k = b.pick(&mut r, 0, |_| false);
                seen[k as usize] += 1;
                b.done(k);
            }
            assert_eq!((seen[0], seen[2]), (0, 0), "{kind:?}: {seen:?}");
            // Each eligible replica gets about a third: binomial(3000, 1/3) has a standard
            // deviation of 26, so 5 of them is 130.
            for k in [1, 3, 4] {
                assert!((870..=1130).contains(&seen[k]), "{kind:?}: {seen:?}");
            }
        }
        let mut b = Balancer::new(BalancerKind::RoundRobin, 5);
        b.set_eligible(Some(vec![1, 3, 4]));
        let picks: Vec<u32> = (0..5).map(|_| b.pick(&mut rng(), 0, |_| false)).collect();
        assert_eq!(picks, [1, 3, 4, 1, 3]);
    }

    #[test]
    fn reselection_avoids_a_replica_as_often_as_it_may() {
        let mut r = rng();
        let mut b = Balancer::new(BalancerKind::Random, 4);
        let n = 40_000;
        let hits = (0..n)
            .filter(|_| {
                let k = b.pick(&mut r, 1, |k| k == 0);
                b.done(k);
                k == 0
            })
            .count();
        // Two draws that both hit replica 0: 1/16.
        let share = hits as f64 / n as f64;
        assert!((share - 1.0 / 16.0).abs() < 0.006, "{share}");
    }
}
