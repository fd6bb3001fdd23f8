//! report.md's findings at one point: sentences computed from the numbers, where the 95 %
//! intervals are apart and the difference matters; and the caveat for each truncated variant.

use std::fmt::Write as _;

use super::compare::{
    Est, RELATIVE, comparable, differ, differ_in, est, extremes, names, say, span,
};
use super::escape;
use crate::metrics::{Metric, Metrics};
use crate::model::Outcome;
use crate::runner::VariantResult;

/// Sentences computed from the numbers at one point (no sweep, or the sweep's focus value):
/// a finding only where the 95 % intervals are apart and the difference matters, never about
/// a truncated variant, never about a difference the setup forces (work is compared per
/// request when the variants start different numbers of requests).
pub fn findings(variants: &[VariantResult]) -> Vec<String> {
    findings_at(variants, "the server")
}

/// [`findings`], naming what the top-level numbers describe `server`: "the server", or a call
/// graph's entry service, which the clients' attempts reach.
pub(super) fn findings_at(variants: &[VariantResult], server: &str) -> Vec<String> {
    let mut out = Vec::new();
    let vs = comparable(variants);
    let plural = |g: &[&VariantResult], one: &str, many: &str| {
        if g.len() == 1 {
            one.to_string()
        } else {
            many.to_string()
        }
    };
    if vs.len() > 1 {
        let same_requests = extremes(&vs, &Metric::REQUESTS, true).is_none();
        // Work: attempts when the variants start the same requests, else per request.
        let work = if same_requests {
            Metric::ATTEMPTS
        } else {
            Metric::AMPLIFICATION
        };
        match extremes(&vs, &work, false) {
            Some((best, worst)) => {
                let w = est(worst, &work);
                let what = if same_requests {
                    format!("attempts to {server}")
                } else {
                    format!("attempts per request to {server}")
                };
                let fewer = |v: &&VariantResult| 100.0 * (1.0 - work.value(&v.metrics) / w.mean);
                let most = best.iter().map(fewer).fold(f64::NEG_INFINITY, f64::max);
                let least = best.iter().map(fewer).fold(f64::INFINITY, f64::min);
                let pct = if format!("{most:.0}") == format!("{least:.0}") {
                    format!("{most:.0}")
                } else {
                    format!("{least:.0}-{most:.0}")
                };
                out.push(format!(
                    "{} {} {pct} % fewer {what} than **{}** ({} against {}).",
                    names(&best),
                    plural(&best, "sends", "send"),
                    escape(&worst.name),
                    span(&work, &best),
                    say(&work, w.mean),
                ));
            }
            None => out.push(format!(
                "Every variant that ran to the end puts about the same {} on {server} (no two differ by more than their 95 % intervals and {:.0} %).",
                if same_requests { "work" } else { "work per request" },
                100.0 * RELATIVE
            )),
        }
        let k = Metric::SUCCESS_RATE;
        if let Some((best, worst)) = extremes(&vs, &k, true) {
            out.push(format!(
                "{} {} for {} of requests, **{}** for only {} ({} fail).",
                names(&best),
                plural(&best, "succeeds", "succeed"),
                span(&k, &best),
                escape(&worst.name),
                say(&k, est(worst, &k).mean),
                say(
                    &Metric::FAILURE_RATE,
                    est(worst, &Metric::FAILURE_RATE).mean
                ),
            ));
        }
        // Latency and completion time follow the load a variant is given: with different
        // numbers of requests, comparing them would report the setup, not the policy.
        if !same_requests {
            let k = Metric::REQUESTS;
            let lo = vs
                .iter()
                .map(|v| k.value(&v.metrics))
                .fold(f64::INFINITY, f64::min);
            let hi = vs.iter().map(|v| k.value(&v.metrics)).fold(0.0, f64::max);
            out.push(format!(
                "The variants start different numbers of requests ({} to {}), so their latency and completion times are not compared here: they follow from the load each is given.",
                k.format(lo),
                k.format(hi)
            ));
        }
        // Latency: of successful requests only, with each side's failure share beside it, so
        // that a policy which fails fast does not look fast.
        // The latency of a few survivors says nothing about a variant most of whose requests
        // failed, so only variants with at least half their requests successful take part.
        let with_successes: Vec<&VariantResult> = vs
            .iter()
            .filter(|v| v.metrics.succeeded > 0.0 && v.metrics.failure_rate <= 0.5)
            .copied()
            .collect();
        let k = Metric::SUCCESS_P99;
        if let Some((best, worst)) = extremes(&with_successes, &k, false).filter(|_| same_requests)
        {
            let fails = |v: &VariantResult| say(&Metric::FAILURE_RATE, v.metrics.failure_rate);
            // A fallback's answer counts with the successes' latency: call it what it is.
            let answered = if vs
                .iter()
                .any(|v| v.metrics.degraded.is_some_and(|d| d > 0.0))
            {
                "answered requests (successes and fallback answers)"
            } else {
                "successful requests"
            };
            out.push(format!(
                "The slowest 1 % of {answered} take at least {} with **{}** ({} of its requests fail) and at least {} with {} ({} fail{}).",
                say(&k, est(worst, &k).mean),
                escape(&worst.name),
                fails(worst),
                span(&k, &best),
                names(&best),
                span(&Metric::FAILURE_RATE, &best),
                "",
            ));
        }
        let k = Metric::COMPLETION;
        if let Some((best, worst)) = extremes(&vs, &k, false).filter(|_| same_requests) {
            out.push(format!(
                "The last request ends after {} with **{}** and after {} with {}.",
                say(&k, est(worst, &k).mean),
                escape(&worst.name),
                span(&k, &best),
                names(&best),
            ));
        }
    }
    let k = Metric::AMPLIFICATION;
    if let Some(top) = vs
        .iter()
        .max_by(|a, b| k.value(&a.metrics).total_cmp(&k.value(&b.metrics)))
    {
        let amp = est(top, &k);
        if amp.mean >= 1.5 {
            let group: Vec<&VariantResult> = vs
                .iter()
                .filter(|v| !differ(&k, est(v, &k), amp))
                .copied()
                .collect();
            if group.len() < vs.len() || vs.len() == 1 {
                out.push(format!(
                    "{} {} the load most, {}: each logical request reaches {server} {} times on average.",
                    names(&group),
                    plural(&group, "amplifies", "amplify"),
                    span(&k, &group),
                    span(&k, &group).trim_end_matches('x'),
                ));
            }
        }
    }
    // What each variant's failures and policies did, one sentence per variant that ran to
    // the end.
    for v in &vs {
        let m = &v.metrics;
        let mut parts: Vec<String> = Vec::new();
        let total = m.failed.total();
        if m.failure_rate >= 0.01 && total > 0.0 {
            let (o, n) = Outcome::FAILURES
                .iter()
                .map(|o| (*o, m.failed.get(*o)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap_or((Outcome::Error, 0.0));
            let how = if n >= total {
                format!("all with `{o}`")
            } else {
                // Never "100 %" unless it is all of them.
                let share = 100.0 * n / total;
                let share = if share >= 99.5 {
                    format!("{share:.1}")
                } else {
                    format!("{share:.0}")
                };
                format!("{share} % of them with `{o}`")
            };
            parts.push(format!(
                "fails {} of requests ({how})",
                say(&Metric::FAILURE_RATE, m.failure_rate)
            ));
        }
        if let Some(d) = v.degraded_rate.filter(|d| d.mean >= 0.01) {
            parts.push(format!(
                "a fallback answered {:.1} % of its requests (degraded: neither a success nor a failure)",
                100.0 * d.mean
            ));
        }
        if m.server.served > 0.0 && m.server.wasted / m.server.served >= 0.01 {
            parts.push(format!(
                "wastes {:.0} % of {server}'s work on attempts {}",
                100.0 * m.server.wasted / m.server.served,
                unawaited(m)
            ));
        }
        if m.budget_denials > 0.0 && m.requests > 0.0 {
            parts.push(format!(
                "its retry budget denied {:.0} retries, so {:.1} % of requests ended `budget_exhausted` instead of retrying",
                m.budget_denials,
                100.0 * m.failed.budget_exhausted / m.requests
            ));
        }
        if m.breaker.refusals > 0.0 {
            parts.push(format!(
                "its circuit breakers were open {:.1} % of the time and refused {:.0} attempts, which never reached {server}",
                100.0 * m.breaker.open_fraction,
                m.breaker.refusals
            ));
        }
        if m.hedges > 0.0 && m.requests > 0.0 {
            parts.push(format!(
                "sends {:.1} hedges per 100 requests, and a hedge answers first for {:.1} % of requests",
                100.0 * m.hedges / m.requests,
                100.0 * m.hedge_wins / m.requests
            ));
        }
        if m.server.cancelled > 0.0 {
            parts.push(format!(
                "has {server} drop {:.0} abandoned attempts it cancelled before they started",
                m.server.cancelled
            ));
        }
        if m.server.duplicates > 0.0 {
            parts.push(format!(
                "makes {server} execute {:.0} requests more than once: {:.0} duplicate side effects (a double charge, a second email)",
                m.server.duplicate_calls, m.server.duplicates
            ));
        }
        if m.server.replayed > 0.0 {
            parts.push(format!(
                "has {server} answer {:.0} repeats from its idempotency key memory instead of executing them again",
                m.server.replayed
            ));
        }
        if m.server.shed > 0.0 && m.attempts > 0.0 {
            parts.push(format!(
                "has {server} shed {:.0} attempts ({:.1} % of those that reached it) that had waited too long in a standing queue, answering them `rejected` at once instead of serving them late",
                m.server.shed,
                100.0 * m.server.shed / m.attempts
            ));
        }
        if !parts.is_empty() {
            let (first, rest) = parts.split_first().expect("not empty");
            let mut line = format!("**{}** {first}", escape(&v.name));
            if let Some((last, middle)) = rest.split_last() {
                for p in middle {
                    let _ = write!(line, "; {p}");
                }
                let _ = write!(line, "; {last}");
            }
            line.push('.');
            out.push(line);
        }
    }
    out
}

/// What duplicate side effects and idempotency keys did at the services `services` (their
/// numbers and names), in words.
fn duplicate_words(services: &[(crate::metrics::ServiceMetrics, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (s, name) in services {
        if s.duplicates > 0.0 {
            out.push(format!(
                "{name} executed {:.0} calls more than once: {:.0} duplicate side effects (a double charge, a second email)",
                s.duplicate_calls, s.duplicates
            ));
        }
        if s.replayed > 0.0 {
            out.push(format!(
                "{name} answered {:.0} repeats from its idempotency key memory instead of executing them again",
                s.replayed
            ));
        }
    }
    out
}

/// Findings of a call graph: for each service below the entry, which variants send it the
/// fewest and the most attempts per logical request, where their 95 % intervals are apart and
/// the difference matters (the entry's is the amplification above). Only variants that ran
/// to the end and have the same service at the same place take part.
pub(super) fn graph_findings(
    ran: &[crate::scenario::Variant],
    variants: &[VariantResult],
) -> Vec<String> {
    use crate::metrics::ServiceMetric;
    let mut out = Vec::new();
    let vs: Vec<(&VariantResult, &crate::scenario::Variant)> = variants
        .iter()
        .zip(ran)
        .filter(|(v, r)| !v.is_truncated() && r.scenario.is_graph())
        .collect();
    let Some((_, first)) = vs.first() else {
        return out;
    };
    let k = ServiceMetric::AMPLIFICATION;
    for (i, service) in first.scenario.services.iter().enumerate().skip(1) {
        let at: Vec<(&VariantResult, Est)> = vs
            .iter()
            .filter(|(_, r)| {
                r.scenario
                    .services
                    .get(i)
                    .is_some_and(|s| s.name == service.name)
            })
            .filter_map(|(v, _)| {
                let (m, h) = (v.metrics.services.get(i)?, v.ci95.services.get(i)?);
                Some((
                    *v,
                    Est {
                        mean: k.value(m),
                        half: k.value(h),
                    },
                ))
            })
            .collect();
        if at.len() < 2 {
            continue;
        }
        let cmp =
            |a: &&(&VariantResult, Est), b: &&(&VariantResult, Est)| a.1.mean.total_cmp(&b.1.mean);
        let (Some(low), Some(high)) = (at.iter().min_by(cmp), at.iter().max_by(cmp)) else {
            continue;
        };
        if !differ_in(k.unit, low.1, high.1) {
            continue;
        }
        let group: Vec<&VariantResult> = at
            .iter()
            .filter(|(_, e)| !differ_in(k.unit, *e, low.1))
            .map(|(v, _)| *v)
            .collect();
        let lo = group
            .iter()
            .filter_map(|v| v.metrics.services.get(i))
            .map(|m| k.value(m));
        let (a, b) = (
            lo.clone().fold(f64::INFINITY, f64::min),
            lo.fold(0.0, f64::max),
        );
        let fewest = if k.format(a) == k.format(b) {
            k.format(a)
        } else {
            format!("{}-{}", k.format(a), k.format(b))
        };
        out.push(format!(
            "**{}** receives {} attempts per logical request with **{}** and {fewest} with {}.",
            escape(&service.name),
            k.format(high.1.mean),
            escape(&high.0.name),
            names(&group),
        ));
    }
    // Duplicate side effects and keys below the entry (the entry's are in the variant's
    // sentence of the findings).
    for (v, r) in &vs {
        let below: Vec<(crate::metrics::ServiceMetrics, String)> = v
            .metrics
            .services
            .iter()
            .zip(&r.scenario.services)
            .skip(1)
            .map(|(m, s)| (*m, format!("`{}`", escape(&s.name))))
            .collect();
        let words = duplicate_words(&below);
        if !words.is_empty() {
            out.push(format!(
                "With **{}**, {}.",
                escape(&v.name),
                words.join("; ")
            ));
        }
    }
    out
}

/// One caveat per truncated variant: it hit a limit, its numbers cover only what finished, and
/// it takes part in no finding.
pub fn truncation_notes(variants: &[VariantResult]) -> Vec<String> {
    variants
        .iter()
        .filter(|v| v.is_truncated())
        .map(|v| {
            format!(
                "**{}** hit a limit and stopped early in {:.0} % of its replications (see the warning in the table output and `truncated_replications` in summary.json): its numbers cover only what finished, so it is marked \"(truncated)\" and left out of the findings.",
                escape(&v.name),
                100.0 * v.metrics.truncated
            )
        })
        .collect()
}

/// Whose attempts wasted work is spent on: with hedging, the losers of a race as well as
/// the attempts whose client gave up.
pub(super) fn unawaited(m: &Metrics) -> &'static str {
    if m.hedges > 0.0 {
        "nobody waited for any more (a client had given up, or a hedge had already answered)"
    } else {
        "whose client had already given up"
    }
}
