//! What every over-time figure shares, so that its panels compare at a glance: one display
//! bucket, one time axis and rates per second.
//!
//! A [`Frame`] re-bins every variant's mean series into one display bucket (a whole multiple
//! of the widest stored bucket, at most [`MAX_BARS`] of them across the axis, so a bar is at
//! least about two pixels wide), turns count columns into rates (count per bucket / bucket
//! width in s) and keeps state columns as sampled at the end of the display bucket. Each
//! variant's rows stop at its last activity (the last bucket with any count), and the axis
//! spans the longest activity, at least [`MIN_BUCKETS`] display buckets (a panel whose
//! attempts all sit at one instant shows a narrow bar, not a block) and starts a little before
//! 0, so a bar at t = 0 stands clear of the y axis. A [`Series`] is the table of an over-time
//! figure: its CSV is written from the frame's rows that the figure draws. A [`YAxis`] is
//! linear, or logarithmic where a few tall bars (a herd at t = 0) would flatten the rest.

use anyhow::Result;
use plotters::chart::DualCoordChartContext;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::canvas::{self, Area, Drawn};
use super::style::{FONT, TimeUnit, axis_ticks, power_tick, span};
use super::triggers;
use super::{Run, Table};
use crate::metrics::Column;
use crate::metrics::VariantResult;
use crate::metrics::series::COLUMNS;

/// Most display buckets across the time axis.
pub const MAX_BARS: f64 = 400.0;

/// Fewest display buckets across the time axis.
pub const MIN_BUCKETS: f64 = 10.0;

/// One display row: rates (/s) for count columns, states as sampled.
pub type Row = [f64; COLUMNS];

/// The shared time axis and every variant's display rows.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Width of a display bucket, in seconds.
    pub bucket: f64,
    /// Where the time axis starts (a little below 0), in seconds.
    pub x0: f64,
    /// Where the time axis ends, in seconds.
    pub x1: f64,
    /// The unit the time axis is labelled in.
    pub unit: TimeUnit,
    /// Per variant, its display rows up to its last activity.
    pub rows: Vec<Vec<Row>>,
}

/// How many stored rows of `v` hold activity: up to the last bucket with any count.
pub fn active_rows(series: &[Row]) -> usize {
    series
        .iter()
        .rposition(|r| {
            Column::ALL
                .iter()
                .any(|c| !c.is_state() && r[*c as usize] > 0.0)
        })
        .map_or(0, |i| i + 1)
}

impl Frame {
    /// The frame of `series`, each given with its stored bucket width in seconds, and
    /// each drawn to its own last active bucket.
    pub fn new(series: &[(&[Row], f64)]) -> Frame {
        let ends: Vec<usize> = series.iter().map(|(rows, _)| active_rows(rows)).collect();
        Frame::ending_at(series, &ends)
    }

    /// The frame of `series` where the lines of one group (`group[i]` for series i: the
    /// replicas or services of one variant) are all drawn to the group's last active bucket:
    /// a replica that received nothing after some instant shows 0 to its variant's end,
    /// not a line that stops as if its data ran out.
    pub fn sharing_ends(series: &[(&[Row], f64)], group: &[usize]) -> Frame {
        let own: Vec<usize> = series.iter().map(|(rows, _)| active_rows(rows)).collect();
        let ends: Vec<usize> = (0..series.len())
            .map(|i| {
                let shared = (0..series.len())
                    .filter(|&j| group[j] == group[i])
                    .map(|j| own[j])
                    .max()
                    .unwrap_or(0);
                shared.min(series[i].0.len())
            })
            .collect();
        Frame::ending_at(series, &ends)
    }

