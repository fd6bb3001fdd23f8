//! PNG figures at twice the resolution of their layout: a drawing backend that hands every
//! shape and text to the bitmap backend with its coordinates, line widths and font sizes
//! doubled. A figure is laid out (and its text measured) in the same pixels for PNG and SVG,
//! so a PNG is its SVG's layout drawn sharp at twice the size.

use plotters::prelude::*;
use plotters::style::{FontDesc, TextStyle};
use plotters_backend::{BackendColor, BackendCoord as P, BackendStyle as Style};
use plotters_backend::{BackendTextStyle, DrawingErrorKind};

/// How many image pixels a layout pixel takes across, and down, in a PNG.
pub const SCALE: u32 = 2;

/// Draws on the backend it holds, [`SCALE`] times as large, what is laid out at its size
/// divided by [`SCALE`].
pub struct Scaled<B>(pub B);

/// A line style [`SCALE`] times as wide.
struct Wide<'s, S>(&'s S);

impl<S: Style> Style for Wide<'_, S> {
    fn color(&self) -> BackendColor {
        self.0.color()
    }

    fn stroke_width(&self) -> u32 {
        self.0.stroke_width() * SCALE
    }
}

/// A layout point in image pixels.
fn up((x, y): P) -> P {
    (x * SCALE as i32, y * SCALE as i32)
}

/// The rectangle (far corner excluded) that the bitmap backend fills for a line `width`
/// pixels wide from `a` to `b`, when the line runs along an axis and is longer than it is
/// wide: the backend draws such a line as a four-cornered polygon, sweeping it one pixel
/// column (or row) at a time, which covers the columns from the line's start up to, not
/// including, its end, and `width + 1` pixels across it centred on the line. Filling that
/// rectangle at once draws the same pixels; the grid lines and axes of every figure are such
/// lines, and the sweep was a fifth of the cost of drawing a figure.
fn along_an_axis(a: P, b: P, width: u32) -> Option<(P, P)> {
    let r = (width / 2) as i32;
    if width < 2 || !width.is_multiple_of(2) {
        return None;
    }
    if a.1 == b.1 && (a.0 - b.0).abs() > 2 * r {
        return Some(((a.0.min(b.0), a.1 - r), (a.0.max(b.0), a.1 + r + 1)));
    }
    if a.0 == b.0 && (a.1 - b.1).abs() > 2 * r {
        return Some(((a.0 - r, a.1.min(b.1)), (a.0 + r + 1, a.1.max(b.1))));
    }
    None
}

/// The longest run of pixels the bitmap backend blends one pixel at a time.
const BLEND_RUN: usize = 8;

type Drawn<B> = Result<(), DrawingErrorKind<<B as DrawingBackend>::ErrorType>>;

