//! Durations as scenario files write them: a number and a unit, `"250us"`, `"10ms"`, `"1.5s"`.
//!
//! This is the one place where units are converted; inside, time is integer nanoseconds.

use serde_json::Value;

use super::error::{cut, short};
use crate::engine::SimDuration;

/// The units a duration may carry, with their length in nanoseconds.
const UNITS: [(&str, f64); 7] = [
    ("ns", 1.0),
    ("us", 1e3),
    ("µs", 1e3),
    ("ms", 1e6),
    ("s", 1e9),
    ("m", 60e9),
    ("h", 3600e9),
];

/// The longest duration a scenario may write: 10^6 s, about 11.6 days. Simulated time is
/// a u64 of nanoseconds (about 584 years); with every duration this short, a run's duration
/// plus a request's worst case of 1000 attempts (`policy.retry.max_attempts`), each with a
/// timeout and a backoff of this length, stays under 64 years.
pub const MAX_DURATION: SimDuration = SimDuration::from_secs(1_000_000);

/// Parses a duration. The error says what was wrong and how to write it.
pub fn parse_duration(value: &Value) -> Result<SimDuration, String> {
    let text = match value {
        Value::String(s) => s.trim(),
        Value::Number(n) => {
            return Err(format!(
                "a duration needs a unit (got the bare number {n}); write \"{n}s\" or \"{n}ms\""
            ));
        }
        other => {
            return Err(format!(
                "must be a duration such as \"10ms\" or \"1.5s\" (got {})",
                short(other)
            ));
        }
    };
    // Quoted in messages, cut short if it is long.
    let shown = cut(text);
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(text.len());
    let (number, unit) = (text[..split].trim(), text[split..].trim());
    let Some(&(_, nanos_per_unit)) = UNITS.iter().find(|(u, _)| *u == unit) else {
        let exponent = unit.starts_with(['e', 'E'])
            && unit[1..]
                .trim_start_matches(['+', '-'])
                .starts_with(|c: char| c.is_ascii_digit());
        return Err(if exponent && !number.is_empty() {
            format!(
                "\"{shown}\" has an exponent; write the number in plain digits, e.g. \"1500ms\" rather than \"1.5e3ms\""
            )
        } else if unit.is_empty() {
            format!(
                "a duration needs a unit (got \"{shown}\"); write \"{shown}s\" or \"{shown}ms\""
            )
        } else {
            format!(
                "unknown unit \"{}\" in \"{shown}\"; use ns, us, ms, s, m or h",
                cut(unit)
            )
        });
    };
    let x: f64 = number
        .parse()
        .map_err(|_| format!("\"{shown}\" is not a number followed by a unit, like \"10ms\""))?;
    // "-0s" too: a sign that takes nothing away is still not a duration.
    if x < 0.0 || number.starts_with('-') {
        return Err(format!("must not be negative (got \"{shown}\")"));
    }
    let nanos = (x * nanos_per_unit).round();
    if !(0.0..=MAX_DURATION.as_nanos() as f64).contains(&nanos) {
        return Err(format!(
            "must be at most 1000000s, about 11.6 days (got \"{shown}\"); simulated time is counted in nanoseconds and must not run out"
        ));
    }
    Ok(SimDuration::from_nanos(nanos as u64))
}

/// The most decimals a percentile may have: "p99.9999".
pub const PERCENTILE_DECIMALS: u32 = 4;

