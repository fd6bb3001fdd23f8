//! The call slots of a run: a slab that only grows, indexed by the slot numbers it hands out
//! without a bounds check on every access of the hot path.
//!
//! It is not a general container: it has no way to remove a slot (ended calls' slots are
//! reused through `Sim::free_calls`), which is what makes every slot number it ever handed
//! out valid for the rest of the run.

use std::ops::{Index, IndexMut};

use super::client::CallState;

/// Logical calls by slot. Every slot number the driver holds (in an event, a queued job, a
/// work, a hedge list or a key store's waiters) was returned by [`Calls::push`], and the
/// slab never shrinks, so it stays below the number of slots: indexing is checked only in debug
/// builds.
#[derive(Debug, Default)]
pub(super) struct Calls {
    slots: Vec<CallState>,
}

impl Calls {
    /// Adds a call in a new slot and returns its number.
    #[inline]
    pub fn push(&mut self, call: CallState) -> u32 {
        self.slots.push(call);
        (self.slots.len() - 1) as u32
    }

    /// Every slot, in use or free.
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, CallState> {
        self.slots.iter_mut()
    }
}

impl Index<u32> for Calls {
    type Output = CallState;

    #[inline(always)]
    fn index(&self, slot: u32) -> &CallState {
        debug_assert!(
            (slot as usize) < self.slots.len(),
            "slot {slot} never handed out"
        );
        // SAFETY: `slot` was returned by `push` (see the type's invariant: the driver holds no
        // other slot numbers, and `NONE` is compared against before any use), so it was
        // below `slots.len()` then; nothing removes slots, so it still is.
        unsafe { self.slots.get_unchecked(slot as usize) }
    }
}

impl IndexMut<u32> for Calls {
    #[inline(always)]
    fn index_mut(&mut self, slot: u32) -> &mut CallState {
        debug_assert!(
            (slot as usize) < self.slots.len(),
            "slot {slot} never handed out"
        );
        // SAFETY: as in `index`: every slot number the driver holds came from `push`, and
        // the slab never shrinks.
        unsafe { self.slots.get_unchecked_mut(slot as usize) }
    }
}

/// A table whose length is fixed when the run is assembled: the call edges, and the
/// services' hosts. Every index the driver holds into one was made at assembly from the
/// table's length (an edge's number is its group's, or a service's first edge plus one of
/// its calls; a host's is a service's index or `Sim::host` of one of its replicas), and no
/// method changes the length, so indexing by `usize` is checked only in debug builds.
/// Ranges (`as_slice`) and iteration go through the slice it derefs to, checked as usual.
#[derive(Debug)]
pub(super) struct Fixed<T> {
    items: Vec<T>,
}

impl<T> Fixed<T> {
    /// The table of `items`, whose length it keeps.
    pub fn new(items: Vec<T>) -> Self {
        Fixed { items }
    }

    /// The items, for ranges (checked).
    pub fn as_slice(&self) -> &[T] {
        &self.items
    }

    /// The items, for ranges (checked).
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.items
    }

    /// The items, once the run is over.
    pub fn into_vec(self) -> Vec<T> {
        self.items
    }
}

impl<T> std::ops::Deref for Fixed<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.items
    }
}

impl<T> std::ops::DerefMut for Fixed<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.items
    }
}

impl<T> Index<usize> for Fixed<T> {
    type Output = T;

    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        debug_assert!(i < self.items.len(), "index {i} not made at assembly");
        // SAFETY: every index the driver holds was made at assembly from this table's length
        // (see the type), and nothing changes the length afterwards: `i < items.len()`.
        unsafe { self.items.get_unchecked(i) }
    }
}

impl<T> IndexMut<usize> for Fixed<T> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        debug_assert!(i < self.items.len(), "index {i} not made at assembly");
        // SAFETY: as in `index`: the index was made from this length, which never changes.
        unsafe { self.items.get_unchecked_mut(i) }
    }
}
