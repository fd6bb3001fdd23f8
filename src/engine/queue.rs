//! The future event list: a 4-ary min-heap (`heap`) ordered by (time, insertion sequence),
//! beside a sorted lane for timers of a constant length and a slot for the one pending event
//! of a chain.
//!
//! Events scheduled for the same instant come out in the order they were scheduled (first in,
//! first out), which makes every run reproducible without relying on how a heap breaks ties.
//! A [`Ticket`] taken earlier lets an event be scheduled later in the place it would have had
//! then: a caller's timer is known when the attempt is sent but is entered only once the
//! attempt has reached its service, and only if it is still awaited then.
//!
//! Most events schedule another as they are handled, so a pop leaves the heap's top in place,
//! handed out but no longer counted; the next schedule into the heap overwrites it and sifts
//! it down once, where a pop and a push would each walk the heap. Nothing outside sees the
//! difference: the order is the same (tested against a `BTreeMap`).
//! A chain of events, each scheduled by its predecessor as it is handled and so at most one
//! pending at a time (an arrival process), keeps its pending event in a slot beside the heap
//! and the lane ([`EventQueue::schedule_chained`]): a comparison at each pop instead of a
//! walk of the heap for each of its events.
//!
//! The key of (time, sequence) is one `u64` while it can be: the time less a base time in its
//! upper [`TIME_BITS`] bits, the sequence number less a base sequence in the lower
//! [`SEQ_BITS`], which orders pending events exactly as (time, sequence) does as long as
//! every pending event fits (within 2^40 ns, about 18 minutes, of the base time, and within
//! 2^24 sequence numbers of the base sequence). An event that does not fit moves the bases
//! up to the present and the oldest pending sequence number, and every pending key is
//! rewritten (the order is kept, so the heap stays as it is); if even then one does not fit
//! (an event near the end of time, or one pending while 2^24 others were scheduled), the
//! queue goes over to `u128` keys, (time << 64) | sequence, for the rest of the run. Both
//! hold the same events in the same order; a narrow key is a compare and a half-size entry
//! cheaper in each step of the heap's walk.
//! Invariant: [`EventQueue::pop`] never returns an event earlier than the last one it returned,
//! and [`EventQueue::schedule`] refuses (panics on) an event in the past. The queue holds
//! pending events (and at most the one top handed out), so its memory follows what is in
//! flight.

use std::collections::VecDeque;

use super::heap::{Entry, MinHeap};
use super::time::SimTime;

/// How far from the back of the timer lane a timer may still be inserted in order (timers
/// entered a little out of order, as those armed when their attempt arrives are); one further
/// back goes to the heap.
const LANE_REACH: usize = 16;

/// The bits of a narrow key that hold the sequence number, less the base sequence.
const SEQ_BITS: u32 = 24;
/// The bits of a narrow key above them, which hold the time, less the base time.
const TIME_BITS: u32 = u64::BITS - SEQ_BITS;

/// A place in the order of equal-time events, taken by [`EventQueue::ticket`] and used by
/// [`EventQueue::schedule_timer_as`], or compared with [`EventQueue::current`]'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ticket(u64);

impl Ticket {
    /// Before every event of an instant.
    pub const FIRST: Ticket = Ticket(0);
    /// After every event of an instant.
    pub const LAST: Ticket = Ticket(u64::MAX);
}

/// A priority queue of events keyed by simulated time, FIFO among equal times.
pub struct EventQueue<E> {
    /// The pending events under narrow keys, relative to `base`; empty once `wide_keys`.
    narrow: Pending<u64, E>,
    base: Base,
    /// Set once a key did not fit even after the bases moved: from then on every pending
    /// event is in `wide`.
    wide_keys: bool,
    /// The pending events under wide keys, (time << 64) | sequence; empty until `wide_keys`.
    wide: Pending<u128, E>,
    /// The number of pending events.
    pending: usize,
    next_seq: u64,
    now: SimTime,
    /// The place among the events of `now` of the event last popped.
    place: Ticket,
    popped: u64,
}

