//! The future event list: a min-heap (4-ary, which pops faster than a binary heap) ordered
//! by (time, insertion sequence).
//!
//! Events scheduled for the same instant come out in the order they were scheduled (first in,
//! first out), which makes every run reproducible without relying on how a heap breaks ties.
//! Invariant: [`EventQueue::pop`] never returns an event earlier than the last one it returned,
//! and [`EventQueue::schedule`] refuses (panics on) an event in the past. The queue holds
//! only pending events, so its memory follows what is in flight.

use dary_heap::QuaternaryHeap;
use std::cmp::Ordering;
use std::collections::VecDeque;

use super::time::SimTime;

/// One pending event with its ordering key: the time in the high 64 bits and the insertion
/// sequence in the low 64, so one integer comparison orders by (time, sequence).
struct Entry<E> {
    key: u128,
    event: E,
}

impl<E> Entry<E> {
    fn time(&self) -> SimTime {
        SimTime((self.key >> 64) as u64)
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    /// Reversed, so that the max-heap pops the earliest (time, seq) first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// A priority queue of events keyed by simulated time, FIFO among equal times.
pub struct EventQueue<E> {
    heap: QuaternaryHeap<Entry<E>>,
    /// Timers scheduled in non-decreasing time order (a constant timeout after now): a FIFO
    /// that is already sorted, so they skip the heap.
    lane: VecDeque<Entry<E>>,
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
            heap: QuaternaryHeap::new(),
            lane: VecDeque::new(),
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
        let entry = self.entry(time, event);
        self.heap.push(entry);
    }

    /// Schedules a timer: like [`EventQueue::schedule`], with the same order, but cheaper when
    /// timers come in non-decreasing time order, as timeouts of a constant length do. Such a
    /// timer waits in a sorted FIFO lane instead of the heap; any other goes to the heap.
    pub fn schedule_timer(&mut self, time: SimTime, event: E) {
        let entry = self.entry(time, event);
        if self.lane.back().is_none_or(|last| last.key <= entry.key) {
            self.lane.push_back(entry);
        } else {
            self.heap.push(entry);
        }
    }

    fn entry(&mut self, time: SimTime, event: E) -> Entry<E> {
        assert!(
            time >= self.now,
            "event scheduled in the past: {} < {}",
            time.as_nanos(),
            self.now.as_nanos()
        );
        let seq = self.next_seq;
        self.next_seq += 1;
        Entry {
            key: (u128::from(time.as_nanos()) << 64) | u128::from(seq),
            event,
        }
    }

    /// Removes and returns the earliest event, advancing [`EventQueue::now`] to its time.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let from_lane = match (self.lane.front(), self.heap.peek()) {
            (Some(l), Some(h)) => l.key < h.key,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let entry = if from_lane {
            self.lane.pop_front()
        } else {
            self.heap.pop()
        }?;
        let time = entry.time();
        debug_assert!(time >= self.now, "time ran backwards");
        self.now = time;
        self.popped += 1;
        Some((time, entry.event))
    }

    /// Drops every pending event for which `keep` is false (events the model knows to be
    /// stale, such as timers of attempts already answered). The order of the rest is kept.
    pub fn retain(&mut self, mut keep: impl FnMut(&E) -> bool) {
        self.lane.retain(|e| keep(&e.event));
        self.heap.retain(|e| keep(&e.event));
    }

    /// The time of the earliest pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        match (self.lane.front(), self.heap.peek()) {
            (Some(l), Some(h)) => Some(l.time().min(h.time())),
            (l, h) => l.or(h).map(Entry::time),
        }
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len() + self.lane.len()
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.lane.is_empty()
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
        fn agrees_with_btreemap_oracle(ops in prop::collection::vec((0u8..3, 0u64..50), 1..400)) {
            let mut q = EventQueue::new();
            let mut oracle: BTreeMap<(u64, u64), u64> = BTreeMap::new();
            let mut seq = 0u64;
            for (op, delta) in ops {
                if op > 0 {
                    let t = q.now().as_nanos() + delta;
                    if op == 1 {
                        q.schedule(SimTime(t), seq);
                    } else {
                        // Timers: mostly monotone (a constant offset), sometimes not.
                        q.schedule_timer(SimTime(t), seq);
                    }
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
