//! report.md's "Recovery" section: for each variant, in words, whether and when it recovered
//! after its triggers, counting replications rather than averaging them.

use std::fmt::Write as _;

use super::compare::unawaited;
use super::compare::{RELATIVE, share};
use super::escape;
use crate::engine::{SimDuration, SimTime};
use crate::metrics::RecoveryMetrics;
use crate::metrics::VariantResult;
use crate::metrics::series::{COLUMNS, Column};
use crate::scenario::Scenario;

/// The "Recovery" section: for each variant, in words, the goodput before the trigger, the
/// trigger windows, whether and when it recovered (counting replications rather than averaging
/// them, with the Wilson interval of the share), how deep goodput dipped and for how long it
/// stayed under 90 %. Nothing without triggers.
pub(super) fn recovery_section(
    out: &mut String,
    scenarios: &[&Scenario],
    variants: &[VariantResult],
    server: &str,
) {
    if !variants.iter().any(|v| v.metrics.recovery.is_some()) {
        return;
    }
    let all: Vec<String> = scenarios.iter().map(|s| windows(s)).collect();
    let shared = all.windows(2).all(|w| w[0] == w[1]);
    let _ = writeln!(out, "\n## Recovery\n");
    let _ = write!(
        out,
        "A trigger (a load spike or a fault) pushes the system towards overload"
    );
    if shared && !all[0].is_empty() {
        let _ = write!(out, ", here {}", all[0]);
    }
    let _ = writeln!(
        out,
        ". A replication has recovered at time t after the last trigger ends when its goodput (requests that succeeded per second) over [t, t + 5 s) is back to at least 90 % of its level before the first trigger, and its mean from t to the end of the run is too; the drain after new requests stop does not count. A replication that never gets there is metastable: the trigger is gone, the overload is not. The dip is the lowest goodput over 5 s from the trigger's start on, relative to that level; a system can recover at once after the trigger and still have dipped during it. Latency is judged apart, on the same buckets: p99 is back at the first t after the trigger where requests are answered (successful, or degraded by a fallback) and the p99 of those answered over [t, t + 5 s), and from t to the end of the run, is at most 10 % above its level before the trigger (read at the 12 % resolution of the latency bins: the same bin or a lower one).\n"
    );
    for (v, s) in variants.iter().zip(scenarios) {
        let Some(r) = v.metrics.recovery else {
            let _ = writeln!(
                out,
                "- **{}**: no recovery analysis (no trigger, or no time before it to measure goodput).",
                escape(&v.name)
            );
            continue;
        };
        let mut line = format!("- **{}**: ", escape(&v.name));
        if !shared {
            let _ = write!(line, "triggers {}; ", windows(s));
        }
        let _ = write!(
            line,
            "before the trigger it completed {:.1} requests/s. {}",
            r.baseline_per_s,
            outcome(&r)
        );
        let h = v.ci95.recovery.unwrap_or_default();
        let pm = |x: f64| {
            if r.replications > 1.0 {
                format!(" ± {x:.1}")
            } else {
                String::new()
            }
        };
        let _ = write!(
            line,
            " Goodput dipped to {} %{} of that level and stayed under 90 % for {:.1}{} s.{}",
            share(100.0 * r.dip_fraction, 0),
            pm(100.0 * h.dip_fraction),
            r.below_90_s,
            pm(h.below_90_s),
            p99_outcome(&r),
        );
        let _ = write!(
            out,
            "{line} {}{}",
            episode_load(&r, v, server),
            bucket_peak_and_after(&r, v, s, server)
        );
        match storm_load(v, s, server) {
            Some(storm) => {
                let _ = writeln!(out, " {storm}");
            }
            None => {
                let _ = writeln!(out);
            }
        }
    }
}

/// A scenario's trigger windows: "from 10 s to 15 s, from 30 s to 31 s".
fn windows(s: &Scenario) -> String {
    let parts: Vec<String> = s
        .triggers()
        .iter()
        .map(|t| {
            format!(
                "from {} to {}",
                seconds(t.from.as_millis_f64()),
                seconds(t.to.as_millis_f64())
            )
        })
        .collect();
    parts.join(", ")
}

