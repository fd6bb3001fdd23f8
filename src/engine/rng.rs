//! Seeded random streams, handed out by number.
//!
//! Every replication of every variant draws from the same set of PCG streams, derived from the
//! scenario seed and the replication index only; a stream is then picked by its id. The engine
//! gives the ids no meaning: the model names them (`crate::model::streams`), one per purpose, so
//! a variant that changes the retry policy still meets the same arrivals and the same service
//! times (common random numbers). Nothing here seeds from entropy.

use rand_pcg::Pcg64;

/// The random streams of one replication: one PCG stream for every id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Streams {
    /// The PCG state every stream of the replication starts from.
    state: u128,
}

impl Streams {
    /// The streams of replication `replication` (0-based) under scenario seed `seed`.
    pub fn new(seed: u64, replication: u64) -> Self {
        Streams {
            state: replication_state(seed, replication),
        }
    }

    /// Stream `id`, from its start: the same id always gives the same numbers, and two ids
    /// give unrelated ones.
    pub fn stream(&self, id: u64) -> Pcg64 {
        Pcg64::new(self.state, u128::from(id))
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
    fn same_seed_same_streams_and_ids_differ() {
        let (a, b) = (Streams::new(7, 3), Streams::new(7, 3));
        assert_eq!(a.stream(2).next_u64(), b.stream(2).next_u64());
        assert_ne!(a.stream(2).next_u64(), a.stream(1).next_u64());
        assert_ne!(
            Streams::new(7, 3).stream(0).next_u64(),
            Streams::new(7, 4).stream(0).next_u64()
        );
    }

    /// A stream is the PCG stream of its id over the replication's state: a change here would
    /// change every run.
    #[test]
    fn a_stream_is_pcg_over_the_replication_state() {
        let state = replication_state(7, 3);
        assert_eq!(
            Streams::new(7, 3).stream(5).next_u64(),
            Pcg64::new(state, 5).next_u64()
        );
    }
}