/// The time and sequence number a narrow key counts from.
#[derive(Debug, Clone, Copy)]
struct Base {
    time: u64,
    /// `time + 2^TIME_BITS`, or `u64::MAX` if that is beyond: no time from here on fits.
    time_end: u64,
    seq: u64,
}

impl Base {
    fn new(time: u64, seq: u64) -> Self {
        Base {
            time,
            time_end: time.saturating_add(1 << TIME_BITS),
            seq,
        }
    }

    /// The narrow key of (`time`, `seq`), if both fit, for a `time` no earlier than the base
    /// time (any time not in the past: the base time is never later than the present).
    #[inline(always)]
    fn key(self, time: u64, seq: u64) -> Option<u64> {
        debug_assert!(time >= self.time, "a time before the base");
        let ds = seq.wrapping_sub(self.seq);
        if time < self.time_end && ds < 1 << SEQ_BITS {
            Some(((time - self.time) << SEQ_BITS) | ds)
        } else {
            None
        }
    }

    /// The time and sequence number of narrow key `key`.
    #[inline(always)]
    fn time_seq(self, key: u64) -> (u64, u64) {
        (
            (key >> SEQ_BITS) + self.time,
            (key & ((1 << SEQ_BITS) - 1)) + self.seq,
        )
    }
}

/// The wide key of (`time`, `seq`).
#[inline(always)]
fn wide(time: u64, seq: u64) -> u128 {
    (u128::from(time) << 64) | u128::from(seq)
}

/// The time and sequence number of wide key `key`.
#[inline(always)]
fn wide_time_seq(key: u128) -> (u64, u64) {
    ((key >> 64) as u64, key as u64)
}

/// Where an event scheduled goes.
#[derive(Clone, Copy)]
enum Into {
    /// The heap.
    Heap,
    /// The chain's slot, or the heap when it is taken.
    Chain,
    /// The timer lane, or the heap when it is out of order.
    Lane,
}

/// The pending events under keys of type `K`: the heap, the timer lane and the chain's slot.
struct Pending<K, E> {
    heap: MinHeap<K, E>,
    /// Timers scheduled in non-decreasing time order (a constant timeout after now): a FIFO
    /// that is already sorted, so they skip the heap.
    lane: VecDeque<Entry<K, E>>,
    /// The pending event of the chain ([`EventQueue::schedule_chained`]).
    chained: Option<Entry<K, E>>,
    /// The heap's top was handed out by the last pop and is no longer pending: the next entry
    /// scheduled into the heap takes its place, or the next pop removes it.
    held: bool,
}

impl<K: Copy + Ord, E: Copy> Pending<K, E> {
    fn new() -> Self {
        Pending {
            heap: MinHeap::new(),
            lane: VecDeque::new(),
            chained: None,
            held: false,
        }
    }

    #[inline(always)]
    fn insert(&mut self, entry: Entry<K, E>, into: Into) {
        match into {
            Into::Heap => self.push_heap(entry),
            Into::Chain => {
                if self.chained.is_none() {
                    self.chained = Some(entry);
                } else {
                    self.push_heap(entry);
                }
            }
            Into::Lane => self.push_timer(entry),
        }
    }

    /// Puts a timer into the lane: at its back when it is not earlier than the last, a few
    /// places from the back when it belongs there (within [`LANE_REACH`]), else into the heap.
    #[inline]
    fn push_timer(&mut self, entry: Entry<K, E>) {
        if self.lane.back().is_none_or(|last| last.key <= entry.key) {
            self.lane.push_back(entry);
        } else if let Some(later) = self
            .lane
            .iter()
            .rev()
            .take(LANE_REACH)
            .position(|e| e.key <= entry.key)
        {
            let at = self.lane.len() - later;
            self.lane.insert(at, entry);
        } else {
            self.push_heap(entry);
        }
    }

