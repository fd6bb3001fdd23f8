//! What a tune compares: a metric of summary.json, the clients' or one service's, read from
//! each replication; objectives say which way is better, constraints bound it.

use crate::metrics::recovery::Recovery;
use crate::metrics::{Better, Digest, LatencyPool, Metric, ServiceMetric, Unit};

/// One number a replication yields, and how it is printed.
#[derive(Debug, Clone)]
pub struct Measure {
    /// summary.json's key, with `@service` for a service's.
    pub key: String,
    /// Its name for people, without the unit.
    pub label: String,
    /// Its unit after `scale`.
    pub unit: Unit,
    /// Factor from the stored value to the printed one.
    pub scale: f64,
    /// Decimals printed.
    pub decimals: usize,
    /// Which way is better.
    pub better: Better,
    source: Source,
}

impl PartialEq for Measure {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

#[derive(Debug, Clone, Copy)]
enum Source {
    /// A per-replication metric of the whole run.
    Run(Metric),
    /// A latency percentile of the run, pooled over replications when summarised: the
    /// family (0 all, 1 successes, 2 failures) and the field.
    Latency(Metric, usize, LatencyField),
    /// A metric of the service at this index.
    Service(ServiceMetric, usize),
    /// 1 when the replication recovered after its faults, else 0.
    Recovered,
    /// Largest attempts per first attempt over 5 s of the episode.
    PeakAmplification,
}

#[derive(Debug, Clone, Copy)]
enum LatencyField {
    P50,
    P90,
    P99,
    P999,
}

/// An objective: a measure to make better.
#[derive(Debug, Clone)]
pub struct Objective {
    /// What is compared.
    pub measure: Measure,
    /// Differences up to this do not matter; `None`: 1 % of the best value.
    pub tolerance: Option<f64>,
}

impl Objective {
    /// The difference that does not matter when the best value is `best`.
    pub fn tolerance_at(&self, best: f64) -> f64 {
        self.tolerance.unwrap_or(0.01 * best.abs())
    }
}

/// A bound on a measure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// The value must not exceed it.
    AtMost(f64),
    /// The value must not fall below it.
    AtLeast(f64),
}

impl Bound {
    /// Whether `x` keeps the bound.
    pub fn holds(self, x: f64) -> bool {
        match self {
            Bound::AtMost(b) => x <= b,
            Bound::AtLeast(b) => x >= b,
        }
    }

    /// How far `x` is inside the bound (negative outside).
    pub fn slack(self, x: f64) -> f64 {
        match self {
            Bound::AtMost(b) => b - x,
            Bound::AtLeast(b) => x - b,
        }
    }

    /// `at most 500` in the measure's printed unit.
    pub fn text(self, m: &Measure) -> String {
        let (word, b) = match self {
            Bound::AtMost(b) => ("at most", b),
            Bound::AtLeast(b) => ("at least", b),
        };
        format!("{word} {}", m.text(b))
    }
}

/// A constraint: a measure's bound at one fault or at all.
#[derive(Debug, Clone)]
pub struct Constraint {
    /// What is bounded.
    pub measure: Measure,
    /// The bound.
    pub bound: Bound,
    /// The fault (index in the suite) it holds at; `None`: every fault.
    pub fault: Option<usize>,
}

/// The metrics of the whole run a tune may name: those with a better direction.
fn run_metrics() -> impl Iterator<Item = Metric> {
    Metric::PER_REPLICATION
        .into_iter()
        .chain([Metric::HEDGES, Metric::DEGRADED])
        .filter(|m| m.better != Better::Neither)
}

const LATENCY_FAMILIES: [&str; 3] = ["latency_ms", "success_latency_ms", "failure_latency_ms"];

impl Measure {
    /// The measure `key` names (at `service`, one of `services`), or what is wrong.
    pub fn find(key: &str, service: Option<&str>, services: &[String]) -> Result<Measure, String> {
        match service {
            Some(name) => Self::of_service(key, name, services),
            None => Self::of_run(key),
        }
    }

