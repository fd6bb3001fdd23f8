//! Fonts and colours shared by every figure.

use std::sync::Once;

use plotters::style::{FontStyle, RGBColor, register_font};

/// The font family every figure names: in a PNG the DejaVu Sans compiled in, in an SVG the
/// viewer's sans-serif font.
pub const FONT: &str = "sans-serif";

/// Registers the compiled-in fonts with the plotting library, once per process.
pub fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType font shipped inside the dejavu crate.
        register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .unwrap_or_else(|_| panic!("the bundled DejaVu Sans font is valid"));
        register_font(FONT, FontStyle::Bold, dejavu::sans::bold())
            .unwrap_or_else(|_| panic!("the bundled DejaVu Sans Bold font is valid"));
    });
}

/// Ten distinct colours for variants: Tableau 10 with its grey replaced by navy, since greys
/// and black belong to the fixed series (`FIXED`: the queue line, goodput, the `timeout`
/// outcome), which a variant's colour must never be taken for.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(0, 0, 128),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The colours of the attempt outcomes, the same in every figure: darker than the variant
/// colours of the same hue, so an outcome's bar is never read as a variant.
pub const SUCCESS: RGBColor = RGBColor(0, 100, 0);
/// See [`SUCCESS`].
pub const ERROR: RGBColor = RGBColor(139, 0, 0);
/// See [`SUCCESS`].
pub const REJECTED: RGBColor = RGBColor(204, 85, 0);
/// See [`SUCCESS`].
pub const THROTTLED: RGBColor = RGBColor(75, 0, 130);
/// See [`SUCCESS`].
pub const TIMEOUT: RGBColor = RGBColor(127, 127, 127);
/// See [`SUCCESS`].
pub const CONFLICT: RGBColor = RGBColor(199, 21, 133);
/// See [`SUCCESS`].
pub const PERMANENT: RGBColor = RGBColor(60, 60, 60);
/// See [`SUCCESS`]: bulkhead refusals.
pub const BULKHEAD: RGBColor = RGBColor(184, 134, 11);
/// See [`SUCCESS`]: answers a fallback gave (degraded).
pub const DEGRADED: RGBColor = RGBColor(102, 170, 102);
/// The line of attempts waiting in the queue.
pub const QUEUE: RGBColor = RGBColor(110, 110, 110);
/// The queue line of the load figure.
pub const QUEUE_LIGHT: RGBColor = RGBColor(150, 150, 150);
/// Goodput lines, and the retries bars of the policy figure.
pub const INK: RGBColor = RGBColor(0, 0, 0);

/// Every fixed series colour: no variant colour may be near one of them. (The trigger
/// windows' pale red shading is a background, not a series.)
#[cfg(test)]
const FIXED: [RGBColor; 10] = [
    SUCCESS,
    ERROR,
    REJECTED,
    THROTTLED,
    TIMEOUT,
    CONFLICT,
    PERMANENT,
    QUEUE,
    QUEUE_LIGHT,
    INK,
];

