//! The heap under the event list, in two tiers once it grows large: the events of the near
//! future in the 4-ary heap (`heap.rs`), later ones in unsorted buckets of time.
//!
//! A heap of a million events is 32 MB and every walk down it misses the caches in its lower
//! levels: at a million closed-workload clients, most of a run's time (BENCHMARKS.md). Most of
//! those events are far ahead (a thinking client's wake-up), and nothing needs them in order
//! until their time comes near. So once the heap holds more than [`SPILL`] entries, every
//! entry at or after the *horizon* waits in a bucket of a fixed width of time (or, past the
//! last bucket, in an overflow), appended unsorted; the heap holds the entries before the
//! horizon. The buckets are as wide as the nearer half of the entries needs for about
//! [`PER_BUCKET`] to a bucket, read from a histogram of their times, and cover that half;
//! the rest wait in the overflow. When the heap runs empty, the next bucket's entries become
//! the heap and the horizon moves to that bucket's end; when the buckets run out, or the tier
//! has grown fourfold since its buckets were made, or entries before the horizon have doubled
//! the heap, or the next bucket is too dense to be one heap, the entries are spread over new
//! ones (each time only once as many entries have come and gone since the last, so that
//! spreading stays a constant cost an entry). An entry is so appended a few times and walks a
//! heap of a bucket's size (a few hundred entries, in the second-level cache) rather than one
//! of everything. An entry pushed past the horizon while the heap is empty makes its bucket
//! the heap at once.
//!
//! The order is the heap's: every entry in the heap is before the horizon and every entry in
//! a bucket at or after it, so the heap's least entry is the least of all, and keys are
//! unique. A heap that stays small (every storm the benchmarks run) never spills and pays a
//! comparison with the horizon per entry. Checked against a sorted set below, with the
//! tiers' sizes made small so that every path runs.

use super::heap::{Entry, MinHeap};

/// Entries in the heap beyond which it spills into buckets.
const SPILL: usize = 1 << 13;
/// The entries a bucket holds on average when buckets are made: small enough that the heap
/// one becomes stays in the second-level cache, large enough that the buckets' tails, where
/// entries are appended, do too.
const PER_BUCKET: usize = 256;
/// At most this many buckets.
const MAX_BUCKETS: usize = 1 << 16;
/// Bins of the histogram of times that lays the buckets out ([`layout`]).
const BINS: usize = 1 << 10;

/// The sizes the tiers work with: the constants above, or small ones in tests.
#[derive(Clone, Copy)]
struct Sizes {
    spill: usize,
    per_bucket: usize,
}

/// A min-heap of entries by key, as [`MinHeap`], in two tiers once it is large.
pub(super) struct Tiered<E> {
    near: MinHeap<E>,
    /// Every entry with a key below the horizon is in `near`, every other one in a bucket or
    /// the overflow. `u128::MAX` while nothing has spilled.
    horizon: u128,
    /// The heap's size that makes it spill: [`Sizes::spill`], or twice the heap's size when
    /// a bucket became the heap or a spill was put off.
    spill_at: usize,
    far: Far<E>,
    sizes: Sizes,
}

/// The later tier: buckets of entries by time, unsorted, and the overflow past them.
struct Far<E> {
    /// Bucket `k` holds the entries with a time in `[start + k << shift, start + (k + 1) << shift)`.
    buckets: Vec<Vec<Entry<E>>>,
    start: u64,
    shift: u32,
    /// The next bucket to become the heap; those before it are empty.
    next: usize,
    /// Entries with a time past the last bucket's.
    overflow: Vec<Entry<E>>,
    /// Entries in the buckets and the overflow.
    len: usize,
    /// Entries appended or moved into the heap since the buckets were last made: a dense
    /// bucket is spread anew only once this pays for it, so that no input makes the tiers
    /// spread everything again and again.
    work: usize,
    /// Entries beyond which the tier is spread anew: four times as many as when it was last
    /// spread, so that buckets made for a few thousand entries do not take a million.
    grown: usize,
    /// The latest time of an entry pushed into the tier or spilled into it (an entry since
    /// removed may leave it later than the latest still there).
    latest: u64,
}