/// Reads a percentile such as `"p95"` or `"p99.9"` as a quantile in (0, 1) (0.95, 0.999):
/// `None` when `text` does not start with "p" (it is not meant as a percentile), else the
/// quantile or what is wrong with it. The quantile is the nearest number to the decimal
/// written, so [`percentile_text`] writes it back as it was meant.
pub fn parse_percentile(text: &str) -> Option<Result<f64, String>> {
    let text = text.trim();
    let rest = text.strip_prefix('p')?;
    let shown = cut(text);
    let (int, frac) = rest.split_once('.').unwrap_or((rest, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) || (rest.contains('.') && frac.is_empty()) {
        return Some(Err(format!(
            "\"{shown}\" is not a percentile: write \"p\" and a number above 0 and below 100, such as \"p95\" or \"p99.9\""
        )));
    }
    if frac.len() > PERCENTILE_DECIMALS as usize {
        return Some(Err(format!(
            "\"{shown}\" has more than {PERCENTILE_DECIMALS} decimals; write at most \"p99.9999\""
        )));
    }
    let int = int.trim_start_matches('0');
    let scale = 10u64.pow(frac.len() as u32);
    // Two digits at most below 100; a longer number is out of range.
    let whole: u64 = if int.len() > 2 {
        100
    } else {
        int.parse().unwrap_or(0)
    };
    let mantissa = whole * scale + frac.parse::<u64>().unwrap_or(0);
    if mantissa == 0 || mantissa >= 100 * scale {
        return Some(Err(format!(
            "must be a percentile above p0 and below p100 (got \"{shown}\"); \"p99.9\" is the latency 99.9 % of answers beat"
        )));
    }
    Some(Ok(mantissa as f64 / (100 * scale) as f64))
}

/// A quantile in (0, 1) written as a percentile: 0.95 -> "p95", 0.999 -> "p99.9", with the
/// fewest decimals (at most [`PERCENTILE_DECIMALS`]) that give back the quantile.
pub fn percentile_text(quantile: f64) -> String {
    for decimals in 0..=PERCENTILE_DECIMALS {
        let scale = 10u64.pow(decimals);
        let mantissa = (quantile * (100 * scale) as f64).round();
        if mantissa / (100 * scale) as f64 == quantile {
            let m = mantissa as u64;
            return if decimals == 0 {
                format!("p{m}")
            } else {
                format!(
                    "p{}.{:0width$}",
                    m / scale,
                    m % scale,
                    width = decimals as usize
                )
            };
        }
    }
    format!("p{}", quantile * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn units_convert_exactly() {
        let ok = |s: &str| parse_duration(&json!(s)).unwrap().as_nanos();
        assert_eq!(ok("250us"), 250_000);
        assert_eq!(ok("10ms"), 10_000_000);
        assert_eq!(ok("1.5s"), 1_500_000_000);
        assert_eq!(ok("2m"), 120_000_000_000);
        assert_eq!(ok("1h"), 3_600_000_000_000);
        assert_eq!(ok("0.1s"), 100_000_000);
        assert_eq!(ok("7ns"), 7);
        assert_eq!(ok("0s"), 0);
        assert_eq!(ok("1000000s"), MAX_DURATION.as_nanos());
        assert_eq!(ok("16666m"), 16_666 * 60_000_000_000);
    }

    #[test]
    fn percentiles_read_and_write_back_as_written() {
        let ok = |s: &str| parse_percentile(s).unwrap().unwrap();
        assert_eq!(ok("p95"), 0.95);
        assert_eq!(ok("p50"), 0.5);
        assert_eq!(ok("p99.9"), 0.999);
        assert_eq!(ok("p95.0"), 0.95);
        assert_eq!(ok("p0.01"), 0.0001);
        assert_eq!(ok("p099"), 0.99);
        for text in [
            "p1", "p50", "p95", "p99", "p99.9", "p99.99", "p99.9999", "p0.5", "p12.34",
        ] {
            assert_eq!(percentile_text(ok(text)), text);
        }
        assert_eq!(percentile_text(ok("p95.00")), "p95");
        assert!(parse_percentile("10ms").is_none());
        let err = |s: &str| parse_percentile(s).unwrap().unwrap_err();
        for bad in ["p", "p.5", "p9.", "p-5", "p9x", "p1e2", "pp95"] {
            assert!(err(bad).contains("is not a percentile"), "{bad}");
        }
        for out in [
            "p0",
            "p0.0",
            "p100",
            "p100.0",
            "p1000",
            "p99999999999999999999999",
        ] {
            assert!(err(out).contains("above p0 and below p100"), "{out}");
        }
        assert_eq!(ok("p00000000000000000000099"), 0.99);
        assert!(err("p99.99999").contains("more than 4 decimals"));
    }

    #[test]
    fn bad_durations_say_how_to_fix_them() {
        let err = |v: Value| parse_duration(&v).unwrap_err();
        assert!(err(json!(5)).contains("needs a unit"));
        assert!(err(json!("5")).contains("write \"5s\""));
        assert!(err(json!("5 parsecs")).contains("unknown unit"));
        assert!(err(json!("-1s")).contains("negative"));
        assert_eq!(err(json!("-0s")), "must not be negative (got \"-0s\")");
        assert_eq!(
            parse_duration(&json!(" 500 ms ")),
            Ok(SimDuration::from_millis(500))
        );
        assert!(err(json!(true)).contains("such as"));
        assert!(err(json!("1e18ns")).contains("has an exponent"));
        assert!(err(json!("2E-3s")).contains("has an exponent"));
        assert!(err(json!("1e")).contains("unknown unit"));
        for long in [
            "1000000.1s",
            "16667m",
            "278h",
            "1000000000000000001ns",
            "99999999999999999999999h",
        ] {
            assert!(err(json!(long)).contains("at most 1000000s"), "{long}");
        }
    }
}
