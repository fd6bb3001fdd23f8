//! What the two latency figures share: the latency axis (which bins it shows, its ticks and
//! its title) and the notes on requests the curves and bars leave out.
//!
//! Requests that ended in under 1 us (instant rejections, permanent failures) or a few fast
//! outliers would need the axis to reach down several empty decades; they are counted in the
//! notes instead (see [`left_share`]).

use crate::metrics::VariantResult;
use crate::metrics::{LATENCY_BINS, LATENCY_BINS_PER_DECADE, latency_bin_upper_ms};

/// The lower edge of latency bin `i`, in milliseconds (0 for the first bin, which holds
/// everything under 1 us).
pub fn bin_lower_ms(i: usize) -> f64 {
    if i == 0 {
        0.0
    } else {
        latency_bin_upper_ms(i - 1)
    }
}

/// The share of requests a variant may have left of the axis before the axis reaches
/// further down: a few fast outliers must not add decades of empty axis.
const LEFT_TAIL: f64 = 0.005;

/// The bins the latency axis shows, `first..=last`, over every variant: from the first bin
/// where some variant has passed 0.5 % of its requests (counting from 1 us; the bin under
/// 1 us never decides) to the last bin with requests, one bin of room on each side. At least
/// half a decade wide. What lies left of the axis is counted in [`left_share`].
pub fn x_range(variants: &[VariantResult]) -> (usize, usize) {
    let first = variants
        .iter()
        .filter_map(|v| {
            let total: f64 = v.success_latency_bins.iter().sum();
            let mut acc = 0.0;
            (1..LATENCY_BINS).find(|&i| {
                acc += v.success_latency_bins[i];
                total > 0.0 && acc > 0.0 && acc >= LEFT_TAIL * total
            })
        })
        .min();
    let last = (1..LATENCY_BINS)
        .rev()
        .find(|&i| variants.iter().any(|v| v.success_latency_bins[i] > 0.0));
    let (first, last) = match (first, last) {
        (Some(f), Some(l)) => (f.saturating_sub(1).max(1), (l + 1).min(LATENCY_BINS - 1)),
        _ => (0, LATENCY_BINS_PER_DECADE),
    };
    let min_width = LATENCY_BINS_PER_DECADE / 2;
    if last - first < min_width {
        let grow = min_width - (last - first);
        let first = first.saturating_sub(grow / 2).max(1);
        (first, (first + min_width).min(LATENCY_BINS - 1))
    } else {
        (first, last)
    }
}

/// The axis' ends in milliseconds for the bins `first..=last`.
pub fn x_span((first, last): (usize, usize)) -> (f64, f64) {
    (
        bin_lower_ms(first).max(latency_bin_upper_ms(0) / 2.0),
        latency_bin_upper_ms(last),
    )
}

/// The share (%) of a variant's requests in bins left of `first` (not drawn), if any, with
/// the words that say so: "2.9 % under 0.02 ms, left of the axis".
pub fn left_share(v: &VariantResult, first: usize) -> Option<String> {
    let total: f64 = v.success_latency_bins.iter().sum();
    let left: f64 = v.success_latency_bins[..first].iter().sum();
    if total <= 0.0 || left <= 0.0 {
        return None;
    }
    let pct = left / total * 100.0;
    let pct = if pct < 0.05 {
        "< 0.1 %".to_string()
    } else {
        format!("{pct:.1} %")
    };
    Some(format!(
        "{pct} under {} ms, left of the axis",
        super::tick(&bin_lower_ms(first))
    ))
}

/// "42 % failed" for a variant some of whose requests failed (they are not in the curves).
pub fn failed_share(v: &VariantResult) -> Option<String> {
    let f = v.metrics.failure_rate;
    (f > 0.0).then(|| {
        if f < 0.001 {
            "< 0.1 % failed".to_string()
        } else {
            format!("{:.1} % failed", 100.0 * f)
        }
    })
}

/// Why a latency figure has no distribution to draw at all: no variant has a request it
/// counts (retry-chapter's servers fail every attempt). `None` when one variant has some.
pub fn nothing_to_show(variants: &[VariantResult], can_degrade: bool) -> Option<&'static str> {
    let none = variants
        .iter()
        .all(|v| v.success_latency_bins.iter().sum::<f64>() <= 0.0);
    match (none, can_degrade) {
        (false, _) => None,
        (true, false) => Some("No request succeeded in any variant: there is no latency to draw."),
        (true, true) => {
            Some("No request was answered in any variant: there is no latency to draw.")
        }
    }
}

/// The words for a variant's panel or legend entry with no request to draw.
pub fn no_requests(can_degrade: bool) -> &'static str {
    if can_degrade {
        "no answers"
    } else {
        "no successes"
    }
}

/// A log-axis tick label: only 1, 2 and 5 times a power of ten are labelled, so ticks never
/// crowd ("8 9 10"); the others stay unlabelled.
pub fn log_tick(x: &f64) -> String {
    if *x <= 0.0 {
        return String::new();
    }
    let mantissa = x / 10f64.powf(x.log10().floor());
    if [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|m| (mantissa - m).abs() < 0.02 * m)
    {
        super::tick(x)
    } else {
        String::new()
    }
}

/// The latency axis' title. Where a request can be answered degraded (`can_degrade`), a
/// fallback's answer counts with the successes.
pub fn x_desc(can_degrade: bool) -> String {
    format!(
        "latency of {}, start to {} (ms, log scale)",
        if can_degrade {
            "answered requests"
        } else {
            "successful requests"
        },
        if can_degrade { "answer" } else { "success" }
    )
}

/// The words for the requests whose latency the latency figures draw: answered ones where a
/// request can be answered degraded (`can_degrade`), else successful ones.
pub fn latency_of(can_degrade: bool) -> &'static str {
    if can_degrade {
        "answered requests (successes and fallback answers)"
    } else {
        "successful requests"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_label_only_one_two_five() {
        assert_eq!(log_tick(&10.0), "10");
        assert_eq!(log_tick(&2.0), "2");
        assert_eq!(log_tick(&0.5), "0.5");
        assert_eq!(log_tick(&8.0), "");
        assert_eq!(log_tick(&9.0), "");
    }
}