impl<E: Copy> Tiered<E> {
    pub(super) fn new() -> Self {
        Self::with_sizes(Sizes {
            spill: SPILL,
            per_bucket: PER_BUCKET,
        })
    }

    fn with_sizes(sizes: Sizes) -> Self {
        Tiered {
            near: MinHeap::new(),
            horizon: u128::MAX,
            spill_at: sizes.spill,
            far: Far {
                buckets: Vec::new(),
                start: 0,
                shift: 0,
                next: 0,
                overflow: Vec::new(),
                len: 0,
                work: 0,
                grown: 0,
                latest: 0,
            },
            sizes,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.near.len() + self.far.len
    }

    /// The entry with the smallest key.
    #[inline]
    pub(super) fn peek(&self) -> Option<&Entry<E>> {
        self.near.peek()
    }

    /// Adds `entry`.
    #[inline(always)]
    pub(super) fn push(&mut self, entry: Entry<E>) {
        if entry.key < self.horizon {
            self.near.push(entry);
            if self.near.len() > self.spill_at {
                self.spill();
            }
        } else {
            self.push_far(entry);
        }
    }

    /// Adds an entry at or after the horizon. Out of line, so that the heap's push and
    /// replacement, inlined into the event loop, stay as small as a heap alone. An entry
    /// pushed while the heap is empty (everything before the horizon handled, the last
    /// bucket too) makes its bucket the heap at once: the least entry is always the heap's.
    #[cold]
    #[inline(never)]
    fn push_far(&mut self, entry: Entry<E>) {
        self.far.push(entry);
        if self.far.len > self.far.grown {
            self.respread();
        }
        if self.near.is_empty() {
            self.refill();
        }
    }

    /// Removes the smallest entry and adds `entry`, in one walk down the heap when `entry`
    /// belongs there.
    ///
    /// # Panics
    /// If the heap is empty.
    #[inline(always)]
    pub(super) fn replace_top(&mut self, entry: Entry<E>) {
        if entry.key < self.horizon {
            self.near.replace_top(entry);
        } else {
            self.replace_top_far(entry);
        }
    }

    /// [`Tiered::replace_top`] for an entry of the later tier (which refills the heap if the
    /// pop emptied it).
    #[cold]
    #[inline(never)]
    fn replace_top_far(&mut self, entry: Entry<E>) {
        assert!(self.near.pop().is_some(), "replace_top on an empty heap");
        self.push_far(entry);
    }

    /// Removes and returns the entry with the smallest key.
    #[inline]
    pub(super) fn pop(&mut self) -> Option<Entry<E>> {
        let top = self.near.pop();
        if self.near.is_empty() && self.far.len > 0 {
            self.refill();
        }
        top
    }

    /// Keeps the entries whose event passes `keep`.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&E) -> bool) {
        self.near.retain(&mut keep);
        let far = &mut self.far;
        for bucket in &mut far.buckets[far.next..] {
            bucket.retain(|e| keep(&e.event));
        }
        far.overflow.retain(|e| keep(&e.event));
        far.len = far.buckets[far.next..].iter().map(Vec::len).sum::<usize>() + far.overflow.len();
        self.refill();
    }

    /// Moves every entry of the heap into the later tier, spread anew, once the heap has
    /// grown past `spill_at`: the first time, and again whenever so many entries came before
    /// the horizon that the heap doubled (as a million clients' first starts do, pushed after
    /// buckets were made for the first thousands).
    #[cold]
    #[inline(never)]
    fn spill(&mut self) {
        let far = &mut self.far;
        if far.work + self.near.len() < far.len / 2 {
            // Not yet paid for: spreading again costs the whole later tier.
            self.spill_at = 2 * self.near.len();
            return;
        }
        let entries = self.near.take();
        let times = entries.iter().map(|e| time_of(e.key));
        let (first, last) = times.fold((u64::MAX, 0), |(lo, hi), t| (lo.min(t), hi.max(t)));
        far.latest = far.latest.max(last);
        far.len += entries.len();
        self.spread(entries, first);
        self.refill();
    }

