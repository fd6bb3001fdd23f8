//! Fonts and colours shared by every figure.

use std::sync::Once;

use plotters::style::{FontStyle, RGBColor, register_font};

/// The font family every figure uses (DejaVu Sans, compiled in).
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

/// A colour-blind-friendly palette of ten distinct colours (Tableau 10).
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
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
