//! What the over-time figures share about triggers: each variant's windows, the light-red
//! bands that shade them, the CSV flag of a bucket inside one, and the warning a panel carries
//! when its replications split between recovering and staying collapsed.

use plotters::element::DynElement;
use plotters::prelude::*;

use super::style::FONT;
use crate::metrics::VariantResult;
use crate::scenario::Variant;

/// The colour of the trigger bands and their label.
pub const TRIGGER: RGBColor = RGBColor(200, 40, 40);

/// Each variant's trigger windows, in seconds (a variant's patch may change them). They come
/// from the validated scenario, so `retrystorm report DIR` draws them again.
pub fn windows<'a>(variants: impl IntoIterator<Item = &'a Variant>) -> Vec<Vec<(f64, f64)>> {
    variants
        .into_iter()
        .map(|v| {
            v.scenario
                .triggers()
                .iter()
                .map(|t| (t.from.as_secs_f64(), t.to.as_secs_f64()))
                .collect()
        })
        .collect()
}

/// Whether the bucket `[start, end)` (seconds) overlaps one of `windows`.
pub fn overlaps(windows: &[(f64, f64)], start: f64, end: f64) -> bool {
    windows.iter().any(|&(a, b)| a < end && start < b)
}

/// The shaded bands (and their "trigger" labels) of `windows` on a panel whose x axis ends at
/// `end` and whose y axis runs from `foot` to `top`; drawn first, under the data.
pub fn bands<DB: DrawingBackend>(
    windows: &[(f64, f64)],
    end: f64,
    (foot, top): (f64, f64),
) -> Vec<DynElement<'static, DB, (f64, f64)>> {
    windows
        .iter()
        .filter(|(a, _)| *a < end)
        .flat_map(|&(a, b)| {
            [
                Rectangle::new([(a, foot), (b.min(end), top)], TRIGGER.mix(0.13).filled())
                    .into_dyn(),
                Text::new(
                    "trigger",
                    (a + end / 200.0, top),
                    (FONT, 12).into_font().color(&TRIGGER),
                )
                .into_dyn(),
            ]
        })
        .collect()
}

/// For a variant whose replications split between recovering and staying collapsed, the note
/// its panels carry: a mean over both looks like no single run.
pub fn split_note(v: &VariantResult) -> Option<String> {
    split_words(v, "mean of")
}

/// The same note for a figure that draws something else than a mean of the replications
/// (`what`: "percentiles pooled over").
pub fn split_words(v: &VariantResult, what: &str) -> Option<String> {
    split_counts(v).map(|(k, down)| {
        format!(
            "{what} {k:.0} recovered and {down:.0} collapsed replications: no single run looks like this"
        )
    })
}

/// How many replications recovered and how many stayed collapsed, for a variant whose
/// replications split between the two.
pub fn split_counts(v: &VariantResult) -> Option<(f64, f64)> {
    let r = v.metrics.recovery.as_ref()?;
    match (r.recovered, r.replications) {
        (k, n) if k > 0.0 && k < n => Some((k, n - k)),
        _ => None,
    }
}
