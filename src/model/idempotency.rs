//! A service's memory of idempotency keys: which calls it is executing, which it executed
//! (and what it answered) within the last `ttl`, and the repeats waiting for a result.
//!
//! A state machine over opaque keys and waiter handles: it answers lookups and hands back the
//! waiters a result is for; the driver schedules the answers. Memory follows the calls
//! executed within `ttl` plus those in progress: entries older than `ttl` are purged as time
//! passes.

use std::collections::{HashMap, VecDeque};

use crate::engine::{SimDuration, SimTime};
use crate::model::Outcome;

/// What a lookup of a key found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Nothing: the attempt executes, and now holds the key.
    Execute,
    /// An earlier attempt of the call holds the key: this one waits for its result.
    Wait,
    /// The call was executed within `ttl` and answered this.
    Remembered(Outcome),
}

#[derive(Debug)]
enum Entry {
    /// An attempt holds the key; these (slot, token) waiters wait for its result.
    InProgress(Vec<(u32, u32)>),
    /// Executed; remembered until the given instant.
    Done(Outcome, SimTime),
}

/// The keys one service remembers.
#[derive(Debug)]
pub struct KeyStore {
    ttl: SimDuration,
    entries: HashMap<u64, Entry>,
    /// Executed keys in the order they expire (every key lives `ttl` after its execution).
    expiry: VecDeque<(SimTime, u64)>,
    /// Repeats waiting for a result, over every key in progress.
    waiting: usize,
}

impl KeyStore {
    /// An empty store remembering executed calls for `ttl`.
    pub fn new(ttl: SimDuration) -> Self {
        KeyStore {
            ttl,
            entries: HashMap::new(),
            expiry: VecDeque::new(),
            waiting: 0,
        }
    }

    /// How long an executed call is remembered.
    pub fn ttl(&self) -> SimDuration {
        self.ttl
    }

    /// Forgets what expired by `now`.
    fn purge(&mut self, now: SimTime) {
        while let Some(&(until, key)) = self.expiry.front() {
            if until > now {
                break;
            }
            self.expiry.pop_front();
            // A key forgotten and executed again has a later expiry of its own.
            if let Some(Entry::Done(_, u)) = self.entries.get(&key)
                && *u == until
            {
                self.entries.remove(&key);
            }
        }
    }

    /// An attempt `waiter` of call `key` arrives at `now`.
    pub fn lookup(&mut self, key: u64, waiter: (u32, u32), now: SimTime) -> Lookup {
        self.purge(now);
        match self.entries.get_mut(&key) {
            None => {
                self.entries.insert(key, Entry::InProgress(Vec::new()));
                Lookup::Execute
            }
            Some(Entry::InProgress(waiters)) => {
                waiters.push(waiter);
                self.waiting += 1;
                Lookup::Wait
            }
            Some(Entry::Done(outcome, _)) => Lookup::Remembered(*outcome),
        }
    }

    /// The attempt holding `key` was executed at `now` and answered `outcome`. Returns the
    /// waiters to answer with it.
    pub fn executed(&mut self, key: u64, outcome: Outcome, now: SimTime) -> Vec<(u32, u32)> {
        let until = now + self.ttl;
        let waiters = match self.entries.insert(key, Entry::Done(outcome, until)) {
            Some(Entry::InProgress(w)) => w,
            _ => Vec::new(),
        };
        self.waiting -= waiters.len();
        self.expiry.push_back((until, key));
        waiters
    }

    /// The attempt holding `key` was discarded without executing. Returns the waiter that
    /// holds the key now, if one waits (it executes in its place); otherwise the key is free.
    pub fn abandoned(&mut self, key: u64) -> Option<(u32, u32)> {
        match self.entries.get_mut(&key) {
            Some(Entry::InProgress(waiters)) if !waiters.is_empty() => {
                self.waiting -= 1;
                Some(waiters.remove(0))
            }
            Some(Entry::InProgress(_)) => {
                self.entries.remove(&key);
                None
            }
            _ => None,
        }
    }

    /// Keys held (in progress or remembered).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Keys held plus the repeats waiting for a result: what the store's memory follows,
    /// which `limits.max_in_flight` bounds.
    pub fn held(&self) -> u64 {
        (self.entries.len() + self.waiting) as u64
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> SimTime {
        SimTime(ms * 1_000_000)
    }

    #[test]
    fn a_repeat_waits_while_the_first_executes_then_is_remembered_until_ttl() {
        let mut k = KeyStore::new(SimDuration::from_millis(100));
        assert_eq!(k.lookup(7, (1, 1), at(0)), Lookup::Execute);
        assert_eq!(k.lookup(7, (1, 2), at(5)), Lookup::Wait);
        assert_eq!(k.lookup(8, (2, 1), at(5)), Lookup::Execute, "another call");
        assert_eq!(k.executed(7, Outcome::Success, at(10)), vec![(1, 2)]);
        assert_eq!(
            k.lookup(7, (1, 3), at(109)),
            Lookup::Remembered(Outcome::Success)
        );
        // Forgotten at 110 ms: it executes again.
        assert_eq!(k.lookup(7, (1, 4), at(110)), Lookup::Execute);
        assert_eq!(k.len(), 2);
    }

    #[test]
    fn a_discarded_holder_hands_the_key_to_the_first_waiter() {
        let mut k = KeyStore::new(SimDuration::from_millis(100));
        assert_eq!(k.lookup(7, (1, 1), at(0)), Lookup::Execute);
        k.lookup(7, (1, 2), at(1));
        k.lookup(7, (1, 3), at(2));
        assert_eq!(k.held(), 3, "a key and two waiting repeats");
        assert_eq!(k.abandoned(7), Some((1, 2)));
        assert_eq!(k.held(), 2);
        assert_eq!(k.executed(7, Outcome::Error, at(5)), vec![(1, 3)]);
        assert_eq!(k.held(), 1, "the remembered key");
        assert_eq!(
            k.lookup(7, (1, 4), at(6)),
            Lookup::Remembered(Outcome::Error)
        );
        // A holder with no waiter frees the key.
        assert_eq!(k.lookup(9, (3, 1), at(6)), Lookup::Execute);
        assert_eq!(k.abandoned(9), None);
        assert_eq!(k.lookup(9, (3, 2), at(7)), Lookup::Execute);
    }

    #[test]
    fn memory_follows_the_keys_within_ttl() {
        let mut k = KeyStore::new(SimDuration::from_millis(10));
        for i in 0..10_000u64 {
            assert_eq!(k.lookup(i, (0, 1), at(i)), Lookup::Execute);
            k.executed(i, Outcome::Success, at(i));
            assert!(k.len() <= 11, "{} keys held at {i} ms", k.len());
        }
    }
}