    /// The frame of `series`, series i drawn over its first `ends[i]` rows.
    fn ending_at(series: &[(&[Row], f64)], ends: &[usize]) -> Frame {
        let widest = series.iter().map(|(_, w)| *w).fold(0.0, f64::max);
        let widest = if widest > 0.0 { widest } else { 1.0 };
        let activity = series
            .iter()
            .zip(ends)
            .map(|((_, w), end)| *end as f64 * w)
            .fold(0.0, f64::max);
        let span = activity.max(MIN_BUCKETS * widest);
        // A whole, round multiple (1, 2 or 5 times a power of ten) of the widest bucket.
        let need = (span / (widest * MAX_BARS)).ceil().max(1.0);
        let merge = round_up(need);
        let bucket = widest * merge;
        let rows = series
            .iter()
            .zip(ends)
            .map(|((rows, w), &end)| {
                let factor = if *w > 0.0 {
                    ((bucket / w).round() as usize).max(1)
                } else {
                    1
                };
                rows[..end]
                    .chunks(factor)
                    .map(|chunk| {
                        // States keep the value at the end of the display bucket.
                        let mut row = *chunk.last().expect("chunks are never empty");
                        for c in Column::ALL.iter().filter(|c| !c.is_state()) {
                            let i = *c as usize;
                            row[i] = chunk.iter().map(|r| r[i]).sum::<f64>() / bucket;
                        }
                        row
                    })
                    .collect()
            })
            .collect();
        Frame {
            bucket,
            x0: -span * 0.012,
            x1: span * 1.02,
            unit: TimeUnit::for_span(span),
            rows,
        }
    }

    /// The frame of some variants' mean series.
    pub fn of(variants: &[&VariantResult]) -> Frame {
        let series: Vec<(&[Row], f64)> = variants
            .iter()
            .map(|v| (v.series.as_slice(), v.bucket.as_secs_f64()))
            .collect();
        Frame::new(&series)
    }

    /// Where display bucket `i` starts, in seconds.
    pub fn start(&self, i: usize) -> f64 {
        i as f64 * self.bucket
    }

    /// The largest value of `f` over every row of every variant: the one y scale of a figure.
    pub fn max(&self, f: impl Fn(&Row) -> f64) -> f64 {
        self.rows.iter().flatten().map(f).fold(0.0, f64::max)
    }

    /// The time axis' title.
    pub fn x_desc(&self) -> String {
        format!("time ({})", self.unit.name)
    }

    /// The words that name the display bucket, e.g. "rates per 10 ms bucket".
    pub fn bucket_words(&self) -> String {
        let unit = TimeUnit::for_span(self.bucket * 2.0);
        format!("{} {} buckets", unit.label(&self.bucket), unit.name)
    }
}

/// How many decades the tallest value must stand above the median of the values drawn for
/// a log axis (the rule of the sweep curves' y axes).
const LOG_DECADES: f64 = 1.5;

/// How many decades under the tallest value count when deciding for a log axis: what lies
/// lower (a retry or two in one of 200 replications) is noise, which does not make an axis
/// logarithmic, though it is drawn on one.
const DEPTH: f64 = 4.0;

/// A y axis: linear from 0 to `hi`, or logarithmic (`log`), values drawn at their log10 from
/// `lo` to `hi`. Over-time figures and comparison.png's latency panels use it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct YAxis {
    /// Whether values are drawn at their log10.
    pub log: bool,
    /// The foot, as drawn (0 on a linear axis).
    pub lo: f64,
    /// The top, as drawn.
    pub hi: f64,
}

impl YAxis {
    /// A linear axis from 0 to `top`.
    pub fn linear(top: f64) -> YAxis {
        YAxis {
            log: false,
            lo: 0.0,
            hi: top,
        }
    }

    /// An over-time figure's axis for `values` (rates; zeros do not count): logarithmic where
    /// the tallest stands more than [`LOG_DECADES`] decades above the median of those within
    /// [`DEPTH`] decades of it (thundering-herd: 100,000/s at t = 0 over hundreds a second
    /// after); else linear. A log axis' foot is the power of ten at least half a decade under
    /// the least value, so every bucket that saw anything stands as a bar, however short.
    pub fn of(values: impl Iterator<Item = f64>) -> YAxis {
        let mut drawn: Vec<f64> = values.filter(|v| *v > 0.0 && v.is_finite()).collect();
        drawn.sort_by(f64::total_cmp);
        let most = drawn.last().copied().unwrap_or(1e-9);
        let least = drawn.first().copied().unwrap_or(most);
        drawn.retain(|v| *v >= most / 10f64.powf(DEPTH));
        let median = drawn.get(drawn.len() / 2).copied().unwrap_or(most);
        if (most / median).log10() <= LOG_DECADES {
            return YAxis::linear(most * 1.1);
        }
        YAxis {
            log: true,
            lo: (least.log10() - 0.5).floor(),
            hi: (most * 1.5).log10(),
        }
    }

