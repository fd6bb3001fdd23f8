//! The heap under the event list: a 4-ary min-heap of (key, event) entries.
//!
//! Written here rather than taken from a library because it is measurably faster at the one
//! thing the engine does most: its keys are plain `u128`s and its entries `Copy`, so the walk
//! down compares keys directly rather than through `Ord`, and picks the least of four children
//! without a jump (in the release build, compares that set flags and a conditional move; the
//! one jump left per level is the walk's stop). On the single-server storm, with the event
//! list's replace-the-top step (`queue.rs`) done by each, a run is 5-9 % faster than with
//! `dary_heap`'s 4-ary heap (BENCHMARKS.md section 1). Its order is checked against a sorted
//! set below and, through the event list, against a `BTreeMap`.

/// One entry: its ordering key (smallest first) and its payload.
#[derive(Clone, Copy)]
pub(super) struct Entry<E> {
    pub(super) key: u128,
    pub(super) event: E,
}

/// A min-heap of entries by key; keys are unique (they carry a sequence number), so the order
/// of removal is fully determined.
pub(super) struct MinHeap<E> {
    data: Vec<Entry<E>>,
}

impl<E: Copy> MinHeap<E> {
    pub(super) fn new() -> Self {
        MinHeap { data: Vec::new() }
    }

    pub(super) fn len(&self) -> usize {
        self.data.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Takes every entry out, leaving the heap empty.
    pub(super) fn take(&mut self) -> Vec<Entry<E>> {
        std::mem::take(&mut self.data)
    }

    /// Makes `entries` the heap's, in place of an empty heap's (its room given back).
    pub(super) fn fill(&mut self, entries: Vec<Entry<E>>) {
        debug_assert!(self.data.is_empty(), "fill an empty heap");
        self.data = entries;
        self.heapify();
    }

    /// The entry with the smallest key.
    #[inline]
    pub(super) fn peek(&self) -> Option<&Entry<E>> {
        self.data.first()
    }

    /// Adds `entry`.
    #[inline]
    pub(super) fn push(&mut self, entry: Entry<E>) {
        let mut pos = self.data.len();
        self.data.push(entry);
        while pos > 0 {
            let parent = (pos - 1) / 4;
            let above = self.data[parent];
            if above.key <= entry.key {
                break;
            }
            self.data[pos] = above;
            pos = parent;
        }
        self.data[pos] = entry;
    }

    /// Removes the smallest entry and adds `entry` in one walk down from the root. Inlined
    /// always, walk included: it is the engine's most frequent step, and a call's saving and
    /// restoring of registers cost about 20 instructions per event (BENCHMARKS.md).
    ///
    /// # Panics
    /// If the heap is empty.
    #[inline(always)]
    pub(super) fn replace_top(&mut self, entry: Entry<E>) {
        assert!(!self.data.is_empty(), "replace_top on an empty heap");
        self.sift_down_from_root(entry);
    }

    /// Removes and returns the entry with the smallest key.
    #[inline]
    pub(super) fn pop(&mut self) -> Option<Entry<E>> {
        let last = self.data.pop()?;
        match self.data.first() {
            None => Some(last),
            Some(&top) => {
                self.sift_down_from_root(last);
                Some(top)
            }
        }
    }

    /// Keeps the entries whose event passes `keep`, then restores the heap order.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&E) -> bool) {
        self.data.retain(|e| keep(&e.event));
        self.heapify();
    }

    /// Restores the heap order of any entries, from the last node with children up.
    fn heapify(&mut self) {
        let parents = self.data.len().saturating_sub(1).div_ceil(4);
        for pos in (0..parents).rev() {
            self.sift_down(pos);
        }
    }

    /// Puts `entry` at the root (overwriting what was there) and moves it down to its place.
    /// The heap must not be empty.
    #[inline(always)]
    fn sift_down_from_root(&mut self, entry: Entry<E>) {
        debug_assert!(!self.data.is_empty());
        self.place_down(0, entry);
    }

    /// Moves the entry at `pos` down to its place.
    fn sift_down(&mut self, pos: usize) {
        let entry = self.data[pos];
        self.place_down(pos, entry);
    }

