//! report.md's findings at one point: sentences computed from the numbers, where the 95 %
//! intervals are apart and the difference matters; and the caveat for each truncated variant.
//!
//! Each finding is one small function in one list: [`COMPARISONS`] compare the variants, and
//! [`PHRASES`] say what one variant's failures and policies did, joined into one sentence per
//! variant. A new finding is a function, its test and a line in its list.

use super::compare::{
    Est, RELATIVE, comparable, differ, est, extremes, extremes_by, names, say, share, span,
    unawaited,
};
use super::escape;
use crate::metrics::VariantResult;
use crate::metrics::{Column, Metric, Metrics, ServiceMetric};
use crate::model::Outcome;
use crate::report::shape;
use crate::scenario::{ServerKind, Variant};

/// Sentences computed from the numbers at one point (no sweep, or the sweep's focus value):
/// a finding only where the 95 % intervals are apart and the difference matters, never about
/// a truncated variant, never about a difference the setup forces (work is compared per
/// request when the variants start different numbers of requests).
pub fn findings(variants: &[VariantResult]) -> Vec<String> {
    findings_at(variants, "the server")
}

/// [`findings`], naming what the top-level numbers describe `server`: "the server", or a call
/// graph's entry service, which the clients' attempts reach. The comparisons come first, then
/// a sentence per variant.
pub(super) fn findings_at(variants: &[VariantResult], server: &str) -> Vec<String> {
    let field = Field::new(variants, server);
    let mut out: Vec<String> = COMPARISONS.iter().filter_map(|rule| rule(&field)).collect();
    out.extend(field.vs.iter().filter_map(|v| variant_sentence(v, server)));
    out
}

/// What every comparison of the variants at one point starts from.
struct Field<'a> {
    /// The variants that ran to the end: only they are compared.
    vs: Vec<&'a VariantResult>,
    /// What the top-level numbers describe: "the server", or a call graph's entry service.
    server: &'a str,
    /// Whether the variants start the same requests: if not, work is compared per request,
    /// and latency and completion time, which follow the load, are not compared.
    same_requests: bool,
}

impl<'a> Field<'a> {
    fn new(variants: &'a [VariantResult], server: &'a str) -> Self {
        let vs = comparable(variants);
        let same_requests = extremes(&vs, &Metric::REQUESTS, true).is_none();
        Field {
            vs,
            server,
            same_requests,
        }
    }
}

/// A finding about the variants at one point: a sentence, or `None` where it does not apply.
type Comparison = fn(&Field) -> Option<String>;

/// The findings that compare variants, in the order report.md lists them.
const COMPARISONS: [Comparison; 6] = [
    work,
    success,
    different_loads,
    slowest_answers,
    last_request,
    most_amplified,
];

/// The verb for one variant or for several: "sends" or "send".
fn verb<'s>(group: &[&VariantResult], one: &'s str, many: &'s str) -> &'s str {
    if group.len() == 1 { one } else { many }
}

/// Which variants put the least work on the server, and by how much: attempts when the
/// variants start the same requests, else attempts per request; or that none differs.
fn work(f: &Field) -> Option<String> {
    if f.vs.len() < 2 {
        return None;
    }
    let (server, same) = (f.server, f.same_requests);
    let work = if same {
        Metric::ATTEMPTS
    } else {
        Metric::AMPLIFICATION
    };
    let Some((best, worst)) = extremes(&f.vs, &work, false) else {
        return Some(same_work(f, &work));
    };
    let best = answering(best)?;
    let w = est(worst, &work);
    let what = if same {
        format!("attempts to {server}")
    } else {
        format!("attempts per request to {server}")
    };
    let fewer = |v: &&VariantResult| 100.0 * (1.0 - work.value(&v.metrics) / w.mean);
    let pct = range(best.iter().map(fewer), |x| format!("{x:.0}"));
    Some(format!(
        "{} {} {pct} % fewer {what} than **{}** ({} against {}).",
        names(&best),
        verb(&best, "sends", "send"),
        escape(&worst.name),
        span(&work, &best),
        say(&work, w.mean),
    ))
}

/// The sentence for variants whose work no finding tells apart, with the number: how much
/// more the most puts on the server than the least, that difference as a share of the larger
/// (what the rule measures, under [`RELATIVE`]), and whether it is within their intervals or
/// real (hedging's few per cent may be the point of a scenario).
fn same_work(f: &Field, work: &Metric) -> String {
    let what = if f.same_requests {
        "work"
    } else {
        "work per request"
    };
    let by = |a: &&&VariantResult, b: &&&VariantResult| {
        work.value(&a.metrics).total_cmp(&work.value(&b.metrics))
    };
    let (Some(lo), Some(hi)) = (f.vs.iter().min_by(by), f.vs.iter().max_by(by)) else {
        return String::new();
    };
    let (l, h) = (est(lo, work), est(hi, work));
    if say(work, l.mean) == say(work, h.mean) {
        let each = say(work, h.mean);
        return format!(
            "Every variant that ran to the end puts the same {what} on {server}: {each}.",
            server = f.server
        );
    }
    let of = |x: f64| {
        if x > 0.0 {
            100.0 * (h.mean - l.mean) / x
        } else {
            0.0
        }
    };
    let (more, of_larger) = (of(l.mean), of(h.mean));
    let how = if (h.mean - l.mean).abs() > l.half + h.half {
        "their 95 % intervals are apart, so the difference is real"
    } else {
        "it is within their 95 % intervals"
    };
    format!(
        "Every variant that ran to the end puts about the same {what} on {server}: **{}** puts {more:.1} % more than **{}** ({} against {}), which is {of_larger:.1} % of the larger, under the {:.0} % of the rule above; {how}.",
        escape(&hi.name),
        escape(&lo.name),
        say(work, h.mean),
        say(work, l.mean),
        100.0 * RELATIVE,
        server = f.server,
    )
}

