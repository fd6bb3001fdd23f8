//! The `occ` server: one database row with a version, written with optimistic concurrency
//! control, as in the AWS "Exponential Backoff And Jitter" simulation.
//!
//! An attempt reads the version (instantly, no work), then writes with the version it read.
//! The write succeeds and bumps the version if nobody wrote in between, else it is a
//! `conflict`. Only writes are server work. The server is never told that a client gave up, so
//! an abandoned write still lands.

/// The row.
#[derive(Debug, Clone, Default)]
pub struct OccServer {
    version: u32,
    /// Writes that succeeded.
    pub writes_applied: u64,
}

impl OccServer {
    /// A row at version 0.
    pub fn new() -> Self {
        OccServer::default()
    }

    /// The current version (what a read returns).
    pub fn read(&self) -> u32 {
        self.version
    }

    /// A conditional write carrying the version its client read. Returns whether it won.
    pub fn write(&mut self, read_version: u32) -> bool {
        if read_version == self.version {
            self.version = self.version.wrapping_add(1);
            self.writes_applied += 1;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_second_writer_of_a_version_conflicts() {
        let mut row = OccServer::new();
        let a = row.read();
        let b = row.read();
        assert!(row.write(a));
        assert!(!row.write(b), "b read a version that a has since replaced");
        assert!(row.write(row.read()));
        assert_eq!(row.writes_applied, 2);
    }
}