    /// Makes the next non-empty bucket the heap when the heap is empty, spreading the entries
    /// anew when the buckets have run out or the next one is too dense to be one heap.
    #[inline(never)]
    fn refill(&mut self) {
        while self.near.is_empty() && self.far.len > 0 {
            let far = &mut self.far;
            if far.next == far.buckets.len() {
                self.respread();
                continue;
            }
            let dense = far.buckets[far.next].len() > self.sizes.spill;
            if dense && far.shift > 0 && far.work >= far.len / 2 {
                self.respread();
                continue;
            }
            let bucket = std::mem::take(&mut far.buckets[far.next]);
            far.next += 1;
            far.len -= bucket.len();
            far.work += bucket.len();
            self.horizon = far.boundary(far.next);
            self.near.fill(bucket);
            self.spill_at = self.sizes.spill.max(2 * self.near.len());
        }
    }

    /// Spreads the later tier anew, from the horizon: every entry in it is at or after it.
    fn respread(&mut self) {
        let first = time_of(self.horizon);
        self.spread(Vec::new(), first);
    }

    /// Spreads every entry of the later tier, and `extra` (already counted in its length),
    /// over new buckets laid out by [`layout`], the first starting at `first`, a time at or
    /// before every entry's, and the overflow past the last: when the buckets have run out,
    /// when the next is too dense, when the tier has grown fourfold since it was last spread,
    /// or when the heap spills. The entries are read twice: once for the histogram, once to
    /// move them. The heap's entries are all before `first`, so the horizon moves to it.
    fn spread(&mut self, extra: Vec<Entry<E>>, first: u64) {
        let far = &mut self.far;
        // The buckets before `next` are empty. Each old one is freed once spread, so that the
        // entries are held about once, not twice, while they move.
        let mut old = std::mem::take(&mut far.buckets);
        old.push(extra);
        let mut overflow = std::mem::take(&mut far.overflow);
        let span = far.latest.saturating_sub(first);
        let entries = old.iter().flatten().chain(&overflow);
        let (shift, count) = layout(entries, first, span, self.sizes.per_bucket);
        far.start = first;
        far.shift = shift;
        far.next = 0;
        far.work = 0;
        far.grown = (4 * far.len).max(self.sizes.spill);
        far.buckets.resize_with(count, Vec::new);
        // The overflow's entries still past the last bucket stay where they are, so that the
        // largest part is not held twice while it moves.
        overflow.retain(|&entry| !far.put_in_bucket(entry));
        far.overflow = overflow;
        for entry in old.into_iter().flatten() {
            if !far.put_in_bucket(entry) {
                far.overflow.push(entry);
            }
        }
        self.horizon = far.boundary(0);
    }
}

impl<E: Copy> Far<E> {
    /// Adds an entry at or after the horizon.
    #[inline]
    fn push(&mut self, entry: Entry<E>) {
        let time = time_of(entry.key);
        debug_assert!(
            shr(time - self.start, self.shift) as usize >= self.next,
            "an entry at or after the horizon"
        );
        self.latest = self.latest.max(time);
        if !self.put_in_bucket(entry) {
            self.overflow.push(entry);
        }
        self.len += 1;
        self.work += 1;
    }

    /// Puts an entry (already counted) into its bucket, or returns false if it is past the
    /// last one.
    #[inline]
    fn put_in_bucket(&mut self, entry: Entry<E>) -> bool {
        let index = shr(time_of(entry.key) - self.start, self.shift) as usize;
        match self.buckets.get_mut(index) {
            Some(bucket) => {
                bucket.push(entry);
                true
            }
            None => false,
        }
    }

    /// The key at which bucket `k` begins: the horizon once bucket `k - 1` is the heap.
    fn boundary(&self, k: usize) -> u128 {
        let time = u128::from(self.start) + ((k as u128) << self.shift);
        if time > u128::from(u64::MAX) {
            u128::MAX
        } else {
            time << 64
        }
    }
}