/// Whether the replications recovered: none (metastable), all (with the median time and,
/// from ten replications, the 90th percentile), or some, which no average describes.
fn outcome(r: &RecoveryMetrics) -> String {
    let (n, k) = (r.replications, r.recovered);
    let median = r.median_recovery_s.unwrap_or(0.0);
    let reps = |x: f64| format!("{x:.0} replication{}", if x == 1.0 { "" } else { "s" });
    // The Wilson interval of the share that recovered, with more than one replication.
    let bounds = (n > 1.0).then(|| {
        format!(
            "95 % interval {:.0}-{:.0} %",
            100.0 * r.recovered_fraction_lower,
            100.0 * r.recovered_fraction_upper
        )
    });
    let interval = bounds.as_ref().map_or(String::new(), |b| format!(" ({b})"));
    if k == 0.0 {
        let any = if n == 1.0 {
            String::new()
        } else {
            format!(" in any of its {}{interval}", reps(n))
        };
        return format!("Metastable: its goodput did not recover by the end of the run{any}.");
    }
    if k == n {
        let spread = match r.p90_recovery_s {
            Some(p90) if n >= 10.0 && p90 > median => format!(" (90 % within {p90:.1} s)"),
            _ => String::new(),
        };
        let which = if n == 1.0 { "its" } else { "all" };
        return format!(
            "Its goodput recovered in {which} {}{interval}, back to 90 % of that level a median {median:.1} s after the trigger ended{spread}.",
            reps(n)
        );
    }
    format!(
        "{k:.0} of {} ({:.0} %{}) recovered their goodput (back to 90 % of that level a median {median:.1} s after the trigger ended); the others stayed collapsed to the end: an average of the two would describe no run.",
        reps(n),
        100.0 * k / n,
        bounds.map_or(String::new(), |b| format!(", {b}"))
    )
}

/// Whether the p99 of answered requests came back within 10 % of its level before the
/// trigger, and when, counting replications as [`outcome`] does: " Its p99 ... was back ...".
/// Empty when no replication had answers before the trigger.
fn p99_outcome(r: &RecoveryMetrics) -> String {
    let (Some(level), n) = (r.p99_before_ms, r.p99_judged) else {
        return String::new();
    };
    let k = r.p99_back;
    let median = r.median_p99_back_s.unwrap_or(0.0);
    let head = format!(
        " Its p99 latency of answered requests was {} within 10 % of its pre-trigger {}",
        if k == 0.0 { "not back" } else { "back" },
        milliseconds(level)
    );
    let reps = if n == 1.0 {
        "replication"
    } else {
        "replications"
    };
    let tail = if k == 0.0 {
        let any = if n == 1.0 {
            String::new()
        } else {
            format!(" in any of its {n:.0} {reps}")
        };
        format!(" by the end of the run{any}")
    } else if k == n {
        let which = if n == 1.0 { "its" } else { "all" };
        format!(" in {which} {n:.0} {reps}, a median {median:.1} s after the trigger ended")
    } else {
        format!(
            " in {k:.0} of {n:.0} {reps}, a median {median:.1} s after the trigger ended, and not by the end of the run in the others"
        )
    };
    let unjudged = r.replications - n;
    let note = if unjudged > 0.0 {
        format!(" ({unjudged:.0} answered nothing before the trigger)")
    } else {
        String::new()
    };
    format!("{head}{tail}{note}.")
}

