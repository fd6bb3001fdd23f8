//! The future event list: a 4-ary min-heap (`heap`, in two tiers once it is large: `tiers`)
//! ordered by (time, insertion sequence), beside a sorted lane for timers of a constant length
//! and a slot for the one pending event of a chain.
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
//! Invariant: [`EventQueue::pop`] never returns an event earlier than the last one it returned,
//! and [`EventQueue::schedule`] refuses (panics on) an event in the past. The queue holds
//! pending events (and at most the one top handed out), so its memory follows what is in
//! flight.

use std::collections::VecDeque;

use super::heap::Entry;
use super::tiers::Tiered;
use super::time::SimTime;

#[cfg(test)]
impl<E> Entry<E> {
    fn time(&self) -> SimTime {
        SimTime((self.key >> 64) as u64)
    }
}

/// How far from the back of the timer lane a timer may still be inserted in order (timers
/// entered a little out of order, as those armed when their attempt arrives are); one further
/// back goes to the heap.
const LANE_REACH: usize = 16;

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
    heap: Tiered<E>,
    /// Timers scheduled in non-decreasing time order (a constant timeout after now): a FIFO
    /// that is already sorted, so they skip the heap.
    lane: VecDeque<Entry<E>>,
    /// The pending event of the chain ([`EventQueue::schedule_chained`]).
    chained: Option<Entry<E>>,
    next_seq: u64,
    now: SimTime,
    /// The place among the events of `now` of the event last popped.
    place: Ticket,
    popped: u64,
    /// The heap's top was handed out by the last pop and is no longer pending: the next entry
    /// scheduled into the heap takes its place, or the next pop removes it.
    held: bool,
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
            heap: Tiered::new(),
            lane: VecDeque::new(),
            chained: None,
            next_seq: 0,
            now: SimTime::ZERO,
            place: Ticket::FIRST,
            popped: 0,
            held: false,
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
        let entry = self.entry(time, event);
        self.push_heap(entry);
    }

    /// Schedules the next event of a chain, one scheduled by its predecessor as that is handled
    /// (at most one of the chain pending at a time, as the next arrival of an arrival process
    /// is): like [`EventQueue::schedule`], with the same order, but cheaper. The chain's
    /// pending event waits in a slot of its own, out of the heap; should the slot be taken, the
    /// event goes to the heap.
    #[inline(always)]
    pub fn schedule_chained(&mut self, time: SimTime, event: E) {
        let entry = self.entry(time, event);
        if self.chained.is_none() {
            self.chained = Some(entry);
        } else {
            self.push_heap(entry);
        }
    }

    /// Schedules a timer: like [`EventQueue::schedule`], with the same order, but cheaper when
    /// timers come in non-decreasing time order, as timeouts of a constant length do. Such a
    /// timer waits in a sorted FIFO lane instead of the heap; any other goes to the heap.
    #[inline]
    pub fn schedule_timer(&mut self, time: SimTime, event: E) {
        let entry = self.entry(time, event);
        self.push_timer(entry);
    }

    /// Takes the next place in the order of equal-time events without scheduling anything:
    /// an event scheduled later with [`EventQueue::schedule_timer_as`] comes out among the
    /// events of its instant as if it had been scheduled now.
    #[inline]
    pub fn ticket(&mut self) -> Ticket {
        let seq = self.next_seq;
        self.next_seq += 1;
        Ticket(seq)
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
        let entry = Self::keyed(self.now, time, ticket.0, event);
        self.push_timer(entry);
    }

    /// Puts a timer into the lane: at its back when it is not earlier than the last, a few
    /// places from the back when it belongs there (within [`LANE_REACH`]), else into the heap.
    #[inline]
    fn push_timer(&mut self, entry: Entry<E>) {
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
    /// from the root, right for any entry), else by a push. Inlined always: out of line, its
    /// call costs about 25 instructions an event (BENCHMARKS.md).
    #[inline(always)]
    fn push_heap(&mut self, entry: Entry<E>) {
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

    #[inline(always)]
    fn entry(&mut self, time: SimTime, event: E) -> Entry<E> {
        let seq = self.next_seq;
        self.next_seq += 1;
        Self::keyed(self.now, time, seq, event)
    }

    /// The entry of `event` at `time` with sequence number `seq`, refusing a time before `now`.
    #[inline(always)]
    fn keyed(now: SimTime, time: SimTime, seq: u64, event: E) -> Entry<E> {
        assert!(
            time >= now,
            "event scheduled in the past: {} < {}",
            time.as_nanos(),
            now.as_nanos()
        );
        Entry {
            key: (u128::from(time.as_nanos()) << 64) | u128::from(seq),
            event,
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
        self.settle();
        let (key, event) = loop {
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
                    break (chained.key, chained.event);
                }
                continue;
            }
            if from_lane {
                let entry = self.lane.pop_front()?;
                if !stale(&entry.event) {
                    break (entry.key, entry.event);
                }
            } else {
                let top = self.heap.peek()?;
                if !stale(&top.event) {
                    self.held = true;
                    break (top.key, top.event);
                }
                self.heap.pop();
            }
        };
        let time = SimTime((key >> 64) as u64);
        debug_assert!(time >= self.now, "time ran backwards");
        self.now = time;
        self.place = Ticket(key as u64);
        self.popped += 1;
        Some((time, event))
    }

    /// Drops every pending event for which `keep` is false (events the model knows to be
    /// stale, such as timers of attempts already answered). The order of the rest is kept.
    pub fn retain(&mut self, mut keep: impl FnMut(&E) -> bool) {
        self.settle();
        self.lane.retain(|e| keep(&e.event));
        self.chained = self.chained.filter(|e| keep(&e.event));
        self.heap.retain(keep);
    }

    /// The time of the earliest pending event. Tests read it to check the state; the run never needs it.
    #[cfg(test)]
    pub fn peek_time(&mut self) -> Option<SimTime> {
        self.settle();
        [self.lane.front(), self.heap.peek(), self.chained.as_ref()]
            .into_iter()
            .flatten()
            .map(Entry::time)
            .min()
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len() - usize::from(self.held)
            + self.lane.len()
            + usize::from(self.chained.is_some())
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
mod tests {
    use super::*;
    use proptest::prelude::*;
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
        assert_eq!(
            (q.chained.map(|e| e.event), q.heap.len(), q.len()),
            (Some('b'), 1, 3)
        );
        // The slot is taken: the next event of a chain goes to the heap, in order all the same.
        q.schedule_chained(SimTime(4), 'x');
        assert_eq!((q.heap.len(), q.len()), (2, 4));
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
        assert!(q.held);
        // Into the slot: the handed-out top stays.
        q.schedule_chained(SimTime(7), 'c');
        assert!(q.held);
        assert_eq!(q.len(), 2);
        // The ticket was taken before 'c' was scheduled: 'b' comes first.
        q.schedule_timer_as(SimTime(7), t, 'b');
        assert_eq!(q.len(), 3);
        assert_eq!(q.peek_time(), Some(SimTime(7)));
        assert_eq!(q.pop(), Some((SimTime(7), 'b')));
        assert_eq!(q.current(), (SimTime(7), t));
        assert_eq!(q.pop(), Some((SimTime(7), 'c')));
        assert!(!q.held);
        // Slot popped, heap untouched: the next heap schedule is a push, not a replace.
        q.schedule(SimTime(8), 'd');
        assert_eq!(q.len(), 2);
        // A stale chained event is skipped unseen.
        q.schedule_chained(SimTime(7), 'x');
        assert_eq!(q.pop_skipping(|&e| e == 'x'), Some((SimTime(8), 'd')));
        assert_eq!(q.events_processed(), 4);
        assert_eq!(q.chained.map(|e| e.event), None);
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
        assert_eq!((q.lane.len(), q.heap.len()), (5, 0));
        // One more than the lane's reach behind its back: into the heap.
        for t in 100..100 + LANE_REACH as u64 {
            q.schedule_timer(SimTime(t), t);
        }
        q.schedule_timer(SimTime(35), 35);
        q.schedule_timer(SimTime(101), 101);
        assert_eq!((q.lane.len(), q.heap.len()), (5 + LANE_REACH + 1, 1));
        let order = drain(&mut q);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(order, sorted);
        assert_eq!(&order[..6], &[10, 20, 25, 30, 35, 40]);
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
        /// Sweeps (`retain`), pops that skip stale events (`pop_skipping`), looks at the next
        /// time (`peek_time`), and timers scheduled with tickets taken earlier
        /// (`schedule_timer_as`, keyed by the ticket's number) and events of a chain
        /// (`schedule_chained`, into the chain's slot or, when it is taken, the heap) come
        /// between them, right after a pop too, when the heap's top is handed out but not yet
        /// removed. Timers land in the lane in order, a few places from its back, or in the
        /// heap. Skipped events neither move the clock nor count as processed.
        #[test]
        fn agrees_with_btreemap_oracle(ops in prop::collection::vec((0u8..9, 0u64..50), 1..400)) {
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
                        let expected = std::iter::from_fn(|| oracle.pop_first())
                            .find(|(_, e)| !stale(e));
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
                        let t = q.now().as_nanos() + delta;
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
                            let t = q.now().as_nanos() + delta;
                            q.schedule_timer_as(SimTime(t), ticket, number);
                            oracle.insert((t, number), number);
                        }
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
        }
    }
}