/// How [`Tiered::spread`] lays buckets over `entries`, whose times lie in `[first, first +
/// span]`: the shift of a bucket's width, and how many buckets. The buckets cover the
/// shortest prefix of a histogram of the times ([`BINS`] bins over the span) that holds at
/// least half of the entries, about `per_bucket` of those to a bucket, and the entries after
/// it wait in the overflow until the buckets run out. Buckets laid evenly over the whole span
/// would be as coarse as its tail makes them: a million thinking clients' wake-ups, drawn
/// from an exponential, span ten times their median, and the buckets of the near future
/// held thousands of entries each, too many to be one heap, so that the tier was spread
/// anew every few seconds of simulated time.
fn layout<'a, E: 'a>(
    entries: impl Iterator<Item = &'a Entry<E>>,
    first: u64,
    span: u64,
    per_bucket: usize,
) -> (u32, usize) {
    let mut coarse = 0;
    while shr(span, coarse) >= BINS as u64 {
        coarse += 1;
    }
    let mut bins = [0usize; BINS];
    let mut total = 0;
    for entry in entries {
        bins[shr(time_of(entry.key) - first, coarse) as usize] += 1;
        total += 1;
    }
    let (mut held, mut end) = (0, 0);
    while 2 * held < total {
        held += bins[end];
        end += 1;
    }
    // The prefix's last time after `first`: within the span, at least its first bin.
    let reach = ((end.max(1) as u128) << coarse).min(u128::from(span) + 1) - 1;
    let reach = reach as u64;
    let wanted = (held / per_bucket).clamp(1, MAX_BUCKETS) as u64;
    let mut shift = 0;
    while shr(reach, shift) >= wanted {
        shift += 1;
    }
    (shift, (shr(reach, shift) + 1) as usize)
}

/// `x >> shift`, zero for a shift of 64 (a bucket as wide as all of time).
#[inline]
fn shr(x: u64, shift: u32) -> u64 {
    x.checked_shr(shift).unwrap_or(0)
}