/// The colour of the variant at `index` (its position in the scenario file), the same in
/// every figure.
pub fn variant_color(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

/// An axis range the plotting library can draw: `lo..hi` when both are finite, within
/// +-1e300 and `hi > lo`, else the nearest such range. Its tick search loops forever on an
/// infinite or NaN end, so every chart builds its axes through this.
pub fn span(lo: f64, hi: f64) -> std::ops::Range<f64> {
    const LIMIT: f64 = 1e300;
    let clamp = |x: f64, fallback: f64| {
        if x.is_nan() {
            fallback
        } else {
            x.clamp(-LIMIT, LIMIT)
        }
    };
    let lo = clamp(lo, 0.0);
    let hi = clamp(hi, lo + 1.0);
    if hi > lo {
        lo..hi
    } else if lo.abs() < 1.0 {
        lo..lo + 1.0
    } else {
        lo..lo + lo.abs()
    }
}

/// [`span`] for a log axis: both ends positive.
pub fn log_span(lo: f64, hi: f64) -> std::ops::Range<f64> {
    let lo = if lo.is_finite() && lo > 0.0 {
        lo.min(1e300)
    } else {
        1e-3
    };
    let hi = if hi.is_finite() && hi > lo {
        hi.min(1e300)
    } else {
        lo * 10.0
    };
    if hi > lo { lo..hi } else { lo / 10.0..lo }
}

/// A tick label: no trailing zeros, thousands without decimals, and from 100,000 on in
/// thousands or millions so labels stay narrow (`200`, `0.5`, `12000`, `150k`, `2.5M`).
pub fn tick(x: &f64) -> String {
    // Axis arithmetic can land on -0.0, which would print as "-0".
    let x = &(if *x == 0.0 { 0.0 } else { *x });
    let a = x.abs();
    if a >= 1e6 {
        format!("{}M", trim(format!("{:.1}", x / 1e6)))
    } else if a >= 1e5 {
        format!("{}k", trim(format!("{:.0}", x / 1e3)))
    } else if a >= 100.0 || *x == x.round() {
        format!("{x:.0}")
    } else if a >= 1.0 {
        trim(format!("{x:.1}"))
    } else {
        trim(format!("{x:.3}"))
    }
}

/// A tick formatter for an axis over `range` (about ten labels): as many decimals as labels
/// a tenth of the range apart need to differ, the same for every label, so an axis from 1.0
/// to 1.5 reads 1.00, 1.05, 1.10 rather than 1, 1.1, 1.1.
pub fn range_ticks(range: &std::ops::Range<f64>) -> impl Fn(&f64) -> String + use<> {
    let step = (range.end - range.start).abs() / 10.0;
    let decimals = if step > 0.0 && step.is_finite() {
        (-step.log10()).ceil().clamp(0.0, 9.0) as usize
    } else {
        0
    };
    let top = range.start.abs().max(range.end.abs());
    move |x: &f64| {
        if decimals == 0 || top >= 1e5 {
            return axis_ticks(top)(x);
        }
        let x = if *x == 0.0 { 0.0 } else { *x };
        format!("{x:.decimals$}")
    }
}

/// A tick formatter for an axis that reaches `top`: every label of one axis takes the same
/// form, so `100k` never stands next to `80000` (from 100,000 on in thousands, from a million
/// on in millions; below that as [`tick`]).
pub fn axis_ticks(top: f64) -> impl Fn(&f64) -> String {
    let a = top.abs();
    move |x: &f64| {
        let x = if *x == 0.0 { 0.0 } else { *x };
        if x == 0.0 {
            "0".to_string()
        } else if a >= 1e6 {
            format!("{}M", trim(format!("{:.1}", x / 1e6)))
        } else if a >= 1e5 {
            format!("{}k", trim(format!("{:.0}", x / 1e3)))
        } else {
            tick(&x)
        }
    }
}

/// A tick label on a log axis that plots values at their log10: the value at a whole power
/// of ten (1, 10, 100, then 1k, 10k, 100k, 1M, so one axis keeps one form), nothing between.
pub fn power_tick(v: &f64) -> String {
    if (v - v.round()).abs() > 1e-6 {
        return String::new();
    }
    match 10f64.powf(v.round()) {
        x if x >= 1e6 => format!("{}M", tick(&(x / 1e6))),
        x if x >= 1e3 => format!("{}k", tick(&(x / 1e3))),
        x => tick(&x),
    }
}

/// A tick formatter for shares in % on an axis from 0 to `top` (in %): as many decimals as
/// the ticks need to differ, so small shares never all read "0 %" (`0.02 %`, `0.04 %`).
pub fn percent_ticks(top: f64) -> impl Fn(&f64) -> String {
    // Ticks a third of the axis apart need the decimals of a third of `top`.
    let step = top / 3.0;
    let decimals = if step >= 1.0 || step.is_nan() || step <= 0.0 {
        0
    } else {
        ((-step.log10()).ceil() as usize).min(9)
    };
    move |x: &f64| {
        let x = if *x == 0.0 { 0.0 } else { *x };
        if x == 0.0 {
            "0 %".to_string()
        } else if decimals == 0 {
            format!("{} %", tick(&x))
        } else {
            format!("{} %", trim(format!("{x:.decimals$}")))
        }
    }
}

/// The unit a time axis spanning `span_s` seconds is labelled in, so that its ticks never all
/// read "0": seconds from 2 s on, milliseconds from 2 ms on, microseconds below.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeUnit {
    /// How many of the unit make a second.
    pub per_s: f64,
    /// The unit's symbol.
    pub name: &'static str,
}

impl TimeUnit {
    /// The unit for an axis spanning `span_s` seconds.
    pub fn for_span(span_s: f64) -> TimeUnit {
        if span_s >= 2.0 {
            TimeUnit {
                per_s: 1.0,
                name: "s",
            }
        } else if span_s >= 2e-3 {
            TimeUnit {
                per_s: 1e3,
                name: "ms",
            }
        } else {
            TimeUnit {
                per_s: 1e6,
                name: "\u{b5}s",
            }
        }
    }