    /// Where `value` is drawn: itself, or on a log axis its log10, never under the foot.
    pub fn at(&self, value: f64) -> f64 {
        match (self.log, value > 0.0) {
            (false, _) => value,
            (true, true) => value.log10().max(self.lo),
            (true, false) => self.lo,
        }
    }

    /// The tick labels: numbers of one form, or on a log axis the whole powers of ten.
    pub fn ticks(&self) -> impl Fn(&f64) -> String + use<> {
        let (log, linear) = (self.log, axis_ticks(self.hi));
        move |v: &f64| if log { power_tick(v) } else { linear(v) }
    }
}

/// A panel of an over-time figure, with both y axes built.
pub type Panel<'a, DB> = DualCoordChartContext<
    'a,
    DB,
    Cartesian2d<RangedCoordf64, RangedCoordf64>,
    Cartesian2d<RangedCoordf64, RangedCoordf64>,
>;

/// How a panel looks.
pub struct PanelSpec<'s> {
    /// The panel's title (the variant's name and notes).
    pub title: &'s str,
    /// The title's colour.
    pub color: RGBColor,
    /// The left axis.
    pub y: YAxis,
    /// The left axis' title.
    pub y_desc: &'s str,
    /// Tick labels for the left axis; `None` for numbers.
    pub y_format: Option<&'s dyn Fn(&f64) -> String>,
    /// The right axis' top and title, if it has one.
    pub right: Option<(f64, &'s str)>,
    /// Whether the panel carries the time axis' title (the bottom one).
    pub last: bool,
}

impl<'s> PanelSpec<'s> {
    /// A panel with numbers on its left axis `y` and no right axis.
    pub fn new(title: &'s str, color: RGBColor, y: YAxis, y_desc: &'s str, last: bool) -> Self {
        PanelSpec {
            title,
            color,
            y,
            y_desc,
            y_format: None,
            right: None,
            last,
        }
    }
}

/// Builds a panel on `area` with the frame's time axis and draws its axes.
pub fn panel<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    frame: &Frame,
    spec: &PanelSpec,
) -> Result<Panel<'a, DB>> {
    // The title shrinks to fit its panel rather than run off its edges.
    let room = area.dim_in_pixel().0.saturating_sub(30);
    let title_size = (10..=16)
        .rev()
        .find(|&s| canvas::text_width(spec.title, s) <= room)
        .unwrap_or(10);
    let right_top = spec.right.map_or(1.0, |(t, _)| t);
    let (lo, hi) = (spec.y.lo, spec.y.hi);
    let mut chart = ChartBuilder::on(area)
        .margin_left(12)
        .margin_right(16)
        .margin_top(4)
        .x_label_area_size(if spec.last { 38 } else { 20 })
        .y_label_area_size(72)
        .right_y_label_area_size(if spec.right.is_some() { 64 } else { 0 })
        .caption(
            spec.title,
            (FONT, title_size).into_font().color(&spec.color),
        )
        .build_cartesian_2d(span(frame.x0, frame.x1), span(lo, hi))
        .drawn()?
        .set_secondary_coord(span(frame.x0, frame.x1), span(0.0, right_top));
    let unit = frame.unit;
    let x_label = move |x: &f64| unit.label(x);
    let numbers = spec.y.ticks();
    let y_label = spec.y_format.unwrap_or(&numbers);
    let x_desc = frame.x_desc();
    let mut mesh = chart.configure_mesh();
    mesh.label_style((FONT, 13))
        .x_label_formatter(&x_label)
        .y_label_formatter(y_label)
        .y_labels(if spec.y.log { 6 } else { 5 })
        .x_labels(10)
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
        .axis_desc_style((FONT, 13))
        .y_desc(spec.y_desc);
    if spec.last {
        mesh.x_desc(x_desc.as_str());
    }
    mesh.draw().drawn()?;
    if let Some((top, desc)) = spec.right {
        let right = axis_ticks(top);
        chart
            .configure_secondary_axes()
            .label_style((FONT, 13))
            .y_labels(3)
            .y_label_formatter(&right)
            .axis_desc_style((FONT, 13))
            .y_desc(desc)
            .draw()
            .drawn()?;
    }
    Ok(chart)
}