/// The time in an entry's key.
fn time_of(key: u128) -> u64 {
    (key >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;
    use std::collections::BTreeSet;

    /// Applies pushes, pops, replacements of the top and sweeps to tiers of small sizes and
    /// to a sorted set, checking length and least key after each, then drains both. Each
    /// operation brings a delay; keys are (now + delay, sequence), now being the last key
    /// popped, as the event list makes them.
    fn agrees(sizes: Sizes, ops: &[(u8, u64)]) -> Result<(), TestCaseError> {
        let mut tiers = Tiered::with_sizes(sizes);
        let mut oracle = BTreeSet::new();
        let mut now = 0u64;
        for (seq, &(op, delay)) in ops.iter().enumerate() {
            if op == 1
                && let Some(&top) = oracle.first()
            {
                // The top is handed out: the clock is at its time.
                now = time_of(top);
            }
            let time = now.saturating_add(delay);
            let key = (u128::from(time) << 64) | seq as u128;
            match op {
                0 => {
                    let got = tiers.pop().map(|e| e.key);
                    prop_assert_eq!(got, oracle.pop_first());
                    if let Some(key) = got {
                        now = time_of(key);
                    }
                }
                1 if !oracle.is_empty() => {
                    tiers.replace_top(Entry { key, event: time });
                    oracle.pop_first();
                    oracle.insert(key);
                }
                2 => {
                    tiers.retain(|t| !t.is_multiple_of(7));
                    oracle.retain(|k| !time_of(*k).is_multiple_of(7));
                }
                _ => {
                    tiers.push(Entry { key, event: time });
                    oracle.insert(key);
                }
            }
            prop_assert_eq!(tiers.len(), oracle.len());
            prop_assert_eq!(tiers.peek().map(|e| e.key), oracle.first().copied());
        }
        while let Some(e) = tiers.pop() {
            prop_assert_eq!(Some(e.key), oracle.pop_first());
        }
        prop_assert!(oracle.is_empty());
        Ok(())
    }

    /// Delays: mostly spread, some equal (the same instant many times), some near the end of
    /// time, where a bucket's boundary is past the last representable time.
    fn delay() -> impl Strategy<Value = u64> {
        prop_oneof![
            6 => 0u64..10_000,
            1 => Just(0u64),
            1 => (u64::MAX - 1000)..=u64::MAX,
        ]
    }

    proptest! {
        // More cases than the default: an entry pushed into tiers drained past their horizon
        // took about one run in a thousand to find.
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Small tiers (a heap spilling past 4 to 32 entries, 1 to 8 to a bucket), so that
        /// spills, refills, dense buckets and the overflow's spreading all happen.
        #[test]
        fn agrees_with_a_sorted_set(
            spill in 4usize..32,
            per_bucket in 1usize..8,
            ops in prop::collection::vec((0u8..6, delay()), 1..1500),
        ) {
            agrees(Sizes { spill, per_bucket }, &ops)?;
        }
    }

    /// Times with a long tail (the quantiles of an exponential, as a million thinking
    /// clients' wake-ups) get buckets as fine as their nearer half needs, and that half in
    /// them: the first bucket holds a few hundred entries, not the thousands that buckets
    /// laid evenly over the whole span would give it.
    #[test]
    fn a_long_tail_gets_buckets_as_fine_as_its_nearer_half_needs() {
        let n = 100_000u64;
        let times: Vec<u64> = (0..n)
            .map(|i| (-1e9 * (1.0 - (i as f64 + 0.5) / n as f64).ln()) as u64)
            .collect();
        let entries: Vec<Entry<()>> = (0..n)
            .map(|i| Entry {
                key: (u128::from(times[i as usize]) << 64) | u128::from(i),
                event: (),
            })
            .collect();
        let span = times[times.len() - 1];
        let (shift, count) = layout(entries.iter(), 0, span, 256);
        let first = times.iter().filter(|&&t| t >> shift == 0).count();
        assert!((128..=1024).contains(&first), "first bucket {first}");
        let covered = times.iter().filter(|&&t| t >> shift < count as u64).count();
        assert!((50_000..=60_000).contains(&covered), "in buckets {covered}");
    }

    /// Once the tiers have spilled, an entry pushed past the horizon when nothing else is
    /// pending (the heap and every bucket handled) is the least entry, and is seen as such:
    /// the case a sorted set found, which left the heap empty beside a waiting entry.
    #[test]
    fn an_entry_pushed_past_the_horizon_into_empty_tiers_comes_out() {
        let mut tiers = Tiered::with_sizes(Sizes {
            spill: 4,
            per_bucket: 1,
        });
        let key = |time: u64, seq: u64| (u128::from(time) << 64) | u128::from(seq);
        for (seq, time) in [0u64, 10, 20, 30, 1000].into_iter().enumerate() {
            tiers.push(Entry {
                key: key(time, seq as u64),
                event: (),
            });
        }
        assert!(tiers.horizon < u128::MAX, "spilled");
        let mut last = 0;
        while let Some(e) = tiers.pop() {
            last = e.key;
        }
        assert_eq!(last, key(1000, 4));
        let late = key(time_of(tiers.horizon) + 5, 5);
        tiers.push(Entry {
            key: late,
            event: (),
        });
        assert_eq!(tiers.len(), 1);
        assert_eq!(tiers.peek().map(|e| e.key), Some(late));
        assert_eq!(tiers.pop().map(|e| e.key), Some(late));
        assert_eq!(tiers.len(), 0);
    }

    #[test]
    fn a_large_heap_spills_and_comes_out_in_order() {
        let sizes = Sizes {
            spill: 64,
            per_bucket: 8,
        };
        let mut tiers = Tiered::with_sizes(sizes);
        let mut keys = Vec::new();
        // Times scattered over a wide range by a multiplicative hash, all distinct keys.
        for seq in 0..5_000u64 {
            let time = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            let key = (u128::from(time) << 64) | u128::from(seq);
            tiers.push(Entry { key, event: () });
            keys.push(key);
        }
        assert!(tiers.far.len > 0 && tiers.near.len() < 5_000, "spilled");
        assert_eq!(tiers.len(), 5_000);
        keys.sort_unstable();
        let order: Vec<u128> = std::iter::from_fn(|| tiers.pop().map(|e| e.key)).collect();
        assert_eq!(order, keys);
    }
}
