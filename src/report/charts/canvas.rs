//! What every figure's drawing shares: the one way a plotting error becomes an error, the
//! white ground and the title band, the variants' legend, and the dashed variant lines. A
//! figure draws its own marks; it never sets these up itself.

use anyhow::Result;
use plotters::coord::Shift;
use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;

use super::style::{self, FONT, variant_color};
use crate::metrics::VariantResult;

/// A figure's drawing area.
pub type Area<DB> = DrawingArea<DB, Shift>;

/// Turns a plotting error into an error that says drawing failed.
pub trait Drawn<T> {
    /// The value, or the plotting error as "drawing failed: …".
    fn drawn(self) -> Result<T>;
}

impl<T, E: std::error::Error + Send + Sync> Drawn<T> for Result<T, DrawingAreaErrorKind<E>> {
    fn drawn(self) -> Result<T> {
        self.map_err(|e| anyhow::anyhow!("drawing failed: {e}"))
    }
}

/// Fills `root` white and draws `title` at `size` in a band `height` pixels tall across its
/// top; returns the area below the band.
pub fn titled<DB: DrawingBackend>(
    root: &Area<DB>,
    title: &str,
    height: u32,
    size: u32,
) -> Result<Area<DB>> {
    root.fill(&WHITE).drawn()?;
    let (band, body) = root.split_vertically(height);
    draw_title(&band, title, size)?;
    Ok(body)
}

/// Draws `keys` across the top of `area` in as many rows as they need; returns the area
/// below them.
pub fn legend<DB: DrawingBackend>(area: &Area<DB>, keys: &[Key]) -> Result<Area<DB>> {
    let (band, body) = area.split_vertically(legend_height(keys, area.dim_in_pixel().0));
    draw_legend(&band, keys)?;
    Ok(body)
}

/// The pixels the rows of `keys` take in a legend `width` pixels wide.
pub fn legend_height(keys: &[Key], width: u32) -> u32 {
    let labels = keys.iter().map(|k| k.label.as_str());
    legend_rows(labels, width, LEGEND_FONT).len() as u32 * LEGEND_ROW + 8
}

/// What a legend entry's sample looks like.
#[derive(Debug, Clone, Copy)]
pub enum Mark {
    /// A filled square, as the variant's bars.
    Swatch,
    /// A pale square with a border: the bars of a truncated variant.
    PaleSwatch,
    /// A line in the dash pattern of the variant at this index.
    Line(usize),
}

/// A legend entry.
#[derive(Debug, Clone)]
pub struct Key {
    /// The words.
    pub label: String,
    /// The colour of the sample.
    pub color: RGBColor,
    /// The sample.
    pub mark: Mark,
}

const LEGEND_FONT: u32 = 15;
const LEGEND_ROW: u32 = 22;

/// One key per variant, in file order and colour; truncated variants say so and get a pale
/// swatch.
pub fn variant_keys(variants: &[VariantResult], line: bool) -> Vec<Key> {
    variants
        .iter()
        .enumerate()
        .map(|(j, v)| Key {
            label: super::display_name(v),
            color: variant_color(j),
            mark: match (line, v.is_truncated()) {
                (true, _) => Mark::Line(j),
                (false, true) => Mark::PaleSwatch,
                (false, false) => Mark::Swatch,
            },
        })
        .collect()
}

/// The width of `text` in pixels at `size`, measured with the compiled-in font.
pub fn text_width(text: &str, size: u32) -> u32 {
    style::register_fonts();
    (FONT, size)
        .into_font()
        .box_size(text)
        .map_or(text.len() as u32 * size / 2, |(w, _)| w)
}

/// Legend labels at `size`, each after a 30-pixel sample, in rows that fit `width` pixels:
/// (label, x) per row.
pub fn legend_rows<'a>(
    labels: impl Iterator<Item = &'a str>,
    width: u32,
    size: u32,
) -> Vec<Vec<(usize, i32)>> {
    let mut rows: Vec<Vec<(usize, i32)>> = vec![Vec::new()];
    let mut x = 16;
    for (i, label) in labels.enumerate() {
        let w = 32 + text_width(label, size) as i32 + 22;
        if x + w > width as i32 && x > 16 {
            rows.push(Vec::new());
            x = 16;
        }
        rows.last_mut().expect("never empty").push((i, x));
        x += w;
    }
    rows
}