    /// Puts `entry` into the heap: over the handed-out top when there is one (one sift down
    /// from the root, right for any entry), else by a push.
    #[inline]
    fn push_heap(&mut self, entry: Entry<K, E>) {
        if self.held {
            self.held = false;
            self.heap.replace_top(entry);
        } else {
            self.heap.push(entry);
        }
    }

    /// Removes the handed-out top, if any, so that the heap holds pending entries alone.
    #[inline]
    fn settle(&mut self) {
        if std::mem::take(&mut self.held) {
            self.heap.pop();
        }
    }

    /// Removes and returns the earliest entry whose event `stale` does not reject; the stale
    /// ones before it are dropped.
    #[inline(always)]
    fn pop_skipping(&mut self, mut stale: impl FnMut(&E) -> bool) -> Option<Entry<K, E>> {
        self.settle();
        loop {
            // Whether the lane's front comes before the heap's top, and the earlier one's key.
            let (from_lane, first) = match (self.lane.front(), self.heap.peek()) {
                (Some(l), Some(h)) if l.key < h.key => (true, Some(l.key)),
                (Some(l), None) => (true, Some(l.key)),
                (_, h) => (false, h.map(|h| h.key)),
            };
            if let Some(chained) = self.chained
                && first.is_none_or(|key| chained.key < key)
            {
                self.chained = None;
                if !stale(&chained.event) {
                    return Some(chained);
                }
                continue;
            }
            if from_lane {
                let entry = self.lane.pop_front()?;
                if !stale(&entry.event) {
                    return Some(entry);
                }
            } else {
                let top = *self.heap.peek()?;
                if !stale(&top.event) {
                    self.held = true;
                    return Some(top);
                }
                self.heap.pop();
            }
        }
    }

    /// Drops every pending event for which `keep` is false; the order of the rest is kept.
    fn retain(&mut self, mut keep: impl FnMut(&E) -> bool) {
        self.settle();
        self.lane.retain(|e| keep(&e.event));
        self.chained = self.chained.filter(|e| keep(&e.event));
        self.heap.retain(keep);
    }