/// A latency in words: "45 ms", "2.5 ms", "0.35 ms", "1.6 s".
fn milliseconds(ms: f64) -> String {
    if ms >= 1000.0 {
        seconds(ms)
    } else if ms >= 10.0 {
        format!("{ms:.0} ms")
    } else if ms >= 1.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

/// The load from the trigger until recovery (or the end of the run): its peak amplification
/// and the share of the server's work wasted.
fn episode_load(r: &RecoveryMetrics, v: &VariantResult, server: &str) -> String {
    let (n, k) = (r.replications, r.recovered);
    format!(
        "From the trigger's start until {}, the load peaked at {:.2} attempts per logical request started (the worst 5 s, or the whole stretch when shorter; mean over replications) and {} % of {server}'s work was wasted on attempts {}.",
        if k == n {
            "it recovered"
        } else if k == 0.0 {
            "the end of the run"
        } else {
            "recovery (or the end of the run)"
        },
        r.peak_amplification,
        share(100.0 * r.wasted_fraction, 0),
        unawaited(&v.metrics)
    )
}

/// What the stretch of [`episode_load`] leaves out, from the mean time series: the most
/// attempts per request started in one bucket of the triggers, where 5 s windows average it
/// away by more than 5 % (retry-budget's breaker: 0.21 over 5 s, about 2 in the 0.4 s after
/// it closed); and the work wasted after the last trigger ended, to the end of the run and its
/// drain, beside the whole run's share that Findings give (load-shedding's lifo: none until it
/// recovered, then a backlog served for nobody).
fn bucket_peak_and_after(
    r: &RecoveryMetrics,
    v: &VariantResult,
    s: &Scenario,
    server: &str,
) -> String {
    let rows = &v.series;
    let col = |i: usize, c: Column| rows[i][c as usize];
    let peak = trigger_buckets(s, v.bucket, rows.len())
        .into_iter()
        .filter(|&i| col(i, Column::Started) > 0.0)
        .map(|i| col(i, Column::Attempts) / col(i, Column::Started))
        .fold(0.0, f64::max);
    let mut text = String::new();
    if peak > (1.0 + RELATIVE) * r.peak_amplification {
        text = format!(
            " Bucket by bucket, the load peaked higher, at {peak:.2} attempts per request started (the busiest {} bucket of the trigger).",
            v.bucket
        );
    }
    let end = s
        .triggers()
        .iter()
        .map(|t| t.to.as_nanos())
        .max()
        .unwrap_or(0);
    let after = end.div_ceil(v.bucket.as_nanos().max(1)) as usize..rows.len();
    let sum = |c: Column| after.clone().map(|i| col(i, c)).sum::<f64>();
    let (served, wasted, e) = (sum(Column::Served), sum(Column::Wasted), v.metrics.entry());
    if served > 0.0 && wasted >= 0.01 * served {
        let _ = write!(
            text,
            " After the trigger ended ({}), to the end of the run and its drain, {server} wasted {wasted:.0} attempts, {} % of what it served then; over the whole run, as Findings count it, {} %.",
            seconds(end as f64 / 1e6),
            share(100.0 * wasted / served, 0),
            share(100.0 * e.wasted / e.served.max(1.0), 0)
        );
    }
    text
}

/// The load during the triggers, read from the mean time series: the most retries per second
/// the clients sent in a bucket that overlaps a trigger and their mean over those buckets, and
/// the most attempts per second each service received. `None` when no bucket overlaps one.
fn storm_load(v: &VariantResult, s: &Scenario, server: &str) -> Option<String> {
    let during = trigger_buckets(s, v.bucket, v.series.len());
    if during.is_empty() {
        return None;
    }
    let per_s = 1e9 / v.bucket.as_nanos() as f64;
    let peak = |rows: &[[f64; COLUMNS]], col: Column| {
        during
            .iter()
            .map(|&i| rows[i][col as usize] * per_s)
            .fold(0.0, f64::max)
    };
    let retries = during
        .iter()
        .map(|&i| v.series[i][Column::Retries as usize])
        .sum::<f64>()
        * per_s
        / during.len() as f64;
    let hedged = s.client_policies().any(|p| p.hedge.is_some());
    let mut text = format!(
        "During the trigger the clients sent up to {:.0} retries/s{} ({retries:.0}/s on average over it), and ",
        peak(&v.series, Column::Retries),
        if hedged { ", hedges included" } else { "" }
    );
    let below: Vec<String> = s
        .services
        .iter()
        .zip(&v.service_series)
        .skip(1)
        .filter(|(_, series)| series.rows.len() == v.series.len())
        .map(|(service, series)| {
            format!(
                "**{}** up to {:.0}/s",
                escape(&service.name),
                peak(&series.rows, Column::Attempts)
            )
        })
        .collect();
    let _ = write!(
        text,
        "{server} received up to {:.0} attempts/s",
        peak(&v.series, Column::Attempts)
    );
    if !below.is_empty() {
        let (last, init) = below.split_last().expect("not empty");
        if init.is_empty() {
            let _ = write!(text, " and {last}");
        } else {
            let _ = write!(text, ", {} and {last}", init.join(", "));
        }
    }
    let _ = write!(
        text,
        " (the busiest {} bucket, in the mean over replications).",
        v.bucket
    );
    Some(text)
}

/// The indices of the time-series buckets (of width `bucket`, `rows` of them) that overlap
/// one of `s`'s triggers.
pub(super) fn trigger_buckets(s: &Scenario, bucket: SimDuration, rows: usize) -> Vec<usize> {
    let w = bucket.as_nanos().max(1);
    let triggers = s.triggers();
    (0..rows)
        .filter(|&i| {
            let (lo, hi) = (i as u64 * w, (i as u64 + 1) * w);
            triggers.iter().any(|t| {
                (t.from - SimTime::ZERO).as_nanos() < hi && (t.to - SimTime::ZERO).as_nanos() > lo
            })
        })
        .collect()
}

fn seconds(ms: f64) -> String {
    if ms >= 10_000.0 {
        format!("{:.0} s", ms / 1000.0)
    } else if ms >= 1000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        format!("{ms:.0} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::variant;
    use super::*;
    use crate::scenario::{LoadOptions, load_str};

    /// retry-budget's breaker: "peaked at 0.21 attempts per logical request" over 5 s hid a
    /// bucket of about 2; load-shedding's lifo: "0 % of the server's work was wasted" until it
    /// recovered, 38 % in Findings, and its backlog served for nobody after the trigger.
    #[test]
    fn the_recovery_line_names_the_bucket_peak_and_the_waste_after_the_trigger() {
        let text = r#"{"name": "o", "duration": "6s",
            "clients": {"count": 5, "workload": {"open": {"rate_per_s": 100}}},
            "server": {"concurrency": 8, "service_time": {"constant": "5ms"},
                       "faults": [{"from": "2s", "to": "3s", "outage": "reject"}]},
            "metrics": {"bucket": "500ms"}}"#;
        let e = load_str(text, "o.json", &LoadOptions::default()).unwrap();
        let s = &e.points[0].variants[0].scenario;
        let mut v = variant("lifo", |m| {
            (m.services[0].served, m.services[0].wasted) = (1000.0, 380.0);
        });
        v.bucket = SimDuration::from_millis(500);
        v.series = vec![[0.0; COLUMNS]; 14];
        for (i, row) in v.series.iter_mut().enumerate() {
            row[Column::Started as usize] = 50.0;
            row[Column::Attempts as usize] = if i == 4 { 104.0 } else { 50.0 };
            // From 3 s on, half of what is served is wasted.
            row[Column::Served as usize] = 50.0;
            row[Column::Wasted as usize] = if i >= 6 { 25.0 } else { 0.0 };
        }
        let r = RecoveryMetrics {
            peak_amplification: 1.2,
            ..RecoveryMetrics::default()
        };
        assert_eq!(
            bucket_peak_and_after(&r, &v, s, "the server"),
            " Bucket by bucket, the load peaked higher, at 2.08 attempts per request started (the busiest 500ms bucket of the trigger). After the trigger ended (3.0 s), to the end of the run and its drain, the server wasted 200 attempts, 50 % of what it served then; over the whole run, as Findings count it, 38 %."
        );
        // A 5 s peak as high as the buckets', and no waste after the trigger: nothing to add.
        for row in &mut v.series {
            row[Column::Wasted as usize] = 0.0;
        }
        let r = RecoveryMetrics {
            peak_amplification: 2.08,
            ..RecoveryMetrics::default()
        };
        assert_eq!(bucket_peak_and_after(&r, &v, s, "the server"), "");
    }

    #[test]
    fn the_recovery_line_gives_the_retries_and_attempts_per_second_during_the_trigger() {
        let text = r#"{"name": "o", "seed": 3, "replications": 2, "duration": "6s",
            "clients": {"count": 50, "workload": {"open": {"rate_per_s": 200}}},
            "server": {"concurrency": 8, "service_time": {"constant": "5ms"},
                       "faults": [{"from": "2s", "to": "3s", "outage": "reject"}]},
            "policy": {"timeout": "1s", "retry": {"max_attempts": 3}},
            "metrics": {"bucket": "250ms"}}"#;
        let e = load_str(text, "o.json", &LoadOptions::default()).unwrap();
        let result = crate::runner::run(&e, 1, &|| {});
        let v = &result.points[0].variants[0];
        let s = &e.points[0].variants[0].scenario;
        let line = storm_load(v, s, "the server").unwrap();
        // Every attempt in the outage is answered `error` at once and retried at once: in a
        // bucket of the outage the clients send two retries per request started.
        let during = trigger_buckets(s, v.bucket, v.series.len());
        assert_eq!(during.len(), 4, "the buckets from 2 s to 3 s");
        let per_s = 4.0;
        let peak = during
            .iter()
            .map(|&i| v.series[i][Column::Retries as usize] * per_s)
            .fold(0.0, f64::max);
        assert!(peak > 300.0, "two retries per request at 200/s: {peak}");
        assert!(
            line.contains(&format!("up to {peak:.0} retries/s")),
            "{line}"
        );
        assert!(line.contains("the server received up to"), "{line}");
        assert!(line.contains("the busiest 250ms bucket"), "{line}");
    }
}