/// The bars of `rows` from `lo(row)` to `hi(row)`, one display bucket wide each; empty bars
/// are left out.
pub fn bars<'r>(
    frame: &'r Frame,
    rows: &'r [Row],
    lo: impl Fn(&Row) -> f64 + 'r,
    hi: impl Fn(&Row) -> f64 + 'r,
    style: ShapeStyle,
) -> impl Iterator<Item = Rectangle<(f64, f64)>> + 'r {
    rows.iter().enumerate().filter_map(move |(i, r)| {
        let (a, b) = (lo(r), hi(r));
        (b > a).then(|| {
            let x = frame.start(i);
            Rectangle::new([(x, a), (x + frame.bucket, b)], style)
        })
    })
}

/// One series of an over-time table: its row of the frame, its variant, the cells that name
/// it in the CSV, and its variant's trigger windows.
pub struct Line {
    /// Its index in [`Frame::rows`].
    pub row: usize,
    /// Its variant's position in the scenario file.
    pub variant: usize,
    /// The key cells that name it.
    pub key: Vec<String>,
    /// Its variant's trigger windows, in seconds.
    pub windows: Vec<(f64, f64)>,
}

/// A line's value cells for one display row.
pub type Cells = Box<dyn Fn(&Line, &Row) -> Vec<String>>;

/// The table of an over-time figure: the frame and the lines drawn from it. Its CSV has the
/// key columns, `bucket_start_s, bucket_s`, the value columns of each drawn row, then
/// `trigger` (1 inside a trigger window) when the figure shades triggers.
pub struct Series {
    /// The shared time axis and every series' display rows.
    pub frame: Frame,
    /// The key columns' names.
    pub keys: Vec<&'static str>,
    /// The lines written and drawn, in order.
    pub lines: Vec<Line>,
    /// The value columns' names.
    pub columns: Vec<String>,
    /// The value cells of a line's row.
    pub cells: Cells,
    /// Whether the CSV has the `trigger` column.
    pub trigger: bool,
}

impl Series {
    /// The series of every variant at the run's focus point, a line each named by the
    /// variant, with `columns` of each row.
    pub fn of_variants(run: &Run, columns: &[Column]) -> Series {
        let variants: Vec<_> = run.point().variants.iter().collect();
        let windows = run.windows();
        let lines = variants.iter().enumerate().map(|(j, v)| Line {
            row: j,
            variant: j,
            key: vec![v.name.clone()],
            windows: windows.get(j).cloned().unwrap_or_default(),
        });
        let (names, cells) = values(columns);
        Series {
            frame: Frame::of(&variants),
            keys: vec!["variant"],
            lines: lines.collect(),
            columns: names,
            cells,
            trigger: windows.iter().any(|w| !w.is_empty()),
        }
    }
}

/// The CSV names of `columns` (`<name>_per_s` for a count, as a rate) and their cells.
pub fn values(columns: &[Column]) -> (Vec<String>, Cells) {
    let names = columns.iter().map(|c| {
        if c.is_state() {
            c.name().to_string()
        } else {
            format!("{}_per_s", c.name())
        }
    });
    let columns = columns.to_vec();
    let cells =
        move |_: &Line, r: &Row| columns.iter().map(|c| r[*c as usize].to_string()).collect();
    (names.collect(), Box::new(cells))
}