    /// Every pending key (after [`Pending::settle`]).
    fn keys(&self) -> impl Iterator<Item = K> + '_ {
        debug_assert!(!self.held, "settled");
        let heap = self.heap.entries().iter();
        heap.chain(&self.lane).chain(&self.chained).map(|e| e.key)
    }

    /// The same entries with each key `k` replaced by `f(k)`, for an `f` that keeps the
    /// keys' order (after [`Pending::settle`]).
    fn map_keys<L: Copy + Ord>(self, mut f: impl FnMut(K) -> L) -> Pending<L, E> {
        debug_assert!(!self.held, "settled");
        let mut entry = |e: Entry<K, E>| Entry {
            key: f(e.key),
            event: e.event,
        };
        Pending {
            lane: self.lane.into_iter().map(&mut entry).collect(),
            chained: self.chained.map(&mut entry),
            heap: self.heap.map_keys(&mut f),
            held: false,
        }
    }

    /// Replaces each key `k` by `f(k)`, for an `f` that keeps the keys' order (after
    /// [`Pending::settle`]).
    fn rekey(&mut self, mut f: impl FnMut(K) -> K) {
        debug_assert!(!self.held, "settled");
        self.heap.rekey(&mut f);
        for e in self.lane.iter_mut().chain(&mut self.chained) {
            e.key = f(e.key);
        }
    }

    /// The least pending key.
    #[cfg(test)]
    fn first(&mut self) -> Option<K> {
        self.settle();
        self.keys().min()
    }

    fn len(&self) -> usize {
        self.heap.len() - usize::from(self.held)
            + self.lane.len()
            + usize::from(self.chained.is_some())
    }
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue at time zero.
    pub fn new() -> Self {
        EventQueue {
            narrow: Pending::new(),
            base: Base::new(0, 0),
            wide_keys: false,
            wide: Pending::new(),
            pending: 0,
            next_seq: 0,
            now: SimTime::ZERO,
            place: Ticket::FIRST,
            popped: 0,
        }
    }

    /// The time of the last event popped (zero before the first).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// The instant and the place among equal times of the event last popped: an event
    /// scheduled for an earlier pair would have come up before it.
    #[inline]
    pub fn current(&self) -> (SimTime, Ticket) {
        (self.now, self.place)
    }

    /// Schedules `event` at `time`.
    ///
    /// # Panics
    /// If `time` is earlier than [`EventQueue::now`]: the model must never schedule into the
    /// past, and a silent reorder would corrupt the run.
    #[inline(always)]
    pub fn schedule(&mut self, time: SimTime, event: E) {
        let seq = self.take_seq();
        self.insert(time, seq, event, Into::Heap);
    }

    /// Schedules the next event of a chain, one scheduled by its predecessor as that is handled
    /// (at most one of the chain pending at a time, as the next arrival of an arrival process
    /// is): like [`EventQueue::schedule`], with the same order, but cheaper. The chain's
    /// pending event waits in a slot of its own, out of the heap; should the slot be taken, the
    /// event goes to the heap.
    #[inline(always)]
    pub fn schedule_chained(&mut self, time: SimTime, event: E) {
        let seq = self.take_seq();
        self.insert(time, seq, event, Into::Chain);
    }

    /// Schedules a timer: like [`EventQueue::schedule`], with the same order, but cheaper when
    /// timers come in non-decreasing time order, as timeouts of a constant length do. Such a
    /// timer waits in a sorted FIFO lane instead of the heap; any other goes to the heap.
    #[inline]
    pub fn schedule_timer(&mut self, time: SimTime, event: E) {
        let seq = self.take_seq();
        self.insert(time, seq, event, Into::Lane);
    }

    /// Takes the next place in the order of equal-time events without scheduling anything:
    /// an event scheduled later with [`EventQueue::schedule_timer_as`] comes out among the
    /// events of its instant as if it had been scheduled now.
    #[inline]
    pub fn ticket(&mut self) -> Ticket {
        Ticket(self.take_seq())
    }

    /// Schedules the timer `event` at `time` in the place `ticket` took
    /// ([`EventQueue::ticket`]); like [`EventQueue::schedule_timer`] otherwise. A ticket is
    /// used once.
    ///
    /// # Panics
    /// If `time` is earlier than [`EventQueue::now`].
    #[inline]
    pub fn schedule_timer_as(&mut self, time: SimTime, ticket: Ticket, event: E) {
        debug_assert!(ticket.0 < self.next_seq, "a ticket this queue handed out");
        self.insert(time, ticket.0, event, Into::Lane);
    }

    #[inline(always)]
    fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// Puts `event` at `time` with sequence number `seq` where `into` says, refusing a time
    /// before `now`.
    #[inline(always)]
    fn insert(&mut self, time: SimTime, seq: u64, event: E, into: Into) {
        assert!(
            time >= self.now,
            "event scheduled in the past: {} < {}",
            time.as_nanos(),
            self.now.as_nanos()
        );
        let time = time.as_nanos();
        self.pending += 1;
        if self.wide_keys {
            let key = wide(time, seq);
            self.wide.insert(Entry { key, event }, into);
        } else if let Some(key) = self.base.key(time, seq) {
            self.narrow.insert(Entry { key, event }, into);
        } else {
            self.rebase(time, seq, event, into);
        }
    }

    /// Inserts an event whose narrow key does not fit: the bases move to the present and the
    /// oldest sequence number pending (this event's included) and every pending key is
    /// rewritten, or, if some pending event would still not fit, every key becomes wide.
    #[cold]
    #[inline(never)]
    fn rebase(&mut self, time: u64, seq: u64, event: E, into: Into) {
        let (base, pending) = (self.base, &mut self.narrow);
        pending.settle();
        let (mut last_time, mut least_seq, mut last_seq) = (time, seq, seq);
        for (t, s) in pending.keys().map(|k| base.time_seq(k)) {
            last_time = last_time.max(t);
            least_seq = least_seq.min(s);
            last_seq = last_seq.max(s);
        }
        // Every pending time lies in [now, last_time] and sequence in [least_seq, last_seq].
        let new = Base::new(self.now.as_nanos(), least_seq);
        if let Some(key) = new.key(last_time, last_seq).and(new.key(time, seq)) {
            pending.rekey(|k| {
                let (t, s) = base.time_seq(k);
                new.key(t, s).expect("every pending key fits the new base")
            });
            pending.insert(Entry { key, event }, into);
            self.base = new;
        } else {
            self.wide = std::mem::replace(pending, Pending::new()).map_keys(|k| {
                let (t, s) = base.time_seq(k);
                wide(t, s)
            });
            self.wide_keys = true;
            let key = wide(time, seq);
            self.wide.insert(Entry { key, event }, into);
        }
    }

    /// Removes and returns the earliest event, advancing [`EventQueue::now`] to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.pop_skipping(|_| false)
    }

    /// Removes and returns the earliest event that `stale` does not reject, advancing
    /// [`EventQueue::now`] to its time. The stale events before it are dropped unseen: they
    /// neither move the clock nor count as processed, exactly as if [`EventQueue::retain`]
    /// had removed them beforehand. (The model's stale events are timers of attempts already
    /// answered: a caller would have cancelled them.)
    #[inline]
    pub fn pop_skipping(&mut self, mut stale: impl FnMut(&E) -> bool) -> Option<(SimTime, E)> {
        // Every event passed over, stale or not, leaves the pending ones.
        let pending = &mut self.pending;
        let mut stale = |e: &E| {
            *pending -= 1;
            stale(e)
        };
        let ((time, seq), event) = if self.wide_keys {
            let entry = self.wide.pop_skipping(&mut stale)?;
            (wide_time_seq(entry.key), entry.event)
        } else {
            let entry = self.narrow.pop_skipping(&mut stale)?;
            (self.base.time_seq(entry.key), entry.event)
        };
        let time = SimTime(time);
        debug_assert!(time >= self.now, "time ran backwards");
        self.now = time;
        self.place = Ticket(seq);
        self.popped += 1;
        Some((time, event))
    }

    /// Drops every pending event for which `keep` is false (events the model knows to be
    /// stale, such as timers of attempts already answered). The order of the rest is kept.
    pub fn retain(&mut self, mut keep: impl FnMut(&E) -> bool) {
        self.narrow.retain(&mut keep);
        self.wide.retain(&mut keep);
        self.pending = self.narrow.len() + self.wide.len();
    }

    /// The time of the earliest pending event. Tests read it to check the state; the run never needs it.
    #[cfg(test)]
    pub fn peek_time(&mut self) -> Option<SimTime> {
        let base = self.base;
        let narrow = self.narrow.first().map(|k| base.time_seq(k).0);
        let wide = self.wide.first().map(|k| wide_time_seq(k).0);
        narrow.or(wide).map(SimTime)
    }

    /// Number of pending events.
    #[inline]
    pub fn len(&self) -> usize {
        debug_assert_eq!(self.pending, self.narrow.len() + self.wide.len());
        self.pending
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of events popped so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
impl<E: Copy> EventQueue<E> {
    /// The heap's entries (a handed-out top included), the lane's, the chain's event and
    /// whether the heap's top is handed out.
    fn parts(&self) -> (usize, usize, Option<E>, bool) {
        fn of<K: Copy + Ord, E: Copy>(p: &Pending<K, E>) -> (usize, usize, Option<E>, bool) {
            (
                p.heap.len(),
                p.lane.len(),
                p.chained.map(|e| e.event),
                p.held,
            )
        }
        if self.wide_keys {
            of(&self.wide)
        } else {
            of(&self.narrow)
        }
    }

    /// Whether the keys went over to `u128`.
    fn is_wide(&self) -> bool {
        self.wide_keys
    }

    /// Skips `n` sequence numbers, as `n` events scheduled and popped would.
    fn skip_seqs(&mut self, n: u64) {
        self.next_seq += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;
    use std::collections::BTreeMap;

    /// Pops every pending event, in order.
    fn drain<E: Copy>(q: &mut EventQueue<E>) -> Vec<E> {
        std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect()
    }

    #[test]
    fn equal_times_come_out_in_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(5), 'b');
        q.schedule(SimTime(1), 'a');
        q.schedule(SimTime(5), 'c');
        q.schedule(SimTime(5), 'd');
        let order = drain(&mut q);
        assert_eq!(order, vec!['a', 'b', 'c', 'd']);
    }

    #[test]
    fn a_ticket_keeps_its_place_among_equal_times() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(5), 'a');
        let ticket = q.ticket();
        q.schedule(SimTime(5), 'c');
        q.schedule_timer(SimTime(5), 'd');
        q.schedule_timer_as(SimTime(5), ticket, 'b');
        let order = drain(&mut q);
        assert_eq!(order, vec!['a', 'b', 'c', 'd']);
    }

    #[test]
    fn a_chain_waits_in_its_slot_in_its_place_among_equal_times() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(5), 'a');
        q.schedule_chained(SimTime(5), 'b');
        q.schedule_timer(SimTime(5), 'c');
        assert_eq!((q.parts().2, q.parts().0, q.len()), (Some('b'), 1, 3));
        // The slot is taken: the next event of a chain goes to the heap, in order all the same.
        q.schedule_chained(SimTime(4), 'x');
        assert_eq!((q.parts().0, q.len()), (2, 4));
        let order = drain(&mut q);
        assert_eq!(order, vec!['x', 'a', 'b', 'c']);
        // As an arrival process runs: each event schedules its successor as it is handled.
        q.schedule_chained(SimTime(10), 'd');
        q.schedule(SimTime(12), 'f');
        assert_eq!(q.pop(), Some((SimTime(10), 'd')));
        q.schedule_chained(SimTime(12), 'g');
        q.schedule(SimTime(11), 'e');
        assert_eq!(q.peek_time(), Some(SimTime(11)));
        q.retain(|&e| e != 'e');
        let order = drain(&mut q);
        assert_eq!(order, vec!['f', 'g']);
        assert!(q.is_empty());
    }

    #[test]
    fn a_chain_beside_a_handed_out_top_a_ticket_and_stale_events() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(5), 'a');
        q.schedule(SimTime(9), 'z');
        let t = q.ticket(); // A place before 'c'.
        // 'a' is handed out and stays the heap's top until the next schedule into the heap.
        assert_eq!(q.pop(), Some((SimTime(5), 'a')));
        assert!(q.parts().3);
        // Into the slot: the handed-out top stays.
        q.schedule_chained(SimTime(7), 'c');
        assert!(q.parts().3);
        assert_eq!(q.len(), 2);
        // The ticket was taken before 'c' was scheduled: 'b' comes first.
        q.schedule_timer_as(SimTime(7), t, 'b');
        assert_eq!(q.len(), 3);
        assert_eq!(q.peek_time(), Some(SimTime(7)));
        assert_eq!(q.pop(), Some((SimTime(7), 'b')));
        assert_eq!(q.current(), (SimTime(7), t));
        assert_eq!(q.pop(), Some((SimTime(7), 'c')));
        assert!(!q.parts().3);
        // Slot popped, heap untouched: the next heap schedule is a push, not a replace.
        q.schedule(SimTime(8), 'd');
        assert_eq!(q.len(), 2);
        // A stale chained event is skipped unseen.
        q.schedule_chained(SimTime(7), 'x');
        assert_eq!(q.pop_skipping(|&e| e == 'x'), Some((SimTime(8), 'd')));
        assert_eq!(q.events_processed(), 4);
        assert_eq!(q.parts().2, None);
        // Only stale events left: None, and everything dropped.
        q.schedule_chained(SimTime(8), 'x');
        assert_eq!(q.pop_skipping(|&e| e == 'x' || e == 'z'), None);
        assert!(q.is_empty());
        assert_eq!(q.now(), SimTime(8));
    }

    #[test]
    fn timers_a_little_out_of_order_stay_in_the_lane_in_order() {
        let mut q = EventQueue::new();
        for t in [10, 30, 20, 25, 40] {
            q.schedule_timer(SimTime(t), t);
        }
        assert_eq!((q.parts().1, q.parts().0), (5, 0));
        // One more than the lane's reach behind its back: into the heap.
        for t in 100..100 + LANE_REACH as u64 {
            q.schedule_timer(SimTime(t), t);
        }
        q.schedule_timer(SimTime(35), 35);
        q.schedule_timer(SimTime(101), 101);
        assert_eq!((q.parts().1, q.parts().0), (5 + LANE_REACH + 1, 1));
        let order = drain(&mut q);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(order, sorted);
        assert_eq!(&order[..6], &[10, 20, 25, 30, 35, 40]);
    }

    #[test]
    fn narrow_keys_move_their_bases_and_go_wide_in_order() {
        let mut q = EventQueue::new();
        let t0 = 1u64 << 39;
        q.schedule(SimTime(t0), 'a');
        let early = q.ticket();
        assert_eq!(q.pop(), Some((SimTime(t0), 'a')));
        q.schedule(SimTime(t0 + 10), 'x');
        // 2^40 ns past the base time of zero: the base time moves to the present.
        q.schedule(SimTime(t0 + (1 << 40) - 1), 'z');
        q.schedule(SimTime(t0 + 10), 'y');
        q.schedule_chained(SimTime(t0 + 20), 'v');
        assert!(!q.is_wide());
        assert_eq!(q.pop(), Some((SimTime(t0 + 10), 'x')));
        // 2^24 sequence numbers past x's, the base's: the base moves to the oldest pending.
        q.skip_seqs((1 << 24) - 4);
        q.schedule(SimTime(t0 + 10), 'w');
        assert!(!q.is_wide());
        // A ticket taken before all of them, 2^24 places before the newest: too far.
        q.schedule_timer_as(SimTime(t0 + 10), early, 'b');
        assert!(q.is_wide());
        q.schedule(SimTime(u64::MAX), 'e');
        assert_eq!(drain(&mut q), vec!['b', 'y', 'w', 'v', 'z', 'e']);
        assert_eq!(q.now(), SimTime(u64::MAX));
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn scheduling_into_the_past_panics() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(10), ());
        q.pop();
        q.schedule(SimTime(9), ());
    }

    /// Runs `ops` on a queue and on a `BTreeMap` keyed by (time, sequence), checking that
    /// they agree after each (see `agrees_with_btreemap_oracle`), then drains both.
    fn agrees(ops: Vec<(u8, u64)>) -> Result<(), TestCaseError> {
        let mut q = EventQueue::new();
        let mut oracle: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        let mut seq = 0u64;
        // Tickets taken (op 6) and not yet used (op 7 uses the oldest), with their numbers.
        let mut tickets = std::collections::VecDeque::new();
        let mut processed = 0u64;
        let mut now = 0u64;
        for (op, delta) in ops {
            match op {
                0 | 5 => {
                    // With op 5, every event whose number leaves 1 modulo 5 is stale.
                    let stale = |e: &u64| op == 5 && e % 5 == 1;
                    let expected =
                        std::iter::from_fn(|| oracle.pop_first()).find(|(_, e)| !stale(e));
                    let got = q.pop_skipping(stale);
                    prop_assert_eq!(got.map(|(t, e)| ((t.as_nanos(), e), e)), expected);
                    if let Some(((t, _), _)) = expected {
                        processed += 1;
                        now = t;
                    }
                    prop_assert_eq!(q.events_processed(), processed);
                    prop_assert_eq!(q.now().as_nanos(), now);
                    if let Some(((_, number), _)) = expected {
                        // The place of the event popped: its sequence number or ticket.
                        prop_assert_eq!(q.current().1, Ticket(number));
                    }
                }
                1 | 2 | 8 => {
                    let t = q.now().as_nanos().saturating_add(delta);
                    if op == 1 {
                        q.schedule(SimTime(t), seq);
                    } else if op == 8 {
                        q.schedule_chained(SimTime(t), seq);
                    } else {
                        // Timers: one earlier than the lane's last goes to the heap.
                        q.schedule_timer(SimTime(t), seq);
                    }
                    oracle.insert((t, seq), seq);
                    seq += 1;
                }
                3 => {
                    q.retain(|e| e % 3 != 0);
                    oracle.retain(|_, e| *e % 3 != 0);
                }
                6 => {
                    tickets.push_back((q.ticket(), seq));
                    seq += 1;
                }
                7 => {
                    if let Some((ticket, number)) = tickets.pop_front() {
                        let t = q.now().as_nanos().saturating_add(delta);
                        q.schedule_timer_as(SimTime(t), ticket, number);
                        oracle.insert((t, number), number);
                    }
                }
                9 => {
                    // As 2^22 events scheduled and handled: sequence numbers jump.
                    q.skip_seqs(1 << 22);
                    seq += 1 << 22;
                }
                10 | 11 => {
                    // Far ahead (up to about 2^39.6 ns), or at the end of time.
                    let t = if op == 10 {
                        q.now().as_nanos().saturating_add(delta << 34)
                    } else {
                        (u64::MAX - delta).max(q.now().as_nanos())
                    };
                    q.schedule(SimTime(t), seq);
                    oracle.insert((t, seq), seq);
                    seq += 1;
                }
                _ => {
                    let next = oracle.first_key_value().map(|(&(t, _), _)| t);
                    prop_assert_eq!(q.peek_time().map(SimTime::as_nanos), next);
                }
            }
            prop_assert_eq!(q.len(), oracle.len());
            prop_assert_eq!(q.is_empty(), oracle.is_empty());
        }
        let mut last = q.now();
        while let Some((t, e)) = q.pop() {
            prop_assert!(t >= last);
            last = t;
            prop_assert_eq!(oracle.pop_first(), Some(((t.as_nanos(), e), e)));
        }
        prop_assert!(oracle.is_empty());
        Ok(())
    }

    proptest! {
        /// Interleaved pushes and pops agree with a `BTreeMap` keyed by (time, sequence).
        /// Sweeps (`retain`), pops that skip stale events (`pop_skipping`), looks at the next
        /// time (`peek_time`), and timers scheduled with tickets taken earlier
        /// (`schedule_timer_as`, keyed by the ticket's number) and events of a chain
        /// (`schedule_chained`, into the chain's slot or, when it is taken, the heap) come
        /// between them, right after a pop too, when the heap's top is handed out but not yet
        /// removed. Timers land in the lane in order, a few places from its back, or in the
        /// heap. Skipped events neither move the clock nor count as processed.
        #[test]
        fn agrees_with_btreemap_oracle(ops in prop::collection::vec((0u8..9, 0u64..50), 1..400)) {
            agrees(ops)?;
        }

        /// The same with jumps of the sequence numbers (op 9) and events far ahead (op 10),
        /// which move the narrow keys' bases, and events at the end of time (op 11), which
        /// send the queue over to wide keys: the order stays that of (time, sequence), with
        /// tickets taken long before and events held over several moves of the bases.
        #[test]
        fn narrow_keys_move_and_widen_in_order(ops in prop::collection::vec((0u8..12, 0u64..50), 1..400)) {
            agrees(ops)?;
        }
    }
}
