//! A semaphore bulkhead on one call edge, as Resilience4j's `SemaphoreBulkhead`: at most
//! `max_concurrent` attempts in flight on the edge; one beyond waits for a permit, in arrival
//! order, for at most `max_wait`.
//!
//! A state machine over opaque waiter handles: it does not schedule the end of a wait, and it
//! does not know whether a waiter still waits; the driver tells it ([`Bulkhead::release`]'s
//! `waiting`) and forgets waiters whose wait ended ([`Bulkhead::forget`]). Invariant: permits
//! in use never exceed `max_concurrent`, and a waiter is only queued while every permit is
//! in use.

use std::collections::VecDeque;

/// The state of one bulkhead.
#[derive(Debug, Clone)]
pub struct Bulkhead {
    max_concurrent: u32,
    in_use: u32,
    /// Waiters in arrival order, as (slot, token) handles; some may have stopped waiting.
    waiting: VecDeque<(u32, u32)>,
    /// Queued waiters known to have stopped waiting.
    gone: usize,
}

impl Bulkhead {
    /// A bulkhead with every one of its `max_concurrent` (>= 1) permits free.
    pub fn new(max_concurrent: u32) -> Self {
        Bulkhead {
            max_concurrent,
            in_use: 0,
            waiting: VecDeque::new(),
            gone: 0,
        }
    }

    /// Takes a permit if one is free and nobody waits for one before.
    pub fn try_acquire(&mut self) -> bool {
        if self.in_use < self.max_concurrent && self.waiting.len() == self.gone {
            self.in_use += 1;
            true
        } else {
            false
        }
    }

    /// Queues a waiter for the next free permit.
    pub fn wait(&mut self, waiter: (u32, u32)) {
        self.waiting.push_back(waiter);
    }

    /// A queued waiter stopped waiting (its wait ended). Stale entries are swept out when
    /// they are the majority, so the queue follows the waiters still waiting.
    pub fn forget(&mut self, waiting: impl Fn((u32, u32)) -> bool) {
        self.gone += 1;
        if self.gone * 2 > self.waiting.len() {
            self.waiting.retain(|w| waiting(*w));
            self.gone = 0;
        }
    }

    /// A permit comes back. Returns the waiter it goes to, if one still waits (`waiting`
    /// tells); otherwise the permit is free.
    pub fn release(&mut self, waiting: impl Fn((u32, u32)) -> bool) -> Option<(u32, u32)> {
        debug_assert!(self.in_use > 0, "a permit released that was never taken");
        while let Some(w) = self.waiting.pop_front() {
            if waiting(w) {
                return Some(w);
            }
            self.gone = self.gone.saturating_sub(1);
        }
        self.gone = 0;
        self.in_use -= 1;
        None
    }

    /// Permits in use.
    pub fn in_use(&self) -> u32 {
        self.in_use
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_go_to_waiters_in_arrival_order_and_gone_ones_are_skipped() {
        let mut b = Bulkhead::new(2);
        assert!(b.try_acquire());
        assert!(b.try_acquire());
        assert!(!b.try_acquire(), "both permits are taken");
        b.wait((1, 1));
        b.wait((2, 1));
        b.wait((3, 1));
        // Waiter 2 stops waiting; the sweep waits until the gone ones are a majority.
        let still = |w: (u32, u32)| w.0 != 2;
        b.forget(still);
        assert_eq!(b.release(still), Some((1, 1)));
        assert_eq!(b.release(still), Some((3, 1)));
        assert_eq!(b.in_use(), 2, "permits passed on stay in use");
        assert_eq!(b.release(still), None);
        assert_eq!(b.in_use(), 1);
        assert!(b.try_acquire());
        assert!(!b.try_acquire());
    }

    proptest::proptest! {
        /// Permits in use never exceed the limit, whatever the order of acquisitions,
        /// waits, forgets and releases.
        #[test]
        fn permits_in_use_stay_within_the_limit(
            max in 1u32..4,
            ops in proptest::collection::vec(0u8..3, 0..200),
        ) {
            let mut b = Bulkhead::new(max);
            let mut waiters: Vec<(u32, u32)> = Vec::new();
            let mut holders = 0u32;
            let mut next = 0u32;
            for op in ops {
                match op {
                    0 => {
                        if b.try_acquire() {
                            holders += 1;
                        } else {
                            next += 1;
                            b.wait((next, 0));
                            waiters.push((next, 0));
                        }
                    }
                    1 if !waiters.is_empty() => {
                        let gone = waiters.remove(0);
                        let w = waiters.clone();
                        let _ = gone;
                        b.forget(|x| w.contains(&x));
                    }
                    _ if holders > 0 => {
                        let w = waiters.clone();
                        match b.release(|x| w.contains(&x)) {
                            Some(x) => waiters.retain(|y| *y != x),
                            None => holders -= 1,
                        }
                    }
                    _ => {}
                }
                proptest::prop_assert!(b.in_use() <= max);
                proptest::prop_assert_eq!(b.in_use(), holders);
            }
        }
    }
}
