//! The future event list: a min-heap ordered by (time, insertion sequence).
//!
//! Events scheduled for the same instant come out in the order they were scheduled (first in,
//! first out), which makes every run reproducible without relying on how a heap breaks ties.
//! Invariant: [`EventQueue::pop`] never returns an event earlier than the last one it returned,
//! and [`EventQueue::schedule`] refuses (panics on) an event in the past. The queue holds
//! only pending events, so its memory follows what is in flight.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::time::SimTime;

/// One pending event with its ordering key.
struct Entry<E> {
    time: u64,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest (time, seq) first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// A priority queue of events keyed by simulated time, FIFO among equal times.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    now: SimTime,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at time zero.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            next_seq: 0,
            now: SimTime::ZERO,
            popped: 0,
        }
    }

    /// The time of the last event popped (zero before the first).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Schedules `event` at `time`.
    ///
    /// # Panics
    /// If `time` is earlier than [`EventQueue::now`]: the model must never schedule into the
    /// past, and a silent reorder would corrupt the run.
    pub fn schedule(&mut self, time: SimTime, event: E) {
        assert!(
            time >= self.now,
            "event scheduled in the past: {} < {}",
            time.as_nanos(),
            self.now.as_nanos()
        );
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry {
            time: time.as_nanos(),
            seq,
            event,
        });
    }

    /// Removes and returns the earliest event, advancing [`EventQueue::now`] to its time.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let entry = self.heap.pop()?;
        let time = SimTime(entry.time);
        debug_assert!(time >= self.now, "time ran backwards");
        self.now = time;
        self.popped += 1;
        Some((time, entry.event))
    }

    /// The time of the earliest pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| SimTime(e.time))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Number of events popped so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn equal_times_come_out_in_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(5), 'b');
        q.schedule(SimTime(1), 'a');
        q.schedule(SimTime(5), 'c');
        q.schedule(SimTime(5), 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['a', 'b', 'c', 'd']);
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn scheduling_into_the_past_panics() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(10), ());
        q.pop();
        q.schedule(SimTime(9), ());
    }

    proptest! {
        /// Interleaved pushes and pops agree with a `BTreeMap` keyed by (time, sequence).
        #[test]
        fn agrees_with_btreemap_oracle(ops in prop::collection::vec((any::<bool>(), 0u64..50), 1..400)) {
            let mut q = EventQueue::new();
            let mut oracle: BTreeMap<(u64, u64), u64> = BTreeMap::new();
            let mut seq = 0u64;
            for (push, delta) in ops {
                if push {
                    let t = q.now().as_nanos() + delta;
                    q.schedule(SimTime(t), seq);
                    oracle.insert((t, seq), seq);
                    seq += 1;
                } else {
                    let expected = oracle.pop_first();
                    let got = q.pop();
                    prop_assert_eq!(got.map(|(t, e)| ((t.as_nanos(), e), e)), expected);
                }
                prop_assert_eq!(q.len(), oracle.len());
            }
            let mut last = q.now();
            while let Some((t, e)) = q.pop() {
                prop_assert!(t >= last);
                last = t;
                prop_assert_eq!(oracle.pop_first(), Some(((t.as_nanos(), e), e)));
            }
            prop_assert!(oracle.is_empty());
        }
    }
}