impl Table for Series {
    fn write(&self, w: &mut csv::Writer<Vec<u8>>) -> csv::Result<()> {
        let mut head: Vec<String> = self.keys.iter().map(|k| k.to_string()).collect();
        head.extend(["bucket_start_s".to_string(), "bucket_s".to_string()]);
        head.extend(self.columns.iter().cloned());
        if self.trigger {
            head.push("trigger".into());
        }
        w.write_record(&head)?;
        let bucket = self.frame.bucket;
        for line in &self.lines {
            for (i, row) in self.frame.rows[line.row].iter().enumerate() {
                let start = self.frame.start(i);
                let mut record = line.key.clone();
                record.extend([start.to_string(), bucket.to_string()]);
                record.extend((self.cells)(line, row));
                if self.trigger {
                    let inside = triggers::overlaps(&line.windows, start, start + bucket);
                    record.push(u8::from(inside).to_string());
                }
                w.write_record(&record)?;
            }
        }
        Ok(())
    }
}

/// The title band of an over-time figure: `title`, then "; red band: trigger" and the closing
/// parenthesis when the figure shades triggers.
pub fn titled<DB: DrawingBackend>(
    root: &Area<DB>,
    title: String,
    trigger: bool,
    size: u32,
) -> Result<Area<DB>> {
    let band = if trigger { "; red band: trigger" } else { "" };
    canvas::titled(root, &format!("{title}{band})"), 48, size)
}

/// A panel's title: the variant's name as figures show it, with the note of a variant whose
/// replications split between recovering and staying collapsed.
pub fn panel_title(v: &VariantResult) -> String {
    panel_title_as(v, "mean of")
}

/// A panel's title for a figure whose values are `what` the replications ("percentiles
/// pooled over"), not their mean.
pub fn panel_title_as(v: &VariantResult, what: &str) -> String {
    let name = super::display_name(v);
    match super::triggers::split_words(v, what) {
        Some(note) => format!("{name} ({note})"),
        None => name,
    }
}

/// Attempts sent in a row: first attempts and retries.
pub fn sent(r: &Row) -> f64 {
    r[Column::FirstAttempts as usize] + r[Column::Retries as usize]
}

/// What the load figures draw in a panel on axis `y`: the trigger windows as bands
/// underneath, first attempts (mixed to `pale`) under retries (mixed to `dark`) as bars, and
/// goodput as a thin black line through the middle of each bucket, which leaves the bars'
/// tops in sight where goodput meets them.
#[allow(clippy::too_many_arguments)]
pub fn draw_load<DB: DrawingBackend>(
    chart: &mut Panel<'_, DB>,
    frame: &Frame,
    rows: &[Row],
    windows: &[(f64, f64)],
    y: &YAxis,
    color: RGBColor,
    (pale, dark): (f64, f64),
) -> Result<()> {
    chart
        .draw_series(super::triggers::bands(windows, frame.x1, (y.lo, y.hi)))
        .drawn()?;
    let first = |r: &Row| y.at(r[Column::FirstAttempts as usize]);
    chart
        .draw_series(bars(
            frame,
            rows,
            |_| y.at(0.0),
            first,
            color.mix(pale).filled(),
        ))
        .drawn()?;
    let top = |r: &Row| y.at(sent(r));
    chart
        .draw_series(bars(frame, rows, first, top, color.mix(dark).filled()))
        .drawn()?;
    let goodput = rows.iter().enumerate().map(|(i, r)| {
        (
            frame.start(i) + frame.bucket / 2.0,
            y.at(r[Column::Succeeded as usize]),
        )
    });
    chart
        .draw_series(LineSeries::new(goodput, super::style::INK.stroke_width(1)))
        .drawn()?;
    Ok(())
}

