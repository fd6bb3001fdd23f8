//! Fault windows: the triggers of metastable failures.
//!
//! A fault is a half-open window of simulated time `[from, to)` with one effect on the `queue`
//! server. The driver asks [`Faults`] what is in force at an instant; the server model is told
//! of concurrency changes at the window edges (the driver schedules those as events).

use crate::engine::SimTime;

/// What a fault does while it is in force.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FaultEffect {
    /// Every arriving attempt is answered at once (`reject`) or never (`drop`).
    Outage(Outage),
    /// Served attempts end `error` with this probability (instead of the server's own rate).
    ErrorRate(f64),
    /// Attempts that start service inside the window take this many times longer.
    ServiceTimeFactor(f64),
    /// The server has this many workers; 0 is a stall (nothing new starts).
    Concurrency(u32),
}

/// The two kinds of outage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outage {
    /// Every arrival is answered `error` at once.
    Reject,
    /// Arrivals vanish without an answer: clients time out.
    Drop,
}

/// One validated fault window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fault {
    /// Start of the window (inclusive).
    pub from: SimTime,
    /// End of the window (exclusive; `from < to`).
    pub to: SimTime,
    /// The effect.
    pub effect: FaultEffect,
    /// The one replica of a replicated service it strikes (`faults[i].replica`), or `None`:
    /// every replica.
    pub replica: Option<u32>,
}

impl Fault {
    /// Whether the window covers `t`.
    #[inline]
    pub fn covers(&self, t: SimTime) -> bool {
        self.from <= t && t < self.to
    }
}

/// A scenario's fault windows, in file order. When windows with the same kind of effect
/// overlap, the one listed last wins.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    windows: Vec<Fault>,
}

impl Faults {
    /// Wraps validated windows.
    pub fn new(windows: Vec<Fault>) -> Self {
        Faults { windows }
    }

    /// The windows, in file order.
    pub fn windows(&self) -> &[Fault] {
        &self.windows
    }

    /// The windows that strike replica `k`: those naming it and those naming none.
    pub fn for_replica(&self, k: u32) -> Faults {
        Faults::new(
            self.windows
                .iter()
                .filter(|f| f.replica.is_none_or(|r| r == k))
                .copied()
                .collect(),
        )
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }

    /// What `pick` finds in the last-listed window in force at `t`.
    fn last_in_force<T>(&self, t: SimTime, pick: impl Fn(&FaultEffect) -> Option<T>) -> Option<T> {
        self.windows
            .iter()
            .rev()
            .filter(|f| f.covers(t))
            .find_map(|f| pick(&f.effect))
    }

    /// The outage in force at `t`, if any.
    pub fn outage(&self, t: SimTime) -> Option<Outage> {
        self.last_in_force(t, |e| match e {
            FaultEffect::Outage(o) => Some(*o),
            _ => None,
        })
    }

    /// The error rate in force at `t`, if a fault sets one.
    pub fn error_rate(&self, t: SimTime) -> Option<f64> {
        self.last_in_force(t, |e| match e {
            FaultEffect::ErrorRate(p) => Some(*p),
            _ => None,
        })
    }

    /// The service-time factor in force at `t` (1 outside every slowdown window).
    pub fn service_time_factor(&self, t: SimTime) -> f64 {
        self.last_in_force(t, |e| match e {
            FaultEffect::ServiceTimeFactor(x) => Some(*x),
            _ => None,
        })
        .unwrap_or(1.0)
    }

    /// The worker count a fault imposes at `t`, if any.
    pub fn concurrency(&self, t: SimTime) -> Option<u32> {
        self.last_in_force(t, |e| match e {
            FaultEffect::Concurrency(c) => Some(*c),
            _ => None,
        })
    }

    /// Every instant at which a concurrency window starts or ends, sorted and deduplicated:
    /// the driver re-evaluates the worker count there.
    pub fn concurrency_edges(&self) -> Vec<SimTime> {
        let mut edges: Vec<SimTime> = self
            .windows
            .iter()
            .filter(|f| matches!(f.effect, FaultEffect::Concurrency(_)))
            .flat_map(|f| [f.from, f.to])
            .collect();
        edges.sort_unstable();
        edges.dedup();
        edges
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> SimTime {
        SimTime(s * 1_000_000_000)
    }

    #[test]
    fn windows_are_half_open_and_the_last_listed_wins() {
        let faults = Faults::new(vec![
            Fault {
                from: at(10),
                to: at(20),
                effect: FaultEffect::ErrorRate(0.5),
                replica: None,
            },
            Fault {
                from: at(15),
                to: at(25),
                effect: FaultEffect::ErrorRate(1.0),
                replica: None,
            },
            Fault {
                from: at(30),
                to: at(40),
                effect: FaultEffect::Concurrency(0),
                replica: None,
            },
        ]);
        assert_eq!(faults.error_rate(at(9)), None);
        assert_eq!(faults.error_rate(at(10)), Some(0.5));
        assert_eq!(faults.error_rate(at(15)), Some(1.0));
        assert_eq!(faults.error_rate(at(25)), None, "`to` is exclusive");
        assert_eq!(faults.concurrency(at(30)), Some(0));
        assert_eq!(faults.concurrency(at(40)), None);
        assert_eq!(faults.service_time_factor(at(12)), 1.0);
        assert_eq!(faults.concurrency_edges(), vec![at(30), at(40)]);
        assert_eq!(faults.outage(at(12)), None);
    }
}