/// Which variants succeed most, and the one that succeeds least with its failure share.
fn success(f: &Field) -> Option<String> {
    let k = Metric::SUCCESS_RATE;
    let (best, worst) = extremes(&f.vs, &k, true)?;
    Some(format!(
        "{} {} for {} of requests, **{}** for only {} ({} fail).",
        names(&best),
        verb(&best, "succeeds", "succeed"),
        span(&k, &best),
        escape(&worst.name),
        say(&k, est(worst, &k).mean),
        say(
            &Metric::FAILURE_RATE,
            est(worst, &Metric::FAILURE_RATE).mean
        ),
    ))
}

/// Of the variants a finding would credit with less work or an earlier end, those that
/// answered some request (a success or a fallback's answer); `None` if none did. A variant that
/// fails every request sends less and ends sooner only by giving up sooner (retry-chapter's
/// "permanent failure sends 86 % fewer attempts"): that is its failure, which its own sentence
/// gives, not a saving.
fn answering(best: Vec<&VariantResult>) -> Option<Vec<&VariantResult>> {
    let best: Vec<&VariantResult> = best
        .into_iter()
        .filter(|v| v.metrics.succeeded + v.metrics.degraded > 0.0)
        .collect();
    (!best.is_empty()).then_some(best)
}

/// Why latency and completion time go uncompared when the variants start different numbers
/// of requests: they would report the setup, not the policy.
fn different_loads(f: &Field) -> Option<String> {
    if f.same_requests {
        return None;
    }
    let k = Metric::REQUESTS;
    let requests = f.vs.iter().map(|v| k.value(&v.metrics));
    let lo = requests.clone().fold(f64::INFINITY, f64::min);
    let hi = requests.fold(0.0, f64::max);
    Some(format!(
        "The variants start different numbers of requests ({} to {}), so their latency and completion times are not compared here: they follow from the load each is given.",
        k.format(lo),
        k.format(hi)
    ))
}

/// The p99 latency of successful (or answered) requests, with each side's failure share
/// beside it, so that a policy which fails fast does not look fast. The latency of a few
/// survivors says nothing about a variant most of whose requests failed, so only variants
/// with at least half their requests successful take part.
fn slowest_answers(f: &Field) -> Option<String> {
    if !f.same_requests {
        return None;
    }
    let with_successes: Vec<&VariantResult> =
        f.vs.iter()
            .filter(|v| v.metrics.succeeded > 0.0 && v.metrics.failure_rate <= 0.5)
            .copied()
            .collect();
    let k = Metric::SUCCESS_P99;
    let (best, worst) = extremes(&with_successes, &k, false)?;
    // A fallback's answer counts with the successes' latency: call it what it is.
    let answered = if f.vs.iter().any(|v| v.metrics.degraded > 0.0) {
        "answered requests (successes and fallback answers)"
    } else {
        "successful requests"
    };
    Some(format!(
        "The slowest 1 % of {answered} take at least {} with **{}** ({} of its requests fail) and at least {} with {} ({} fail).",
        say(&k, est(worst, &k).mean),
        escape(&worst.name),
        say(&Metric::FAILURE_RATE, worst.metrics.failure_rate),
        span(&k, &best),
        names(&best),
        span(&Metric::FAILURE_RATE, &best),
    ))
}

/// When the last request ends, where the variants start the same requests.
fn last_request(f: &Field) -> Option<String> {
    if !f.same_requests {
        return None;
    }
    let k = Metric::COMPLETION;
    let (best, worst) = extremes(&f.vs, &k, false)?;
    let best = answering(best)?;
    Some(format!(
        "The last request ends after {} with **{}** and after {} with {}.",
        say(&k, est(worst, &k).mean),
        escape(&worst.name),
        span(&k, &best),
        names(&best),
    ))
}

/// The variants that amplify the load most, where it is at least 1.5 attempts per request
/// and they stand apart from the rest (or are the only variant).
fn most_amplified(f: &Field) -> Option<String> {
    let k = Metric::AMPLIFICATION;
    let top =
        f.vs.iter()
            .max_by(|a, b| k.value(&a.metrics).total_cmp(&k.value(&b.metrics)))?;
    let amp = est(top, &k);
    let high = amp.mean >= 1.5;
    if !high {
        return None;
    }
    let group: Vec<&VariantResult> =
        f.vs.iter()
            .filter(|v| !differ(&k, est(v, &k), amp))
            .copied()
            .collect();
    if group.len() == f.vs.len() && f.vs.len() != 1 {
        return None;
    }
    Some(format!(
        "{} {} the load most, {}: each logical request reaches {} {} times on average.",
        names(&group),
        verb(&group, "amplifies", "amplify"),
        span(&k, &group),
        f.server,
        span(&k, &group).trim_end_matches('x'),
    ))
}

