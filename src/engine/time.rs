//! Simulated time as integer nanoseconds.
//!
//! Every instant and every duration inside the simulation is a whole number of nanoseconds, so a
//! run is exactly reproducible on any machine. Floating point only appears when a random draw is
//! turned into a duration ([`SimDuration::from_secs_f64`]) and when results are reported.
//! Nothing here reads the wall clock.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

use serde::{Deserialize, Serialize};

/// Nanoseconds in one second.
pub const NANOS_PER_SEC: u64 = 1_000_000_000;

/// An instant of simulated time, in nanoseconds since the start of the run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct SimTime(pub u64);

/// A span of simulated time, in nanoseconds.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct SimDuration(pub u64);

impl SimTime {
    /// The start of every run.
    pub const ZERO: SimTime = SimTime(0);
    /// A time later than any run can reach; used for "never". It is also where an instant
    /// that would pass the largest representable one (about 584 years) lands: `+` saturates
    /// here, no event really happens at it, and the driver ends a run that reaches it (see
    /// `Truncation::EndOfTime`).
    pub const NEVER: SimTime = SimTime(u64::MAX);

    /// Nanoseconds since the start of the run.
    pub fn as_nanos(self) -> u64 {
        self.0
    }

    /// Seconds since the start of the run, for reporting.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_SEC as f64
    }

    /// Milliseconds since the start of the run, for reporting.
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// The time elapsed since `earlier`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl SimDuration {
    /// No time at all.
    pub const ZERO: SimDuration = SimDuration(0);

    /// A duration of `n` nanoseconds.
    pub const fn from_nanos(n: u64) -> Self {
        SimDuration(n)
    }

    /// A duration of `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        SimDuration(ms * 1_000_000)
    }

    /// A duration of `s` seconds.
    pub const fn from_secs(s: u64) -> Self {
        SimDuration(s * NANOS_PER_SEC)
    }

    /// Rounds a non-negative number of seconds to the nearest nanosecond. Negative and NaN
    /// inputs give zero; values beyond the range give the largest duration.
    #[inline]
    pub fn from_secs_f64(secs: f64) -> Self {
        let nanos = secs * NANOS_PER_SEC as f64;
        if nanos > 0.0 {
            // `as` saturates at u64::MAX; adding one half rounds to nearest (the hot path
            // avoids a libm call).
            SimDuration((nanos + 0.5) as u64)
        } else {
            // Zero, negative and NaN.
            SimDuration(0)
        }
    }

    /// Nanoseconds.
    pub fn as_nanos(self) -> u64 {
        self.0
    }

    /// Seconds, for arithmetic on draws and for reporting.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_SEC as f64
    }

    /// Milliseconds, for reporting.
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// Multiplies by a non-negative factor, rounding to the nearest nanosecond and saturating.
    pub fn mul_f64(self, factor: f64) -> Self {
        SimDuration::from_secs_f64(self.as_secs_f64() * factor)
    }

    /// Adds, saturating at the largest duration.
    pub fn saturating_add(self, other: SimDuration) -> Self {
        SimDuration(self.0.saturating_add(other.0))
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    /// Saturates at [`SimTime::NEVER`], so "never" stays never and an instant past the end of
    /// simulated time is "never", not a wrapped-around early one. An event scheduled there
    /// ends the run truncated when it comes up; it is never handled as if it happened.
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}

impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, d: SimDuration) {
        *self = *self + d;
    }
}

impl Sub<SimTime> for SimTime {
    type Output = SimDuration;
    /// Panics in debug builds if `rhs` is later; use [`SimTime::saturating_since`] when that can
    /// happen.
    fn sub(self, rhs: SimTime) -> SimDuration {
        SimDuration(self.0 - rhs.0)
    }
}

impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, rhs: SimDuration) -> SimDuration {
        self.saturating_add(rhs)
    }
}

impl fmt::Display for SimDuration {
    /// Formats with the largest unit that keeps the value readable, in the scenario syntax
    /// (`"250us"`, `"10ms"`, `"1.5s"`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        let (value, unit) = if n == 0 {
            return write!(f, "0s");
        } else if n.is_multiple_of(3_600_000_000_000) {
            (n / 3_600_000_000_000, "h")
        } else if n.is_multiple_of(60_000_000_000) && n >= 60_000_000_000 {
            (n / 60_000_000_000, "m")
        } else if n >= NANOS_PER_SEC {
            return write!(f, "{}s", trim(n as f64 / 1e9));
        } else if n >= 1_000_000 {
            return write!(f, "{}ms", trim(n as f64 / 1e6));
        } else if n >= 1_000 {
            return write!(f, "{}us", trim(n as f64 / 1e3));
        } else {
            (n, "ns")
        };
        write!(f, "{value}{unit}")
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        SimDuration(self.0).fmt(f)
    }
}

/// Formats a float with at most nine decimals and no trailing zeros.
fn trim(x: f64) -> String {
    let s = format!("{x:.9}");
    let s = s.trim_end_matches('0');
    s.trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_uses_scenario_syntax() {
        assert_eq!(SimDuration::from_millis(10).to_string(), "10ms");
        assert_eq!(SimDuration::from_millis(1500).to_string(), "1.5s");
        assert_eq!(SimDuration::from_nanos(250_000).to_string(), "250us");
        assert_eq!(SimDuration::from_secs(120).to_string(), "2m");
        assert_eq!(SimDuration::from_secs(3600).to_string(), "1h");
        assert_eq!(SimDuration::ZERO.to_string(), "0s");
        assert_eq!(SimDuration::from_nanos(7).to_string(), "7ns");
    }

    #[test]
    fn float_conversion_rounds_and_clamps() {
        assert_eq!(
            SimDuration::from_secs_f64(0.0105),
            SimDuration::from_nanos(10_500_000)
        );
        assert_eq!(SimDuration::from_secs_f64(-1.0), SimDuration::ZERO);
        assert_eq!(SimDuration::from_secs_f64(f64::NAN), SimDuration::ZERO);
        assert_eq!(SimDuration::from_secs_f64(1e30), SimDuration(u64::MAX));
    }

    #[test]
    fn never_stays_never() {
        assert_eq!(SimTime::NEVER + SimDuration::from_secs(1), SimTime::NEVER);
    }
}