    /// Walks down from `pos`, an entry's index, for `entry`, moving each smaller least child
    /// up one level, and puts `entry` where it belongs.
    ///
    /// The entries after the root, taken four at a time, are the nodes' children: node
    /// `pos`'s four are chunk `pos` (`as_chunks`), and a node with fewer than four has the
    /// remainder. So each level costs one bounds check, whether chunk `pos` exists, and every
    /// position written is one already found in bounds (the `SAFETY` notes).
    #[inline(always)]
    fn place_down(&mut self, mut pos: usize, entry: Entry<E>) {
        let data = &mut self.data[..];
        debug_assert!(pos < data.len(), "the walk starts at an entry");
        loop {
            let (chunks, rest) = data[1..].as_chunks::<4>();
            let (least, child) = if let Some(kids) = chunks.get(pos) {
                // The least of four without jumps: two pairs, then the pairs' winners.
                let a = usize::from(kids[1].key < kids[0].key);
                let b = 2 + usize::from(kids[3].key < kids[2].key);
                let take_b = usize::from(kids[b & 3].key < kids[a & 3].key);
                let i = (a + take_b * (b - a)) & 3;
                (4 * pos + 1 + i, kids[i])
            } else if pos == chunks.len() && !rest.is_empty() {
                let mut least = 0;
                for child in 1..rest.len() {
                    if rest[child].key < rest[least].key {
                        least = child;
                    }
                }
                (4 * pos + 1 + least, rest[least])
            } else {
                break;
            };
            if entry.key <= child.key {
                break;
            }
            // SAFETY: `pos < data.len()`: it is the walk's start, which every caller takes
            // at an entry (the root of a heap it knows not to be empty, or an index it has
            // just read), or `least` of the level above, the index of an entry read there
            // (`4 * pos + 1 + i` is entry `i` of chunk `pos`, or of the remainder after
            // the last whole chunk).
            unsafe { *data.get_unchecked_mut(pos) = child };
            pos = least;
        }
        // SAFETY: as above, `pos` is the walk's start or a `least` read in bounds.
        unsafe { *data.get_unchecked_mut(pos) = entry };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;
    use std::collections::BTreeSet;

    #[derive(Clone, Copy)]
    enum Op {
        Push,
        Pop,
        Replace,
        Sweep,
    }

    /// Applies `ops` (each with the time of the key it brings) to a heap and to a sorted set
    /// of the same keys, checking length and least key after each, then drains both in order.
    fn agrees(ops: impl IntoIterator<Item = (Op, u64)>) -> Result<(), TestCaseError> {
        let mut heap = MinHeap::new();
        let mut oracle = BTreeSet::new();
        for (seq, (op, value)) in ops.into_iter().enumerate() {
            let key = (u128::from(value) << 64) | seq as u128;
            match op {
                Op::Push => {
                    heap.push(Entry { key, event: value });
                    oracle.insert(key);
                }
                Op::Pop => prop_assert_eq!(heap.pop().map(|e| e.key), oracle.pop_first()),
                Op::Replace if !oracle.is_empty() => {
                    heap.replace_top(Entry { key, event: value });
                    oracle.pop_first();
                    oracle.insert(key);
                }
                Op::Replace => {}
                Op::Sweep => {
                    heap.retain(|v| v % 3 != 0);
                    oracle.retain(|k| (k >> 64) % 3 != 0);
                }
            }
            prop_assert_eq!(heap.len(), oracle.len());
            prop_assert_eq!(heap.peek().map(|e| e.key), oracle.first().copied());
        }
        while let Some(e) = heap.pop() {
            prop_assert_eq!(Some(e.key), oracle.pop_first());
        }
        prop_assert!(oracle.is_empty());
        Ok(())
    }

    proptest! {
        /// Pushes, pops, replacements and sweeps, equally often.
        #[test]
        fn agrees_with_a_sorted_set(ops in prop::collection::vec((0usize..4, 0u64..1000), 1..600)) {
            let kinds = [Op::Push, Op::Pop, Op::Replace, Op::Sweep];
            agrees(ops.into_iter().map(|(k, v)| (kinds[k], v)))?;
        }

        /// Heaps of hundreds to thousands of entries (three pushes or replacements to each
        /// pop), so that walks go several levels deep.
        #[test]
        fn deep_heaps_come_out_in_order(ops in prop::collection::vec((0usize..4, 0u64..1_000_000), 200..4000)) {
            let kinds = [Op::Pop, Op::Replace, Op::Push, Op::Push];
            agrees(ops.into_iter().map(|(k, v)| (kinds[k], v)))?;
        }
    }
}