/// A phrase about what one variant's failures or one of its policies did, or `None` where
/// there is nothing to say. `server` is what the top-level numbers describe.
type Phrase = fn(&VariantResult, &str) -> Option<String>;

/// The phrases of a variant's sentence, in the order the sentence says them.
const PHRASES: [Phrase; 10] = [
    failures,
    fallback_answers,
    wasted_work,
    budget_denials,
    breaker_refusals,
    hedges,
    cancelled,
    duplicates,
    replayed,
    shed,
];

/// One sentence per variant that ran to the end: its name, then each phrase that applies.
fn variant_sentence(v: &VariantResult, server: &str) -> Option<String> {
    let parts: Vec<String> = PHRASES.iter().filter_map(|p| p(v, server)).collect();
    (!parts.is_empty()).then(|| format!("**{}** {}.", escape(&v.name), parts.join("; ")))
}

/// How many requests failed, and the outcome most of them ended with (from 1 %).
fn failures(v: &VariantResult, _: &str) -> Option<String> {
    let m = &v.metrics;
    let total = m.failed.total();
    let applies = m.failure_rate >= 0.01 && total > 0.0;
    if !applies {
        return None;
    }
    let (o, n) = Outcome::FAILURES
        .iter()
        .map(|o| (*o, m.failed.get(*o)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((Outcome::Error, 0.0));
    let how = if n >= total {
        format!("all with `{o}`")
    } else {
        format!("{} % of them with `{o}`", share(100.0 * n / total, 0))
    };
    Some(format!(
        "fails {} of requests ({how})",
        say(&Metric::FAILURE_RATE, m.failure_rate)
    ))
}

/// The share of requests a call graph's fallbacks answered (from 1 %).
fn fallback_answers(v: &VariantResult, _: &str) -> Option<String> {
    let d = v.degraded_rate().filter(|d| d.mean >= 0.01)?;
    Some(format!(
        "has {:.1} % of its requests answered by a fallback (degraded: neither a success nor a failure)",
        100.0 * d.mean
    ))
}

/// The share of the server's work spent on attempts nobody waited for (from 1 %), over the
/// whole run, drain included: Recovery names its own stretches.
fn wasted_work(v: &VariantResult, server: &str) -> Option<String> {
    let m = &v.metrics;
    let applies = m.entry().served > 0.0 && m.entry().wasted / m.entry().served >= 0.01;
    if !applies {
        return None;
    }
    Some(format!(
        "wastes {} % of {server}'s work over the whole run on attempts {}",
        share(100.0 * m.entry().wasted / m.entry().served, 0),
        unawaited(m)
    ))
}

/// The retries a retry budget denied, and the requests they ended.
fn budget_denials(v: &VariantResult, _: &str) -> Option<String> {
    let m = &v.metrics;
    (m.budget_denials > 0.0 && m.requests > 0.0).then(|| format!(
        "its retry budget denied {:.0} retries, so {:.1} % of requests ended `budget_exhausted` instead of retrying",
        m.budget_denials,
        100.0 * m.failed.budget_exhausted / m.requests
    ))
}

/// How long circuit breakers were open, and the attempts they refused.
fn breaker_refusals(v: &VariantResult, server: &str) -> Option<String> {
    let b = &v.metrics.breaker;
    (b.refusals > 0.0).then(|| format!(
        "its circuit breakers were open {:.1} % of the time and refused {:.0} attempts, which never reached {server}",
        100.0 * b.open_fraction,
        b.refusals
    ))
}

/// How often the clients hedged, and how often a hedge answered first.
fn hedges(v: &VariantResult, _: &str) -> Option<String> {
    let m = &v.metrics;
    (m.hedges > 0.0 && m.requests > 0.0).then(|| {
        format!(
            "sends {:.1} hedges per 100 requests, and a hedge answers first for {:.1} % of requests",
            100.0 * m.hedges / m.requests,
            100.0 * m.hedge_wins / m.requests
        )
    })
}

/// The abandoned attempts the server dropped before they started.
fn cancelled(v: &VariantResult, server: &str) -> Option<String> {
    let s = v.metrics.entry();
    (s.cancelled > 0.0).then(|| {
        format!(
            "has {server} drop {:.0} abandoned attempts it cancelled before they started",
            s.cancelled
        )
    })
}

/// The requests the server executed more than once, and their duplicate side effects.
fn duplicates(v: &VariantResult, server: &str) -> Option<String> {
    let s = v.metrics.entry();
    (s.duplicates > 0.0).then(|| format!(
        "makes {server} execute {:.0} requests more than once: {:.0} duplicate side effects (a double charge, a second email)",
        s.duplicate_calls, s.duplicates
    ))
}

/// The repeats the server answered from its idempotency key memory.
fn replayed(v: &VariantResult, server: &str) -> Option<String> {
    let s = v.metrics.entry();
    (s.replayed > 0.0).then(|| format!(
        "has {server} answer {:.0} repeats from its idempotency key memory instead of executing them again",
        s.replayed
    ))
}

/// The attempts the server shed from a standing queue.
fn shed(v: &VariantResult, server: &str) -> Option<String> {
    let m = &v.metrics;
    (m.entry().shed > 0.0 && m.attempts > 0.0).then(|| format!(
        "has {server} shed {:.0} attempts ({:.1} % of those that reached it) that had waited too long in a standing queue, answering them `rejected` at once instead of serving them late",
        m.entry().shed,
        100.0 * m.entry().shed / m.attempts
    ))
}

/// Findings of the variants with calls below the entry: for each service, which variants
/// send it the fewest and the most attempts per logical request (below the entry; the
/// entry's is the amplification above), and which waste the least and the most of its work,
/// each where their 95 % intervals are apart and the difference matters; then, per variant,
/// the duplicate side effects and keys below the entry (the entry's are in the variant's
/// sentence), and where an upper tier's workers were the bottleneck. Only variants that ran
/// to the end take part.
pub(super) fn findings_below_entry(ran: &[Variant], variants: &[VariantResult]) -> Vec<String> {
    let vs: Vec<(&VariantResult, &Variant)> = variants
        .iter()
        .zip(ran)
        .filter(|(v, r)| !v.is_truncated() && shape::has_calls(&r.scenario))
        .collect();
    let Some((_, first)) = vs.first() else {
        return Vec::new();
    };
    // Wasted attempts are counts: compared only where the variants start the same requests.
    let results: Vec<&VariantResult> = vs.iter().map(|(v, _)| *v).collect();
    let same_requests = extremes(&results, &Metric::REQUESTS, true).is_none();
    let mut out = Vec::new();
    for (i, service) in first.scenario.services.iter().enumerate() {
        if i > 0 {
            out.extend(service_load(&vs, i, &service.name));
        }
        if same_requests {
            out.extend(service_waste(&vs, i, &service.name));
        }
    }
    out.extend(vs.iter().filter_map(|(v, r)| duplicates_below(v, r)));
    out.extend(vs.iter().filter_map(|(v, r)| bottleneck(v, r)));
    out
}

/// Which variants have the least of `k` at service `i`, named `name`, against the one with
/// the most ([`extremes_by`]). Only variants that have that service at that place take part.
fn at_service<'a>(
    vs: &[(&'a VariantResult, &Variant)],
    i: usize,
    name: &str,
    k: &ServiceMetric,
) -> Option<(Vec<&'a VariantResult>, &'a VariantResult)> {
    let here = vs
        .iter()
        .filter(|(_, r)| r.scenario.services.get(i).is_some_and(|s| s.name == name));
    let here: Vec<&VariantResult> = here.map(|(v, _)| *v).collect();
    extremes_by(&here, k.unit, false, |v| Some(service_est(v, i, k)))
}

/// Metric `k` of service `i` of `v` with its half-width (0 where `v` has no such service).
fn service_est(v: &VariantResult, i: usize, k: &ServiceMetric) -> Est {
    let at = |m: &Metrics| m.services.get(i).map_or(0.0, |s| k.value(s));
    Est {
        mean: at(&v.metrics),
        half: at(&v.ci95),
    }
}

/// Values as a sentence prints them, each by `text`: "1.947", or "1.947-1.967" where the
/// least and the greatest differ in print.
fn range(values: impl Iterator<Item = f64> + Clone, text: impl Fn(f64) -> String) -> String {
    let a = values.clone().fold(f64::INFINITY, f64::min);
    let b = values.fold(f64::NEG_INFINITY, f64::max);
    if text(a) == text(b) {
        text(a)
    } else {
        format!("{}-{}", text(a), text(b))
    }
}

/// Which variants send service `i`, named `name`, the fewest and the most attempts per
/// logical request.
fn service_load(vs: &[(&VariantResult, &Variant)], i: usize, name: &str) -> Option<String> {
    let k = ServiceMetric::AMPLIFICATION;
    let (least, most) = at_service(vs, i, name, &k)?;
    let of = |v: &VariantResult| service_est(v, i, &k);
    Some(format!(
        "**{}** receives {} attempts per logical request with **{}** and {} with {}.",
        escape(name),
        k.format(of(most).mean),
        escape(&most.name),
        range(least.iter().map(|v| of(v).mean), |x| k.format(x)),
        names(&least),
    ))
}

/// Which variants waste the least of service `i`'s work (attempts it served for callers that
/// had given up), against the one that wastes the most: waste at every service, not at the
/// entry only (tiers-cascading-slowdown's deadlines cut the database's wasted work by 85 %,
/// the entry's by a few hundred attempts). With each side's share of what the service served.
fn service_waste(vs: &[(&VariantResult, &Variant)], i: usize, name: &str) -> Option<String> {
    let k = ServiceMetric::WASTED;
    let (least, most) = at_service(vs, i, name, &k)?;
    let wasted = |v: &&VariantResult| service_est(v, i, &k).mean;
    let of_served = |v: &&VariantResult| {
        let s = v.metrics.services.get(i).copied().unwrap_or_default();
        100.0 * s.wasted / s.served.max(1.0)
    };
    let pct = |x: f64| share(x, 0);
    let (most_n, most_share) = (k.format(wasted(&most)), pct(of_served(&most)));
    if least.iter().all(|v| wasted(v) == 0.0) {
        return Some(format!(
            "**{}** wastes no work with {}, against {most_n} attempts served for callers no longer waiting with **{}** ({most_share} % of what it served).",
            escape(name),
            names(&least),
            escape(&most.name),
        ));
    }
    Some(format!(
        "**{}** wastes {} % less work with {} than with **{}** ({} against {most_n} attempts served for callers no longer waiting: {} % against {most_share} % of what it served).",
        escape(name),
        range(
            least
                .iter()
                .map(|v| 100.0 * (1.0 - wasted(v) / wasted(&most))),
            pct
        ),
        names(&least),
        escape(&most.name),
        range(least.iter().map(wasted), |x| k.format(x)),
        range(least.iter().map(of_served), pct),
    ))
}

/// Where an upper tier's workers were the bottleneck with `v`: the first service, from the
/// clients down, that calls others and had its workers busy through at least 90 % of the
/// trigger, at least half of that time waiting on its calls rather
/// than serving (its own work estimated from what it served and its mean service time).
/// Then what changes below it reaches the clients only through how long its workers wait,
/// and variants that differ only below it look alike at the entry (the review's checkout,
/// whose "retries at the top only" matched "retries at every layer"). From the service's mean
/// load over time; a service with faults of its own is left out (its own work is then
/// unknown).
fn bottleneck(v: &VariantResult, ran: &Variant) -> Option<String> {
    let s = &ran.scenario;
    let stretch = super::recovery::trigger_buckets(s, v.bucket, v.series.len());
    let span_s = stretch.len() as f64 * v.bucket.as_nanos() as f64 / 1e9;
    let (i, service, workers, busy, own) =
        s.services.iter().enumerate().find_map(|(i, service)| {
            let (ServerKind::Queue(q), Some(series)) =
                (&service.server.kind, v.service_series.get(i))
            else {
                return None;
            };
            let workers = f64::from(q.concurrency?);
            let sum = |c: Column| {
                stretch
                    .iter()
                    .filter_map(|&b| series.rows.get(b))
                    .map(|r| r[c as usize])
                    .sum::<f64>()
            };
            let busy = sum(Column::InService) / (stretch.len() as f64 * workers);
            let own = sum(Column::Served) * q.service_time.mean_secs() / (span_s * workers);
            let waits = !service.calls.is_empty() && service.server.faults.is_empty();
            (waits && busy >= 0.9 && own <= busy / 2.0).then_some((i, service, workers, busy, own))
        })?;
    let below: Vec<String> = service
        .calls
        .iter()
        .map(|c| format!("**{}**", escape(&s.services[c.to].name)))
        .collect();
    Some(format!(
        "With **{}**, **{}** is the bottleneck: its {workers:.0} workers were busy {} % of the trigger, its own work about {} % of them and the rest waiting on {} (its longest queue: {:.0}). What changes below it reaches the clients only through how long its workers wait, so variants that differ only below it look alike at the entry.",
        escape(&v.name),
        escape(&service.name),
        share(100.0 * busy.min(1.0), 0),
        share(100.0 * own, 0),
        below.join(" and "),
        v.metrics.services[i].max_queue,
    ))
}

/// What duplicate side effects and idempotency keys did at the services below the entry of
/// one variant, in one sentence; `None` where they did nothing.
fn duplicates_below(v: &VariantResult, ran: &Variant) -> Option<String> {
    let mut words = Vec::new();
    for (s, service) in v
        .metrics
        .services
        .iter()
        .zip(&ran.scenario.services)
        .skip(1)
    {
        let name = format!("`{}`", escape(&service.name));
        if s.duplicates > 0.0 {
            words.push(format!(
                "{name} executed {:.0} calls more than once: {:.0} duplicate side effects (a double charge, a second email)",
                s.duplicate_calls, s.duplicates
            ));
        }
        if s.replayed > 0.0 {
            words.push(format!(
                "{name} answered {:.0} repeats from its idempotency key memory instead of executing them again",
                s.replayed
            ));
        }
    }
    (!words.is_empty()).then(|| format!("With **{}**, {}.", escape(&v.name), words.join("; ")))
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

#[cfg(test)]
mod tests {
    use super::super::testing::variant;
    use super::*;

    /// What `rule` says of the variants `vs`, at "the server".
    fn compare(rule: Comparison, vs: &[VariantResult]) -> Option<String> {
        rule(&Field::new(vs, "the server"))
    }

    /// `phrase` says `expected` of a variant with `set` applied, and nothing of a variant
    /// without it.
    fn check(phrase: Phrase, set: impl FnOnce(&mut Metrics), expected: &str) {
        let v = variant("v", set);
        assert_eq!(phrase(&v, "the server").as_deref(), Some(expected));
        assert_eq!(phrase(&variant("v", |_| {}), "the server"), None);
    }

    #[test]
    fn work_names_the_variant_that_sends_fewer_attempts_and_by_how_much() {
        let vs = [
            variant("a", |m| m.attempts = 1000.0),
            variant("b", |m| m.attempts = 2000.0),
        ];
        assert_eq!(
            compare(work, &vs).as_deref(),
            Some("**a** sends 50 % fewer attempts to the server than **b** (1000 against 2000).")
        );
        let equal = [variant("a", |_| {}), variant("b", |_| {})];
        assert_eq!(
            compare(work, &equal).as_deref(),
            Some("Every variant that ran to the end puts the same work on the server: 0.")
        );
        let same = [
            variant("a", |m| m.attempts = 1000.0),
            variant("b", |m| m.attempts = 1010.0),
        ];
        assert!(compare(work, &same).unwrap().starts_with(
            "Every variant that ran to the end puts about the same work on the server"
        ));
        assert_eq!(compare(work, &vs[..1]), None);
    }

    /// tail-at-scale: hedging at p95 costs 5.2 % more attempts, real but 4.9 % of the larger
    /// value, under the 5 % rule, and the scenario's point: the sentence gives both numbers, so
    /// "5.2 % more" does not read as over the rule.
    #[test]
    fn about_the_same_work_says_by_how_much() {
        let vs = [
            variant("no hedging", |m| m.attempts = 10_000.0),
            variant("hedge at p95", |m| m.attempts = 10_520.0),
        ];
        assert_eq!(
            compare(work, &vs).as_deref(),
            Some(
                "Every variant that ran to the end puts about the same work on the server: **hedge at p95** puts 5.2 % more than **no hedging** (10520 against 10000), which is 4.9 % of the larger, under the 5 % of the rule above; their 95 % intervals are apart, so the difference is real."
            )
        );
    }

    /// hotos: "fewer attempts than **backoff**" where no budget, the first variant, sent as
    /// many: the baseline is the one compared with.
    #[test]
    fn a_finding_compares_with_the_baseline_when_it_is_tied_with_the_worst() {
        let vs = [
            variant("no budget", |m| m.attempts = 2000.0),
            variant("budget", |m| m.attempts = 1000.0),
            variant("backoff", |m| m.attempts = 2010.0),
        ];
        assert_eq!(
            compare(work, &vs).as_deref(),
            Some(
                "**budget** sends 50 % fewer attempts to the server than **no budget** (1000 against 2000)."
            )
        );
        // Without the baseline among the tied, the earliest of them.
        let vs = [
            variant("base", |m| m.attempts = 1000.0),
            variant("x", |m| m.attempts = 2010.0),
            variant("y", |m| m.attempts = 2000.0),
        ];
        assert!(compare(work, &vs).unwrap().contains("than **x**"));
    }

    #[test]
    fn work_is_compared_per_request_when_the_variants_start_different_requests() {
        let vs = [
            variant("a", |m| m.amplification = 1.0),
            variant("b", |m| {
                m.requests = 2000.0;
                m.amplification = 3.0;
            }),
        ];
        assert_eq!(
            compare(work, &vs).as_deref(),
            Some(
                "**a** sends 67 % fewer attempts per request to the server than **b** (1.000x against 3.000x)."
            )
        );
    }

    #[test]
    fn success_names_the_best_and_the_worst_with_its_failures() {
        let vs = [
            variant("a", |m| m.success_rate = 0.99),
            variant("b", |m| {
                m.success_rate = 0.6;
                m.failure_rate = 0.4;
            }),
        ];
        assert_eq!(
            compare(success, &vs).as_deref(),
            Some("**a** succeeds for 99.0 % of requests, **b** for only 60.0 % (40.0 % fail).")
        );
        assert_eq!(compare(success, &[vs[0].clone(), vs[0].clone()]), None);
    }

    #[test]
    fn different_loads_say_why_latency_goes_uncompared() {
        let vs = [variant("a", |_| {}), variant("b", |m| m.requests = 2000.0)];
        assert_eq!(
            compare(different_loads, &vs).as_deref(),
            Some(
                "The variants start different numbers of requests (1000 to 2000), so their latency and completion times are not compared here: they follow from the load each is given."
            )
        );
        assert_eq!(
            compare(different_loads, &[vs[0].clone(), vs[0].clone()]),
            None
        );
    }

    #[test]
    fn the_slowest_answers_leave_out_variants_most_of_whose_requests_failed() {
        let p99 = |ms: f64, failed: f64| {
            move |m: &mut Metrics| {
                m.succeeded = 1000.0 * (1.0 - failed);
                m.failure_rate = failed;
                m.success_latency_ms.p99 = ms;
            }
        };
        let vs = [variant("a", p99(100.0, 0.0)), variant("b", p99(300.0, 0.1))];
        assert_eq!(
            compare(slowest_answers, &vs).as_deref(),
            Some(
                "The slowest 1 % of successful requests take at least 300 ms with **b** (10.0 % of its requests fail) and at least 100 ms with **a** (0.0 % fail)."
            )
        );
        let failing = [variant("a", p99(100.0, 0.0)), variant("b", p99(300.0, 0.6))];
        assert_eq!(compare(slowest_answers, &failing), None);
    }

    #[test]
    fn the_last_request_is_compared_only_at_the_same_load() {
        let vs = [
            variant("a", |m| m.makespan_ms = 10_000.0),
            variant("b", |m| m.makespan_ms = 20_000.0),
        ];
        assert_eq!(
            compare(last_request, &vs).as_deref(),
            Some("The last request ends after 20.0 s with **b** and after 10.0 s with **a**.")
        );
        let loads = [
            vs[0].clone(),
            variant("b", |m| {
                m.makespan_ms = 20_000.0;
                m.requests = 2000.0;
            }),
        ];
        assert_eq!(compare(last_request, &loads), None);
    }

    #[test]
    fn the_most_amplified_stand_apart_from_the_rest_from_one_and_a_half_times() {
        let amp = |x: f64| move |m: &mut Metrics| m.amplification = x;
        let vs = [variant("a", amp(1.0)), variant("b", amp(2.5))];
        assert_eq!(
            compare(most_amplified, &vs).as_deref(),
            Some(
                "**b** amplifies the load most, 2.500x: each logical request reaches the server 2.500 times on average."
            )
        );
        assert!(
            compare(most_amplified, &vs[1..]).is_some(),
            "a single variant"
        );
        let all = [variant("a", amp(2.5)), variant("b", amp(2.5))];
        assert_eq!(compare(most_amplified, &all), None);
        let low = [variant("a", amp(1.0)), variant("b", amp(1.4))];
        assert_eq!(compare(most_amplified, &low), None);
    }

    #[test]
    fn failures_name_the_outcome_most_of_them_ended_with() {
        check(
            failures,
            |m| {
                m.failure_rate = 0.1;
                m.failed.timeout = 75.0;
                m.failed.error = 25.0;
            },
            "fails 10.0 % of requests (75 % of them with `timeout`)",
        );
        let all = variant("v", |m| {
            m.failure_rate = 0.1;
            m.failed.timeout = 100.0;
        });
        assert_eq!(
            failures(&all, "").as_deref(),
            Some("fails 10.0 % of requests (all with `timeout`)")
        );
    }

    #[test]
    fn fallback_answers_count_from_one_percent() {
        let mut v = variant("v", |_| {});
        v.metrics.degraded_rate = Some(0.02);
        v.ci95.degraded_rate = Some(0.0);
        assert_eq!(
            fallback_answers(&v, "").as_deref(),
            Some(
                "has 2.0 % of its requests answered by a fallback (degraded: neither a success nor a failure)"
            )
        );
        v.metrics.degraded_rate = Some(0.009);
        assert_eq!(fallback_answers(&v, ""), None);
    }

    #[test]
    fn wasted_work_counts_from_one_percent_of_what_was_served() {
        check(
            wasted_work,
            |m| {
                m.services[0].served = 1000.0;
                m.services[0].wasted = 250.0;
            },
            "wastes 25 % of the server's work over the whole run on attempts whose client had already given up",
        );
        let hedged = variant("v", |m| {
            m.services[0].served = 1000.0;
            m.services[0].wasted = 250.0;
            m.hedges = 10.0;
        });
        assert!(
            wasted_work(&hedged, "the server")
                .unwrap()
                .ends_with("a hedge had already answered)")
        );
    }

    #[test]
    fn budget_denials_say_how_many_requests_they_ended() {
        check(
            budget_denials,
            |m| {
                m.budget_denials = 40.0;
                m.failed.budget_exhausted = 25.0;
            },
            "its retry budget denied 40 retries, so 2.5 % of requests ended `budget_exhausted` instead of retrying",
        );
    }

    #[test]
    fn breaker_refusals_say_how_long_the_breakers_were_open() {
        check(
            breaker_refusals,
            |m| {
                m.breaker.refusals = 30.0;
                m.breaker.open_fraction = 0.125;
            },
            "its circuit breakers were open 12.5 % of the time and refused 30 attempts, which never reached the server",
        );
    }

    #[test]
    fn hedges_are_counted_per_hundred_requests() {
        check(
            hedges,
            |m| {
                m.hedges = 50.0;
                m.hedge_wins = 20.0;
            },
            "sends 5.0 hedges per 100 requests, and a hedge answers first for 2.0 % of requests",
        );
    }

    #[test]
    fn cancelled_attempts_are_counted() {
        check(
            cancelled,
            |m| m.services[0].cancelled = 7.0,
            "has the server drop 7 abandoned attempts it cancelled before they started",
        );
    }

    #[test]
    fn duplicates_count_requests_and_side_effects() {
        check(
            duplicates,
            |m| {
                m.services[0].duplicate_calls = 4.0;
                m.services[0].duplicates = 5.0;
            },
            "makes the server execute 4 requests more than once: 5 duplicate side effects (a double charge, a second email)",
        );
    }

    #[test]
    fn replayed_repeats_are_counted() {
        check(
            replayed,
            |m| m.services[0].replayed = 9.0,
            "has the server answer 9 repeats from its idempotency key memory instead of executing them again",
        );
    }

    #[test]
    fn shed_attempts_are_counted_with_their_share_of_the_attempts() {
        check(
            shed,
            |m| {
                m.attempts = 2000.0;
                m.services[0].shed = 50.0;
            },
            "has the server shed 50 attempts (2.5 % of those that reached it) that had waited too long in a standing queue, answering them `rejected` at once instead of serving them late",
        );
    }

    #[test]
    fn a_variant_sentence_joins_its_phrases_and_says_nothing_without_any() {
        let v = variant("v", |m| {
            m.services[0].cancelled = 7.0;
            m.services[0].replayed = 9.0;
        });
        assert_eq!(
            variant_sentence(&v, "the server").as_deref(),
            Some(
                "**v** has the server drop 7 abandoned attempts it cancelled before they started; has the server answer 9 repeats from its idempotency key memory instead of executing them again."
            )
        );
        assert_eq!(variant_sentence(&variant("v", |_| {}), "the server"), None);
    }

    #[test]
    fn truncated_variants_take_part_in_no_finding() {
        let mut b = variant("b", |m| {
            m.attempts = 2000.0;
            m.services[0].cancelled = 7.0;
        });
        b.metrics.truncated = 0.5;
        let found = findings(&[variant("a", |m| m.attempts = 1000.0), b]);
        assert!(found.iter().all(|f| !f.contains("**b**")), "{found:?}");
    }

    /// A two-tier graph: `front` (4 workers) calls `back`, which a fault slows 100-fold from
    /// 2 s to 4 s; the second variant gives `front` 1,000 workers.
    const TWO_TIERS: &str = r#"{"name": "t", "seed": 1, "replications": 2, "duration": "6s",
        "clients": {"count": 50, "workload": {"open": {"rate_per_s": 200}}, "entry": "front"},
        "policy": {"timeout": "1s"},
        "services": {
          "front": {"concurrency": 4, "service_time": {"constant": "1ms"},
                    "calls": [{"to": "back", "policy": {"timeout": "1s"}}]},
          "back": {"concurrency": 50, "service_time": {"constant": "5ms"},
                   "faults": [{"from": "2s", "to": "4s", "service_time_factor": 100}]}},
        "metrics": {"bucket": "250ms"},
        "variants": [{"name": "small front", "patch": {}},
                     {"name": "big front", "patch": {"services": {"front": {"concurrency": 1000}}}}]}"#;

    /// The review's checkout: its workers, held while waiting on payments, made "retries at
    /// the top only" and "at every layer" look alike, and nothing said where the bottleneck was.
    #[test]
    fn an_upper_tier_whose_workers_wait_on_calls_below_is_named_the_bottleneck() {
        let e = crate::scenario::load_str(TWO_TIERS, "t.json", &Default::default()).unwrap();
        let result = crate::runner::run(&e, 1, &|| {});
        let (ran, vs) = (&e.points[0].variants, &result.points[0].variants);
        let found = findings_below_entry(ran, vs);
        let note = found
            .iter()
            .find(|f| f.contains("bottleneck"))
            .expect("the small front is the bottleneck");
        assert!(
            note.starts_with(
                "With **small front**, **front** is the bottleneck: its 4 workers were busy "
            ),
            "{note}"
        );
        assert!(
            note.contains("of the trigger") && note.contains("waiting on **back**"),
            "{note}"
        );
        assert_eq!(
            bottleneck(&vs[1], &ran[1]),
            None,
            "1,000 workers are never all busy"
        );
    }

    /// tiers-cascading-slowdown: Findings said "wastes 3 % of frontend's work" and nothing of
    /// the database, whose wasted work the deadlines cut by 85 %.
    #[test]
    fn waste_is_compared_at_every_service_that_differs() {
        let e = crate::scenario::load_str(TWO_TIERS, "t.json", &Default::default()).unwrap();
        let ran = &e.points[0].variants;
        let at = |front: f64, back: f64| {
            move |m: &mut Metrics| {
                m.services = vec![Default::default(); 2];
                (m.services[0].served, m.services[0].wasted) = (1000.0, front);
                (m.services[1].served, m.services[1].wasted) = (1000.0, back);
            }
        };
        let two = |name: &str, front: f64, back: f64| {
            let mut v = variant(name, at(front, back));
            v.ci95.services = vec![Default::default(); 2];
            v
        };
        let vs = [two("a", 30.0, 800.0), two("b", 0.0, 120.0)];
        let found = findings_below_entry(ran, &vs);
        assert!(found.contains(&"**front** wastes no work with **b**, against 30 attempts served for callers no longer waiting with **a** (3 % of what it served).".to_string()), "{found:?}");
        assert!(found.contains(&"**back** wastes 85 % less work with **b** than with **a** (120 against 800 attempts served for callers no longer waiting: 12 % against 80 % of what it served).".to_string()), "{found:?}");
        let same = [two("a", 30.0, 800.0), two("b", 30.0, 790.0)];
        assert!(findings_below_entry(ran, &same).is_empty());
    }

    /// retry-chapter: "permanent failure sends 86 % fewer attempts than no jitter", where it
    /// failed every request: fewer attempts by giving up at once is no saving.
    #[test]
    fn a_variant_that_fails_every_request_is_not_credited_with_less_work() {
        let failing = |attempts: f64| {
            move |m: &mut Metrics| {
                m.attempts = attempts;
                m.succeeded = 0.0;
                m.makespan_ms = attempts;
            }
        };
        let vs = [
            variant("retried", failing(700.0)),
            variant("permanent", failing(100.0)),
        ];
        assert_eq!(compare(work, &vs), None);
        assert_eq!(compare(last_request, &vs), None);
        let answered = [
            variant("retried", failing(700.0)),
            variant("ok", |m| m.attempts = 100.0),
        ];
        assert!(
            compare(work, &answered)
                .unwrap()
                .starts_with("**ok** sends 86 % fewer")
        );
    }
}
