//! The model's random streams, one per purpose, and the stream id each purpose draws from.
//!
//! Each purpose has its own stream so that a variant which changes one part (the retry policy,
//! say) still meets the same arrivals, network delays and service times: common random
//! numbers. The ids are fixed: changing one changes every run's numbers.

use rand_pcg::Pcg64;

use crate::engine::Streams;

/// Arrival times, client choice, think times, start spread, request classes.
pub const ARRIVALS: u64 = 0;
/// One-way network delays.
pub const NETWORK: u64 = 1;
/// Service times.
pub const SERVICE: u64 = 2;
/// Error draws at the server.
pub const FAILURES: u64 = 3;
/// Backoff jitter.
pub const JITTER: u64 = 4;
/// Call graphs: the route a request takes, bad calls to downstream services.
pub const ROUTES: u64 = 5;
/// Call graphs: fallback latencies.
pub const FALLBACKS: u64 = 6;
/// Adaptive throttling: a client's local rejections.
pub const THROTTLE: u64 = 7;
/// Load balancers: the replica an attempt goes to.
pub const BALANCER: u64 = 8;
/// Groups of clients after the first: group g's arrival times, client choice, think times,
/// start spread and request classes come from stream `GROUP_ARRIVALS + g` (the first
/// group's from [`ARRIVALS`], so a file of one group draws what it always drew). Far above
/// the purposes, so that a new purpose never meets a group.
pub const GROUP_ARRIVALS: u64 = 1 << 32;

/// The arrival stream of group `group` (at least 1) of replication `replication` under seed
/// `seed`.
pub fn group_arrivals(seed: u64, replication: u64, group: u32) -> Pcg64 {
    Streams::new(seed, replication).stream(GROUP_ARRIVALS + u64::from(group))
}

/// The random streams of one replication, one per purpose.
pub struct Draws {
    /// Arrival times, client choice, think times, start spread, request classes.
    pub arrivals: Pcg64,
    /// One-way network delays.
    pub network: Pcg64,
    /// Service times.
    pub service: Pcg64,
    /// Error draws at the server.
    pub failures: Pcg64,
    /// Backoff jitter.
    pub jitter: Pcg64,
    /// Call graphs: the route a request takes, bad calls to downstream services.
    pub routes: Pcg64,
    /// Call graphs: fallback latencies.
    pub fallbacks: Pcg64,
    /// Adaptive throttling: a client's local rejections.
    pub throttle: Pcg64,
    /// Load balancers: the replica an attempt goes to.
    pub balancer: Pcg64,
}

impl Draws {
    /// The streams of replication `replication` (0-based) under scenario seed `seed`.
    pub fn new(seed: u64, replication: u64) -> Self {
        let streams = Streams::new(seed, replication);
        Draws {
            arrivals: streams.stream(ARRIVALS),
            network: streams.stream(NETWORK),
            service: streams.stream(SERVICE),
            failures: streams.stream(FAILURES),
            jitter: streams.stream(JITTER),
            routes: streams.stream(ROUTES),
            fallbacks: streams.stream(FALLBACKS),
            throttle: streams.stream(THROTTLE),
            balancer: streams.stream(BALANCER),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn same_seed_same_draws_and_purposes_differ() {
        let (mut a, mut b) = (Draws::new(7, 3), Draws::new(7, 3));
        assert_eq!(a.service.next_u64(), b.service.next_u64());
        let mut c = Draws::new(7, 3);
        assert_ne!(c.service.next_u64(), c.network.next_u64());
        assert_ne!(
            Draws::new(7, 3).arrivals.next_u64(),
            Draws::new(7, 4).arrivals.next_u64()
        );
    }

    /// Every purpose has its own id.
    #[test]
    fn the_ids_differ() {
        let mut ids = [
            ARRIVALS, NETWORK, SERVICE, FAILURES, JITTER, ROUTES, FALLBACKS, THROTTLE,
        ];
        ids.sort_unstable();
        assert!(ids.windows(2).all(|w| w[0] != w[1]));
    }
}