impl<B: DrawingBackend> DrawingBackend for Scaled<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        let (w, h) = self.0.get_size();
        (w / SCALE, h / SCALE)
    }

    fn ensure_prepared(&mut self) -> Drawn<B> {
        self.0.ensure_prepared()
    }

    fn present(&mut self) -> Drawn<B> {
        self.0.present()
    }

    fn draw_pixel(&mut self, p: P, color: BackendColor) -> Drawn<B> {
        // A filled rectangle ends before its far corner (see `draw_rect`).
        let (x, y) = up(p);
        let s = SCALE as i32;
        self.0.draw_rect((x, y), (x + s, y + s), &color, true)
    }

    fn draw_line<S: Style>(&mut self, a: P, b: P, s: &S) -> Drawn<B> {
        let (a, b, wide) = (up(a), up(b), Wide(s));
        let Some((from, to)) = along_an_axis(a, b, wide.stroke_width()) else {
            return self.0.draw_line(a, b, &wide);
        };
        if s.color().alpha >= 1.0 {
            return self.0.draw_rect(from, to, &wide, true);
        }
        // The backend blends a run of more than 8 pixels with a rounding of its own; the
        // sweep blends at most 3 at a time. Runs of 8 keep every pixel as the sweep made it.
        for x in (from.0..to.0).step_by(BLEND_RUN) {
            let end = (x + BLEND_RUN as i32).min(to.0);
            self.0.draw_rect((x, from.1), (end, to.1), &wide, true)?;
        }
        Ok(())
    }

    fn draw_rect<S: Style>(&mut self, a: P, b: P, s: &S, fill: bool) -> Drawn<B> {
        // The bitmap backend fills up to its far corner, not including it: scaled corners
        // cover exactly the layout's pixels, and neighbours meet as they do there.
        self.0.draw_rect(up(a), up(b), &Wide(s), fill)
    }

    fn draw_path<S: Style, I: IntoIterator<Item = P>>(&mut self, path: I, s: &S) -> Drawn<B> {
        self.0.draw_path(path.into_iter().map(up), &Wide(s))
    }

    fn draw_circle<S: Style>(&mut self, c: P, r: u32, s: &S, fill: bool) -> Drawn<B> {
        self.0.draw_circle(up(c), r * SCALE, &Wide(s), fill)
    }

    fn fill_polygon<S: Style, I: IntoIterator<Item = P>>(&mut self, v: I, s: &S) -> Drawn<B> {
        self.0.fill_polygon(v.into_iter().map(up), s)
    }

    fn draw_text<T: BackendTextStyle>(&mut self, text: &str, t: &T, p: P) -> Drawn<B> {
        let font = FontDesc::new(t.family(), t.size() * f64::from(SCALE), t.style());
        let (color, pos) = (t.color(), t.anchor());
        let big = TextStyle {
            font: font.transform(t.transform()),
            color,
            pos,
        };
        self.0.draw_text(text, &big, up(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every mark lands at twice its layout position, and a text twice as tall.
    #[test]
    fn a_layout_is_drawn_at_twice_its_size() {
        super::super::style::register_fonts();
        let (w, h) = (40u32, 30u32);
        let mut buf = vec![255u8; (w * h * 3 * SCALE * SCALE) as usize];
        {
            let backend = BitMapBackend::with_buffer(&mut buf, (w * SCALE, h * SCALE));
            let root = Scaled(backend).into_drawing_area();
            assert_eq!(root.dim_in_pixel(), (w, h));
            root.draw(&Rectangle::new([(10, 10), (19, 14)], BLACK.filled()))
                .unwrap();
            root.draw_pixel((30, 20), &BLACK).unwrap();
            root.present().unwrap();
        }
        // Layout pixels 10 to 18 across and 10 to 13 down: the bitmap's fill stops short of
        // the far corner.
        let dark = |x: u32, y: u32| buf[((y * w * SCALE + x) * 3) as usize] < 128;
        assert!(dark(20, 20) && dark(37, 27), "the rectangle, doubled");
        assert!(!dark(19, 20) && !dark(38, 20) && !dark(20, 28));
        assert!(
            dark(60, 40) && dark(61, 41),
            "one layout pixel is two by two"
        );
        assert!(!dark(62, 40) && !dark(60, 42));
    }

    /// Lines along an axis, filled as rectangles, land on exactly the pixels, with exactly
    /// the colours, that the backend's own polygon sweep gives them: opaque and translucent,
    /// either way along either axis, one and two layout pixels wide, and short ones that
    /// the backend still draws itself.
    #[test]
    fn lines_along_an_axis_are_drawn_as_the_backend_draws_them() {
        use plotters_backend::DrawingBackend as _;
        let (w, h) = (60u32, 40u32);
        let grey = RGBColor(120, 130, 140);
        let styles = [
            ShapeStyle::from(&BLACK).stroke_width(1),
            ShapeStyle::from(&grey.mix(0.3)).stroke_width(1),
            ShapeStyle::from(&grey.mix(0.55)).stroke_width(2),
        ];
        let lines = [
            ((3, 5), (50, 5)),
            ((50, 9), (3, 9)),
            ((7, 2), (7, 35)),
            ((9, 35), (9, 2)),
            ((20, 20), (21, 20)),
            ((40, 30), (40, 31)),
            ((-5, 12), (70, 12)),
        ];
        let mut fast = vec![255u8; (w * h * 3 * SCALE * SCALE) as usize];
        let mut swept = fast.clone();
        {
            let mut scaled = Scaled(BitMapBackend::with_buffer(&mut fast, (w * 2, h * 2)));
            let mut plain = BitMapBackend::with_buffer(&mut swept, (w * 2, h * 2));
            for style in &styles {
                for &(a, b) in &lines {
                    scaled.draw_line(a, b, style).unwrap();
                    plain.draw_line(up(a), up(b), &Wide(style)).unwrap();
                }
            }
        }
        let differing = fast.iter().zip(&swept).filter(|(f, s)| f != s).count();
        assert_eq!(differing, 0, "bytes that differ from the backend's sweep");
        assert!(swept.iter().any(|&b| b != 255), "the lines were drawn");
    }
}