/// The smallest of 1, 2 and 5 times a power of ten that is at least `x` (>= 1).
fn round_up(x: f64) -> f64 {
    if x.is_nan() || x > 1e300 {
        // Infinite or NaN: no power of ten reaches it.
        return 1e300;
    }
    let mut power = 1.0;
    loop {
        for m in [1.0, 2.0, 5.0] {
            if m * power >= x {
                return m * power;
            }
        }
        power *= 10.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(col: Column, x: f64) -> Row {
        let mut r = [0.0; COLUMNS];
        r[col as usize] = x;
        r
    }

    #[test]
    fn rates_are_counts_per_second_and_every_variant_shares_the_bucket() {
        // 10 ms buckets for one variant, 20 ms (merged) for the other.
        let a: Vec<Row> = (0..100).map(|_| row(Column::Attempts, 5.0)).collect();
        let b: Vec<Row> = (0..10).map(|_| row(Column::Attempts, 10.0)).collect();
        let f = Frame::new(&[(&a, 0.01), (&b, 0.02)]);
        assert_eq!(f.bucket, 0.02);
        assert_eq!(f.rows[0].len(), 50);
        assert_eq!(f.rows[1].len(), 10, "a series stops at its last activity");
        assert!((f.rows[0][0][Column::Attempts as usize] - 500.0).abs() < 1e-9);
        assert!((f.rows[1][0][Column::Attempts as usize] - 500.0).abs() < 1e-9);
    }

    /// A replica its callers stopped sending to (ejected, or crashed with sticky routes)
    /// draws 0 to its variant's end, not a line that stops as if its data ran out; another
    /// variant's end is its own.
    #[test]
    fn lines_of_one_variant_share_their_end() {
        let busy: Vec<Row> = (0..100).map(|_| row(Column::Attempts, 5.0)).collect();
        let mut left = busy.clone();
        for r in &mut left[20..] {
            *r = Row::default();
        }
        let short: Vec<Row> = (0..30).map(|_| row(Column::Attempts, 5.0)).collect();
        let series = [(&busy[..], 0.01), (&left[..], 0.01), (&short[..], 0.01)];
        let f = Frame::sharing_ends(&series, &[0, 0, 1]);
        assert_eq!(f.rows[0].len(), f.rows[1].len(), "one variant, one end");
        let zeros = f.rows[1].iter().skip(f.rows[1].len() / 2);
        assert!(zeros.clone().count() > 0);
        assert!(
            zeros
                .into_iter()
                .all(|r| r[Column::Attempts as usize] == 0.0)
        );
        assert!(
            f.rows[2].len() < f.rows[0].len(),
            "another variant ends at its own"
        );
        assert!(Frame::new(&series).rows[1].len() < f.rows[1].len());
    }

    /// thundering-herd's herd of 100,000/s at t = 0 flattened the retries spread at hundreds
    /// a second after it; a storm with a few stray retries around it stays linear.
    #[test]
    fn a_few_tall_bars_over_a_low_bulk_get_a_log_axis() {
        let herd = [
            100_000.0, 90_000.0, 2000.0, 900.0, 500.0, 300.0, 120.0, 5.0, 0.0,
        ];
        let y = YAxis::of(herd.into_iter());
        assert!(y.log);
        assert_eq!(y.lo, 0.0, "5/s stands half a decade over the foot");
        assert!(
            y.at(5.0) - y.lo >= 0.5,
            "the least value is a bar, not the foot"
        );
        assert!((y.at(1000.0) - 3.0).abs() < 1e-12);
        let tens = YAxis::of([1e5, 9e4, 10.0, 10.0, 10.0].into_iter());
        assert_eq!(
            tens.lo, 0.0,
            "10/s on a foot of 10/s would be no bar at all"
        );
        assert_eq!(y.ticks()(&3.0), "1k");
        let storm = [50.0, 52.0, 49.0, 51.0, 6.0, 0.005, 0.005, 0.005, 0.005, 0.0];
        let y = YAxis::of(storm.into_iter());
        assert_eq!(y, YAxis::linear(52.0 * 1.1));
        assert!(!YAxis::of(std::iter::empty()).log);
    }

    #[test]
    fn one_instant_still_gets_an_axis_of_several_buckets() {
        let a = vec![row(Column::Attempts, 100.0)];
        let f = Frame::new(&[(&a, 1e-5)]);
        assert!(f.x1 >= MIN_BUCKETS * 1e-5);
        assert!(f.x0 < 0.0, "a bar at 0 clears the y axis");
        assert_eq!(f.unit.name, "\u{b5}s");
    }
}
