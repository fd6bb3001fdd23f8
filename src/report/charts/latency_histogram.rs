//! The latency distribution of logical requests as a histogram, a panel per variant on one
//! log time axis and one y scale (the share of requests per log-spaced bin, in %): where the
//! CDF shows the order, this shows the shape (two humps for a bimodal run, a spike at the
//! timeout for requests that gave up). Requests left of the axis are counted in the panel's
//! title (and are in the CSV).

use anyhow::Result;
use plotters::prelude::*;

use super::canvas::{self, Area, Drawn};
use super::latency::{self, bin_lower_ms};
use super::style::{FONT, variant_color};
use super::{Chart, Run, Table};
use crate::metrics::{LATENCY_BINS_PER_DECADE, latency_bin_upper_ms};

/// The latency histogram figure.
pub struct LatencyHistogram;

/// Per variant: its name, its requests per latency bin and their shares in % of its
/// requests.
pub struct Shares(Vec<(String, Vec<f64>, Vec<f64>)>);

impl Table for Shares {
    fn write(&self, w: &mut csv::Writer<Vec<u8>>) -> csv::Result<()> {
        w.write_record([
            "variant",
            "latency_ms_from",
            "latency_ms_to",
            "requests",
            "share_pct",
        ])?;
        for (name, bins, shares) in &self.0 {
            for (i, (n, s)) in bins.iter().zip(shares).enumerate() {
                if *n > 0.0 {
                    w.write_record([
                        name,
                        &bin_lower_ms(i).to_string(),
                        &latency_bin_upper_ms(i).to_string(),
                        &n.to_string(),
                        &s.to_string(),
                    ])?;
                }
            }
        }
        Ok(())
    }
}

impl Chart for LatencyHistogram {
    type Table = Shares;

    fn stem(&self) -> &'static str {
        "latency-histogram"
    }

    fn caption(&self, run: &Run) -> String {
        if run.can_degrade() {
            "The shape of the latency distribution of answered requests (successes and fallback answers alike), a panel per variant on one log axis and one scale (share of answers per bin), its failure share in the title: two humps are a bimodal run, answers after a retry, or fast fallbacks beside real answers."
        } else {
            "The shape of the latency distribution of successful requests, a panel per variant on one log axis and one scale (share of successes per bin), its failure share in the title: two humps are a bimodal run or successes after a retry."
        }
        .to_string()
    }

    fn size(&self, run: &Run) -> (u32, u32) {
        super::rows_size(run.variants().len(), 120, 60)
    }

    fn table(&self, run: &Run) -> Result<Shares> {
        let shares = run.point().variants.iter().map(|v| {
            let bins = &v.success_latency_bins;
            let total: f64 = bins.iter().sum();
            let shares = bins
                .iter()
                .map(|n| if total > 0.0 { n / total * 100.0 } else { 0.0 })
                .collect();
            (v.name.clone(), bins.to_vec(), shares)
        });
        Ok(Shares(shares.collect()))
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Shares, root: &Area<DB>) -> Result<()> {
        let variants = &run.point().variants;
        let can_degrade = run.can_degrade();
        let (first, last) = latency::x_range(variants);
        let (lo, hi) = latency::x_span((first, last));
        // One y scale: the largest share of any drawn bin (0 to 100 % when there is none).
        let top = table
            .0
            .iter()
            .flat_map(|(_, _, s)| &s[first..=last])
            .copied()
            .fold(0.0, f64::max);
        let top = if top > 0.0 { top * 1.12 } else { 100.0 };
        let title = format!(
            "{}: latency histogram of {}{} (share per bin, {} bins per decade)",
            run.name(),
            latency::latency_of(can_degrade),
            run.at(),
            LATENCY_BINS_PER_DECADE
        );
        let body = canvas::titled(root, &title, 48, 18)?;
        if let Some(words) = latency::nothing_to_show(variants, can_degrade) {
            // No latency axis to draw: an axis of no data reads as a bug.
            return canvas::nothing_to_show(&body, words, 18);
        }
        let n = variants.len();
        let areas = body.split_evenly((n, 1));
        for (j, ((v, (_, _, share)), area)) in variants.iter().zip(&table.0).zip(&areas).enumerate()
        {
            let color = variant_color(j);
            let mut title = super::display_name(v);
            for note in [latency::failed_share(v), latency::left_share(v, first)]
                .into_iter()
                .flatten()
            {
                title.push_str(&format!(" ({note})"));
            }
            let last_panel = j + 1 == n;
            let mut chart = ChartBuilder::on(area)
                .margin_left(12)
                .margin_right(24)
                .margin_top(4)
                .x_label_area_size(if last_panel { 38 } else { 20 })
                .y_label_area_size(72)
                .caption(title, (FONT, 16).into_font().color(&color))
                .build_cartesian_2d(
                    super::style::log_span(lo, hi).log_scale(),
                    super::style::span(0.0, top),
                )
                .drawn()?;
            let percent = super::style::percent_ticks(top);
            let mut mesh = chart.configure_mesh();
            mesh.label_style((FONT, 13))
                .x_label_formatter(&latency::log_tick)
                .y_label_formatter(&percent)
                .y_labels(3)
                .x_labels(30)
                .light_line_style(WHITE.mix(0.0))
                .bold_line_style(BLACK.mix(0.08))
                .axis_desc_style((FONT, 13))
                .y_desc(if can_degrade { "answers" } else { "successes" });
            if last_panel {
                mesh.x_desc(latency::x_desc(can_degrade));
            }
            mesh.draw().drawn()?;
            if share.iter().all(|s| *s <= 0.0) {
                let words = latency::no_requests(can_degrade);
                let plot = chart.plotting_area().strip_coord_spec();
                canvas::nothing_to_show(&plot, words, 14)?;
                continue;
            }
            let style = if v.is_truncated() {
                color.mix(0.45).filled()
            } else {
                color.filled()
            };
            chart
                .draw_series((first.max(1)..=last).filter(|&i| share[i] > 0.0).map(|i| {
                    Rectangle::new(
                        [(bin_lower_ms(i), 0.0), (latency_bin_upper_ms(i), share[i])],
                        style,
                    )
                }))
                .drawn()?;
        }
        Ok(())
    }
}