    fn of_run(key: &str) -> Result<Measure, String> {
        let recovery = |label: &str, unit, scale, decimals, better, source| Measure {
            key: key.to_string(),
            label: label.to_string(),
            unit,
            scale,
            decimals,
            better,
            source,
        };
        match key {
            "recovery.recovered_fraction" => {
                return Ok(recovery(
                    "recovered",
                    Unit::Percent,
                    100.0,
                    0,
                    Better::Higher,
                    Source::Recovered,
                ));
            }
            "recovery.peak_amplification" => {
                return Ok(recovery(
                    "peak amplification",
                    Unit::Times,
                    1.0,
                    2,
                    Better::Lower,
                    Source::PeakAmplification,
                ));
            }
            _ => {}
        }
        let metric = run_metrics().find(|m| m.key == key).ok_or_else(|| {
            let known: Vec<&str> = run_metrics().map(|m| m.key).collect();
            format!(
                "metric {key:?} is not one a tune can compare; use one of {}, recovery.recovered_fraction, recovery.peak_amplification, or a service's metric with \"service\"",
                known.join(", ")
            )
        })?;
        let source = match key.split_once('.') {
            Some((family, field)) if LATENCY_FAMILIES.contains(&family) => {
                let f = match field {
                    "p50" => Some(LatencyField::P50),
                    "p90" => Some(LatencyField::P90),
                    "p99" => Some(LatencyField::P99),
                    "p999" => Some(LatencyField::P999),
                    _ => None,
                };
                let i = LATENCY_FAMILIES
                    .iter()
                    .position(|x| *x == family)
                    .unwrap_or(0);
                f.map_or(Source::Run(metric), |f| Source::Latency(metric, i, f))
            }
            _ => Source::Run(metric),
        };
        Ok(Measure {
            key: key.to_string(),
            label: metric.label.to_string(),
            unit: metric.unit,
            scale: metric.scale,
            decimals: metric.decimals,
            better: metric.better,
            source,
        })
    }

    fn of_service(key: &str, name: &str, services: &[String]) -> Result<Measure, String> {
        let index = services.iter().position(|s| s == name).ok_or_else(|| {
            format!(
                "service {name:?} is not in the scenario; its services are {}",
                services.join(", ")
            )
        })?;
        let usable = || {
            ServiceMetric::ALL
                .into_iter()
                .filter(|m| m.better != Better::Neither)
        };
        let metric = usable().find(|m| m.key == key).ok_or_else(|| {
            let known: Vec<&str> = usable().map(|m| m.key).collect();
            format!(
                "metric {key:?} is not a service metric a tune can compare; use one of {}",
                known.join(", ")
            )
        })?;
        Ok(Measure {
            key: format!("{key}@{name}"),
            label: format!("{} at {name}", metric.label),
            unit: metric.unit,
            scale: metric.scale,
            decimals: metric.decimals,
            better: metric.better,
            source: Source::Service(metric, index),
        })
    }

    /// The label with its unit: `p99 latency, all (ms)`.
    pub fn title(&self) -> String {
        match self.unit {
            Unit::Count => self.label.clone(),
            u => format!("{} ({})", self.label, u.suffix()),
        }
    }

    /// A stored value as printed, with its unit: `99.2 %`, `412.0 ms`.
    pub fn text(&self, stored: f64) -> String {
        let d = self.decimals;
        let x = stored * self.scale;
        match self.unit {
            Unit::Count => format!("{x:.d$}"),
            Unit::Percent => format!("{x:.d$} %"),
            Unit::Times => format!("{x:.d$}x"),
            u => format!("{x:.d$} {}", u.suffix()),
        }
    }

    /// +1 where higher is better, -1 where lower is.
    pub fn sign(&self) -> f64 {
        if self.better == Better::Higher {
            1.0
        } else {
            -1.0
        }
    }

    /// Whether this measure's summary is a pooled percentile rather than a mean.
    pub fn pooled(&self) -> bool {
        matches!(self.source, Source::Latency(..))
    }

    /// One replication's value, or `None` where the measure does not apply to it (a
    /// latency where no request ended, recovery without a fault to recover from).
    pub fn of_replication(&self, run: &Digest, recovery: Option<&Recovery>) -> Option<f64> {
        match self.source {
            Source::Run(m) | Source::Latency(m, ..) => m.get(&run.metrics),
            Source::Service(m, i) => run.metrics.services.get(i).map(|s| m.value(s)),
            Source::Recovered => recovery.map(|r| f64::from(u8::from(r.recovered_at.is_some()))),
            Source::PeakAmplification => recovery.map(|r| r.peak_amplification),
        }
    }

    /// The percentile of every replication's latencies pooled, for a latency percentile;
    /// `None` for other measures or where no latency was recorded.
    pub fn of_pool(&self, pool: &LatencyPool) -> Option<f64> {
        let Source::Latency(_, family, field) = self.source else {
            return None;
        };
        let mut h = match family {
            2 => pool.failure.clone(),
            _ => pool.success.clone(),
        };
        if family == 0 {
            h.merge(&pool.failure);
        }
        if h.count() == 0 {
            return None;
        }
        let l = h.summary();
        Some(match field {
            LatencyField::P50 => l.p50,
            LatencyField::P90 => l.p90,
            LatencyField::P99 => l.p99,
            LatencyField::P999 => l.p999,
        })
    }
}