    /// A tick label for `x` seconds, in this unit.
    pub fn label(self, x: &f64) -> String {
        tick(&(x * self.per_s))
    }
}

/// The dash pattern of the variant at `index` as (dash, gap) in pixels, `None` for a solid
/// line: curves that coincide still show each colour in turn.
pub fn dash(index: usize) -> Option<(u32, u32)> {
    match index % 3 {
        0 => None,
        1 => Some((12, 6)),
        _ => Some((4, 5)),
    }
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_short() {
        assert_eq!(tick(&200.0), "200");
        assert_eq!(tick(&0.5), "0.5");
        assert_eq!(tick(&2.25), "2.2");
        assert_eq!(tick(&0.125), "0.125");
        assert_eq!(tick(&12000.0), "12000");
        assert_eq!(tick(&150000.0), "150k");
        assert_eq!(tick(&2500000.0), "2.5M");
        assert_eq!(tick(&-0.0), "0");
    }

    #[test]
    fn one_axis_keeps_one_tick_form() {
        let f = axis_ticks(120_000.0);
        assert_eq!(f(&80_000.0), "80k");
        assert_eq!(f(&100_000.0), "100k");
        assert_eq!(axis_ticks(90_000.0)(&80_000.0), "80000");
        assert_eq!(TimeUnit::for_span(1e-4).label(&5e-5), "50");
        assert_eq!(TimeUnit::for_span(0.35).name, "ms");
        // thundering-herd's log axis read "10000" under "100k".
        let log: Vec<String> = [-1.0, 0.0, 2.0, 3.0, 4.0, 5.0, 6.0, 2.5]
            .iter()
            .map(power_tick)
            .collect();
        assert_eq!(log, ["0.1", "1", "100", "1k", "10k", "100k", "1M", ""]);
    }

    /// retry-chapter's histogram read "0 %, 0 %, 0 %" on an axis of tiny shares.
    #[test]
    fn small_shares_get_enough_decimals() {
        let f = percent_ticks(0.06);
        assert_eq!([f(&0.0), f(&0.02), f(&0.04)], ["0 %", "0.02 %", "0.04 %"]);
        let f = percent_ticks(0.0006);
        assert_eq!(f(&0.0002), "0.0002 %");
        let f = percent_ticks(30.0);
        assert_eq!([f(&10.0), f(&20.0)], ["10 %", "20 %"]);
    }
}

#[cfg(test)]
mod color_tests {
    use super::*;

    fn distance(a: RGBColor, b: RGBColor) -> f64 {
        let d = |x: u8, y: u8| (f64::from(x) - f64::from(y)).powi(2);
        (d(a.0, b.0) + d(a.1, b.1) + d(a.2, b.2)).sqrt()
    }

    /// hotos-metastable's 8th variant was the grey of the queue line and of `timeout`.
    #[test]
    fn no_variant_colour_is_near_a_fixed_series_colour() {
        for j in 0..PALETTE.len() {
            for fixed in FIXED {
                let d = distance(variant_color(j), fixed);
                assert!(
                    d >= 50.0,
                    "variant {j} {:?} near {fixed:?}: {d}",
                    variant_color(j)
                );
            }
        }
        assert_ne!(variant_color(7), QUEUE);
        assert_ne!(variant_color(7), TIMEOUT);
    }
}

#[cfg(test)]
mod span_tests {
    use super::*;

    #[test]
    fn spans_are_finite_and_not_empty_whatever_they_are_given() {
        let cases = [
            (0.0, 1.0),
            (0.0, f64::INFINITY),
            (f64::NEG_INFINITY, 0.0),
            (0.0, f64::NAN),
            (f64::NAN, f64::NAN),
            (0.0, 0.0),
            (5.0, 5.0),
            (-3.0, -3.0),
            (1e308, 1.7e308),
            (0.0, 1e308 * 1.12),
        ];
        for (lo, hi) in cases {
            for r in [span(lo, hi), log_span(lo, hi)] {
                assert!(
                    r.start.is_finite() && r.end.is_finite(),
                    "{lo}..{hi}: {r:?}"
                );
                assert!(r.end > r.start, "{lo}..{hi}: {r:?}");
            }
            assert!(log_span(lo, hi).start > 0.0);
        }
        assert_eq!(span(0.0, 2.0), 0.0..2.0, "a good range stays as it is");
        assert_eq!(log_span(0.01, 10.0), 0.01..10.0);
    }
}