/// Draws `keys` on `area`, wrapping to as many rows as their measured widths need, so no two
/// entries touch.
fn draw_legend<DB: DrawingBackend>(area: &Area<DB>, keys: &[Key]) -> Result<()> {
    let (width, _) = area.dim_in_pixel();
    let labels = keys.iter().map(|k| k.label.as_str());
    for (r, row) in legend_rows(labels, width, LEGEND_FONT).iter().enumerate() {
        let y = 6 + r as i32 * LEGEND_ROW as i32;
        for &(i, x) in row {
            let key = &keys[i];
            let square = [(x, y), (x + 22, y + 15)];
            match key.mark {
                Mark::Swatch => area
                    .draw(&Rectangle::new(square, key.color.filled()))
                    .drawn()?,
                Mark::PaleSwatch => {
                    area.draw(&Rectangle::new(square, key.color.mix(0.3).filled()))
                        .drawn()?;
                    area.draw(&Rectangle::new(square, key.color.stroke_width(2)))
                        .drawn()?;
                }
                Mark::Line(j) => area
                    .draw(&variant_line(
                        vec![(x, y + 8), (x + 28, y + 8)],
                        j,
                        key.color,
                        3,
                    ))
                    .drawn()?,
            }
            area.draw(&Text::new(
                key.label.clone(),
                (x + 32, y),
                (FONT, LEGEND_FONT),
            ))
            .drawn()?;
        }
    }
    Ok(())
}

/// A line through `points` in `color`, dashed as the variant at `index` is in every figure
/// (see [`style::dash`]), so curves that coincide still show each colour.
pub fn variant_line<DB: DrawingBackend, C: Clone + 'static>(
    points: Vec<C>,
    index: usize,
    color: RGBColor,
    width: u32,
) -> plotters::element::DynElement<'static, DB, C>
where
    PathElement<C>: Drawable<DB>,
    for<'b> &'b PathElement<C>: PointCollection<'b, C>,
    plotters::element::DashedPathElement<std::vec::IntoIter<C>, u32>: Drawable<DB>,
    for<'b> &'b plotters::element::DashedPathElement<std::vec::IntoIter<C>, u32>:
        PointCollection<'b, C>,
{
    match style::dash(index) {
        None => PathElement::new(points, color.stroke_width(width)).into_dyn(),
        Some((on, off)) => {
            plotters::element::DashedPathElement::new(points, on, off, color.stroke_width(width))
                .into_dyn()
        }
    }
}

/// Draws a figure's title on `area`, centred: on one line at `size` when it fits, else
/// broken at a word into two lines at the largest size that fits both, so no title is cut.
pub fn draw_title<DB: DrawingBackend>(area: &Area<DB>, text: &str, size: u32) -> Result<()> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let (width, height) = area.dim_in_pixel();
    let (lines, size) = title_lines(text, size, width.saturating_sub(24), height);
    let line_height = (f64::from(size) * 1.25) as i32;
    // A second line starts the first a little lower: placed by the font's box alone, the
    // first line's tallest glyphs touched the image's top edge.
    let n = lines.len() as i32;
    let top = (height as i32 - line_height * n) / 2 + 2 + 3 * (n - 1);
    for (i, line) in lines.iter().enumerate() {
        let style =
            TextStyle::from((FONT, size).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        area.draw(&Text::new(
            line.clone(),
            (width as i32 / 2, top + i as i32 * line_height),
            style,
        ))
        .drawn()?;
    }
    Ok(())
}

/// The lines and font size of a title in `room` by `height` pixels: one line at `size` when
/// it fits, else two, broken at the space nearest the middle (a space after a comma or before
/// a parenthesis counts as nearer), at the largest size from `size` down to 11 that fits.
fn title_lines(text: &str, size: u32, room: u32, height: u32) -> (Vec<String>, u32) {
    if text_width(text, size) <= room {
        return (vec![text.to_string()], size);
    }
    let mid = text.len() as i64 / 2;
    let cut = text
        .char_indices()
        .filter(|(_, c)| *c == ' ')
        .map(|(i, _)| i)
        .min_by_key(|&i| {
            let distance = (i as i64 - mid).abs();
            let good = text[..i].ends_with(',') || text[i + 1..].starts_with('(');
            if good { distance / 2 } else { distance }
        });
    let lines = match cut {
        Some(cut) => vec![text[..cut].to_string(), text[cut + 1..].to_string()],
        None => vec![text.to_string()],
    };
    let mut s = size;
    while s > 11 {
        let fits = lines.iter().all(|l| text_width(l, s) <= room);
        if fits && f64::from(s) * 1.25 * lines.len() as f64 <= f64::from(height) {
            break;
        }
        s -= 1;
    }
    (lines, s)
}

/// Says in words, in the middle of `area`, why a panel has nothing to draw ("0 for every
/// variant"), so an empty panel never passes for a broken one.
pub fn nothing_to_show<DB: DrawingBackend>(area: &Area<DB>, words: &str, size: u32) -> Result<()> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let (width, height) = area.dim_in_pixel();
    let style = TextStyle::from((FONT, size).into_font())
        .color(&RGBColor(90, 90, 90))
        .pos(Pos::new(HPos::Center, VPos::Center));
    area.draw(&Text::new(
        words.to_string(),
        (width as i32 / 2, height as i32 / 2),
        style,
    ))
    .drawn()
}
