//! The `occ` server: one database row with a version, written with optimistic concurrency
//! control, as in the AWS "Exponential Backoff And Jitter" simulation.
//!
//! An attempt reads the version (instantly, no work), then writes with the version it read.
//! The write succeeds and bumps the version if nobody wrote in between, else it is a
//! `conflict`. Only writes are server work. The server is never told that a client gave up, so
//! an abandoned write still lands.
//!
//! The version changes only when a write wins, so a write knows whether the version it read
//! is still the row's from the instant of its read alone: it conflicts exactly when some
//! write won at or after that instant. Reads therefore need not be events of their own: the
//! driver hands the write its read instant. At one instant, reads come before writes: a read
//! at the instant a write wins sees the version before it.
//!
//! The driver keeps a read's instant on its call while the write is on its way; a call with
//! two writes on their way (an attempt abandoned after its read, then a retry read before
//! its write lands) leaves the second with the row, which keeps it under a ticket
//! ([`OccServer::read`]) the write brings back ([`OccServer::take_read`]), so that an event
//! carries a ticket rather than an instant and memory follows the writes in flight.

use crate::engine::SimTime;

/// The row.
#[derive(Debug, Clone, Default)]
pub struct OccServer {
    /// When the last write won, or `None` before the first.
    last_won: Option<SimTime>,
    /// Writes that succeeded.
    pub writes_applied: u64,
    /// Read instants by ticket; the free tickets.
    reads: Vec<SimTime>,
    free: Vec<u32>,
}

impl OccServer {
    /// A row nobody has written.
    pub fn new() -> Self {
        OccServer::default()
    }

    /// A read at `at` whose write will follow: the ticket the write brings back.
    #[inline(always)]
    pub fn read(&mut self, at: SimTime) -> u32 {
        match self.free.pop() {
            Some(ticket) => {
                self.reads[ticket as usize] = at;
                ticket
            }
            None => {
                self.reads.push(at);
                (self.reads.len() - 1) as u32
            }
        }
    }

    /// The instant of the read with `ticket`, whose write has come (the ticket is free
    /// again).
    #[inline]
    pub fn take_read(&mut self, ticket: u32) -> SimTime {
        self.free.push(ticket);
        self.reads[ticket as usize]
    }

    /// A conditional write landing `now`, carrying the version its client read at `read_at`
    /// (no later than `now`). Returns whether it won.
    pub fn write(&mut self, read_at: SimTime, now: SimTime) -> bool {
        debug_assert!(read_at <= now, "a write lands after its read");
        if self.last_won.is_some_and(|won| won >= read_at) {
            return false;
        }
        self.last_won = Some(now);
        self.writes_applied += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_second_writer_of_a_version_conflicts() {
        let mut row = OccServer::new();
        // a and b both read at 1; a writes at 5 and wins, b writes at 6 with a stale version.
        assert!(row.write(SimTime(1), SimTime(5)));
        assert!(
            !row.write(SimTime(1), SimTime(6)),
            "b read before a's write won"
        );
        // A read after the win sees the new version.
        assert!(row.write(SimTime(6), SimTime(9)));
        assert_eq!(row.writes_applied, 2);
    }

    #[test]
    fn tickets_give_back_their_reads_and_are_reused() {
        let mut row = OccServer::new();
        let a = row.read(SimTime(1));
        let b = row.read(SimTime(2));
        assert_eq!(row.take_read(a), SimTime(1));
        let c = row.read(SimTime(3));
        assert_eq!(c, a, "a free ticket is reused");
        assert_eq!(row.take_read(b), SimTime(2));
        assert_eq!(row.take_read(c), SimTime(3));
        assert_eq!(row.reads.len(), 2, "memory follows the writes in flight");
    }

    #[test]
    fn a_read_at_the_instant_of_a_win_sees_the_version_before_it() {
        let mut row = OccServer::new();
        // Zero-latency hops: everyone reads and writes at the same instant; one wins.
        assert!(row.write(SimTime(3), SimTime(3)));
        assert!(!row.write(SimTime(3), SimTime(3)));
        // A read at 3 and a write at 4: the win at 3 was not seen.
        assert!(!row.write(SimTime(3), SimTime(4)));
        assert!(row.write(SimTime(4), SimTime(4)));
        assert_eq!(row.writes_applied, 2);
    }
}
