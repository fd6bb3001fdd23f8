//! Seeded random streams, one per purpose.
//!
//! Every replication of every variant draws from the same set of PCG streams, derived from the
//! scenario seed and the replication index only. Each purpose (arrivals, network, service,
//! failures, jitter, for call graphs routes and fallbacks, adaptive throttling's rejections) has
//! its own stream, so a variant that changes the retry policy still meets the same arrivals
//! and the same service times: common random numbers. Nothing here seeds from entropy.

use rand_pcg::Pcg64;

/// What a random stream is used for. Each purpose is a separate PCG stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Arrival times, client choice, think times, start spread, request classes.
    Arrivals = 0,
    /// One-way network delays.
    Network = 1,
    /// Service times.
    Service = 2,
    /// Error draws at the server.
    Failures = 3,
    /// Backoff jitter.
    Jitter = 4,
    /// Call graphs: the route a request takes, bad calls to downstream services.
    Routes = 5,
    /// Call graphs: fallback latencies.
    Fallbacks = 6,
    /// Adaptive throttling: a client's local rejections.
    Throttle = 7,
}

/// The random streams of one replication.
pub struct Streams {
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
}

impl Streams {
    /// The streams of replication `replication` (0-based) under scenario seed `seed`.
    pub fn new(seed: u64, replication: u64) -> Self {
        let state = replication_state(seed, replication);
        let stream = |p: Purpose| Pcg64::new(state, p as u128);
        Streams {
            arrivals: stream(Purpose::Arrivals),
            network: stream(Purpose::Network),
            service: stream(Purpose::Service),
            failures: stream(Purpose::Failures),
            jitter: stream(Purpose::Jitter),
            routes: stream(Purpose::Routes),
            fallbacks: stream(Purpose::Fallbacks),
            throttle: stream(Purpose::Throttle),
        }
    }
}

/// Mixes (seed, replication) into a 128-bit PCG state with SplitMix64, so that nearby seeds and
/// replications give unrelated states.
pub fn replication_state(seed: u64, replication: u64) -> u128 {
    let hi = splitmix64(seed ^ 0x5265_7472_7953_746f); // "RetrySto"
    let lo = splitmix64(hi ^ splitmix64(replication.wrapping_add(0x726d)));
    ((hi as u128) << 64) | lo as u128
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn same_seed_same_streams_and_purposes_differ() {
        let mut a = Streams::new(7, 3);
        let mut b = Streams::new(7, 3);
        assert_eq!(a.service.next_u64(), b.service.next_u64());
        let mut c = Streams::new(7, 3);
        assert_ne!(c.service.next_u64(), c.network.next_u64());
        let mut d = Streams::new(7, 4);
        assert_ne!(
            Streams::new(7, 3).arrivals.next_u64(),
            d.arrivals.next_u64()
        );
    }
}
