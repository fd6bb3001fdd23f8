//! A call graph's shape with its load: a panel per variant, every panel in the same layout,
//! the clients and the services as boxes in columns by depth (the clients, the entry, then
//! each service one column right of its deepest caller) and every call as an arrow labelled
//! with the attempts it carried per logical request the clients started (mean over
//! replications, ± its 95 % half-width). An arrow's width grows with that number on one scale
//! for every panel, so the panels compare at a glance. Only a run with calls below the entry
//! gets this figure.

use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::canvas::{self, Area, Drawn};
use super::style::{FONT, variant_color};
use super::{Chart, Run, Table};
use crate::metrics::VariantResult;
use crate::metrics::{CallMetric, ServiceMetric};
use crate::report::shape;
use crate::scenario::Variant;

/// The name the clients' box and the CSV give the clients, which no service can be taken for.
pub const CLIENTS: &str = "(clients)";

/// Height of a box, in pixels.
const BOX_HEIGHT: i32 = 34;
/// Vertical room per box in a column, in pixels.
const ROW: i32 = 74;
/// Room above and below the boxes of a panel (its title, the labels), in pixels.
const PANEL_PAD: i32 = 56;
/// Height of the figure's title, in pixels.
const TITLE_HEIGHT: u32 = 48;
/// Widest arrow, in pixels.
const MAX_WIDTH: f64 = 9.0;
/// The size of the names in the boxes.
const BOX_FONT: u32 = 15;
/// The room between two columns' boxes, for an arrow and its label, in pixels.
const LABEL_ROOM: u32 = 130;

/// The boxes and arrows every panel shares: the union of the services and calls of the
/// variants with calls, by name.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// The boxes: name and column; index 0 is the clients.
    nodes: Vec<(String, usize)>,
    /// Boxes per column, in drawing order (top to bottom).
    columns: Vec<Vec<usize>>,
}

impl Layout {
    /// The layout of the variants with calls among `ran`.
    pub fn of(ran: &[Variant]) -> Layout {
        let mut nodes: Vec<(String, usize)> = vec![(CLIENTS.to_string(), 0)];
        let mut edges: Vec<(usize, usize)> = Vec::new();
        let index = |nodes: &mut Vec<(String, usize)>, name: &str| -> usize {
            match nodes.iter().skip(1).position(|(n, _)| n == name) {
                Some(i) => i + 1,
                None => {
                    nodes.push((name.to_string(), 1));
                    nodes.len() - 1
                }
            }
        };
        for v in ran.iter().filter(|v| shape::has_calls(&v.scenario)) {
            let services = &v.scenario.services;
            let entry = index(&mut nodes, &services[0].name);
            if !edges.contains(&(0, entry)) {
                edges.push((0, entry));
            }
            for s in services {
                let from = index(&mut nodes, &s.name);
                for c in &s.calls {
                    let Some(target) = services.get(c.to) else {
                        continue;
                    };
                    let to = index(&mut nodes, &target.name);
                    if !edges.contains(&(from, to)) {
                        edges.push((from, to));
                    }
                }
            }
        }
        // Columns by longest path from the clients; a graph has no cycles, and the rounds are
        // bounded all the same.
        for _ in 0..nodes.len() {
            let mut changed = false;
            for &(a, b) in &edges {
                let depth = (nodes[a].1 + 1).min(nodes.len());
                if nodes[b].1 < depth && b != 0 {
                    nodes[b].1 = depth;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let depth = nodes.iter().map(|(_, d)| *d).max().unwrap_or(0);
        let mut columns: Vec<Vec<usize>> = vec![Vec::new(); depth + 1];
        for (i, (_, d)) in nodes.iter().enumerate() {
            columns[*d].push(i);
        }
        // Each column in the order of its boxes' callers (the mean place of their callers in
        // the column before), so that arrows cross as little as a single pass manages.
        for c in 1..columns.len() {
            let (before, rest) = columns.split_at_mut(c);
            let place = |n: usize| {
                let callers: Vec<f64> = edges
                    .iter()
                    .filter(|(_, to)| *to == n)
                    .filter_map(|(from, _)| {
                        before
                            .iter()
                            .find_map(|col| col.iter().position(|x| x == from))
                            .map(|p| p as f64)
                    })
                    .collect();
                if callers.is_empty() {
                    f64::MAX
                } else {
                    callers.iter().sum::<f64>() / callers.len() as f64
                }
            };
            rest[0].sort_by(|a, b| place(*a).total_cmp(&place(*b)));
        }
        Layout { nodes, columns }
    }

    /// Most boxes in one column.
    fn tallest(&self) -> usize {
        self.columns.iter().map(Vec::len).max().unwrap_or(1).max(1)
    }

    /// Half the width of box `n`: its name and a margin.
    fn half_width(&self, n: usize) -> i32 {
        let label = if n == 0 { "clients" } else { &self.nodes[n].0 };
        (canvas::text_width(label, BOX_FONT) as i32 / 2 + 14).max(44)
    }

    /// The figure's width: at least [`super::SIZE`]'s, and wide enough that every column
    /// holds its widest box with room for a label between columns.
    fn width(&self) -> u32 {
        let widest = (0..self.nodes.len())
            .map(|n| 2 * self.half_width(n))
            .max()
            .unwrap_or(0);
        let columns = self.columns.len().max(1) as u32;
        super::SIZE.0.max(columns * (widest as u32 + LABEL_ROOM))
    }

    /// The centre of box `n` in a panel `width` by `height` pixels.
    fn centre(&self, n: usize, width: i32, height: i32) -> (i32, i32) {
        let column = self.nodes[n].1;
        let cols = self.columns.len().max(1) as i32;
        let x = width * (2 * column as i32 + 1) / (2 * cols);
        let members = &self.columns[column];
        let k = members.iter().position(|m| *m == n).unwrap_or(0) as i32;
        let rows = members.len() as i32;
        let y = PANEL_PAD / 2 + 8 + (height - PANEL_PAD) * (2 * k + 1) / (2 * rows.max(1));
        (x, y)
    }
}

/// The height of one panel of `layout`.
fn panel_height(layout: &Layout) -> u32 {
    (layout.tallest() as i32 * ROW + PANEL_PAD).max(150) as u32
}

/// The call-graph figure.
pub struct CallGraph;

/// The figure's table: the layout every panel shares, and per call-graph variant its
/// position in the file, its name and its arrows.
pub struct Graph {
    layout: Layout,
    shown: Vec<(usize, String, Vec<Arrow>)>,
}

impl Table for Graph {
    /// `variant, from, to, fraction, attempts_per_request, attempts_per_request_ci95`, a row
    /// per arrow drawn (`from` is `(clients)` for the clients' requests to the entry).
    fn write(&self, w: &mut csv::Writer<Vec<u8>>) -> csv::Result<()> {
        w.write_record([
            "variant",
            "from",
            "to",
            "fraction",
            "attempts_per_request",
            "attempts_per_request_ci95",
        ])?;
        let node = |n: usize| self.layout.nodes[n].0.as_str();
        for (_, name, arrows) in &self.shown {
            for a in arrows {
                w.write_record([
                    name,
                    node(a.from),
                    node(a.to),
                    &a.fraction.to_string(),
                    &a.per_request.0.to_string(),
                    &a.per_request.1.to_string(),
                ])?;
            }
        }
        Ok(())
    }
}

impl Chart for CallGraph {
    type Table = Graph;

    fn stem(&self) -> &'static str {
        "call-graph"
    }

    fn applies(&self, run: &Run) -> bool {
        super::service_load::applies(run)
    }

    fn caption(&self, _run: &Run) -> String {
        "The call graph, a panel per variant in one layout: the clients and the services as boxes, each call as an arrow labelled with the attempts it carried per logical request the clients started (mean over replications ± its 95 % half-width), its width on one scale for every panel. The arrow into the entry counts the clients' own attempts; a number that grows along the arrows is retries multiplying down the graph. An arrow counts attempts sent: those a full service rejected are in the per-service table, and those a bulkhead refused never left and are in the per-call table.".to_string()
    }

    /// Drawn from the graph's layout.
    fn size(&self, run: &Run) -> (u32, u32) {
        let ran = run.ran();
        let layout = Layout::of(ran);
        let panels = ran
            .iter()
            .filter(|v| shape::has_calls(&v.scenario))
            .count()
            .max(1) as u32;
        (
            layout.width(),
            TITLE_HEIGHT + panels * panel_height(&layout),
        )
    }

    fn table(&self, run: &Run) -> Result<Graph> {
        let ran = run.ran();
        let layout = Layout::of(ran);
        let shown = run.point().variants.iter().zip(ran).enumerate();
        let shown = shown
            .filter(|(_, (_, r))| shape::has_calls(&r.scenario))
            .map(|(j, (v, r))| (j, v.name.clone(), arrows(&layout, v, r)))
            .collect();
        Ok(Graph { layout, shown })
    }

    fn draw<DB: DrawingBackend>(&self, run: &Run, table: &Graph, root: &Area<DB>) -> Result<()> {
        let replications = run.experiment.replications;
        let with_ci = replications > 1;
        let title = format!(
            "{}: attempts per logical request on each call{} ({}; arrow width on one scale)",
            run.name(),
            run.at(),
            if with_ci {
                format!("mean of {replications} replications ± 95 % half-width")
            } else {
                "1 replication".to_string()
            }
        );
        let body = canvas::titled(root, &title, TITLE_HEIGHT, 17)?;
        let top = table
            .shown
            .iter()
            .flat_map(|(_, _, a)| a.iter().map(|a| a.per_request.0))
            .fold(0.0, f64::max);
        let panels = body.split_evenly((table.shown.len().max(1), 1));
        for ((j, _, arrows), area) in table.shown.iter().zip(&panels) {
            let name = super::display_name(&run.point().variants[*j]);
            let panel = Panel {
                layout: &table.layout,
                color: variant_color(*j),
                top,
                with_ci,
            };
            panel.draw(area, &name, arrows)?;
        }
        Ok(())
    }
}

/// One arrow of a variant: its end boxes and its attempts per logical request (mean and
/// half-width).
struct Arrow {
    from: usize,
    to: usize,
    fraction: f64,
    per_request: (f64, f64),
}

/// A variant's arrows: the clients' to its entry, then each call, in the order of
/// `metrics.calls`. Calls whose numbers are missing are left out.
fn arrows(layout: &Layout, v: &VariantResult, ran: &Variant) -> Vec<Arrow> {
    let node = |name: &str| {
        layout
            .nodes
            .iter()
            .skip(1)
            .position(|(n, _)| n == name)
            .map(|i| i + 1)
    };
    let services = &ran.scenario.services;
    let mut out = Vec::new();
    let k = ServiceMetric::AMPLIFICATION;
    if let (Some(entry), Some(m), Some(h)) = (
        node(&services[0].name),
        v.metrics.services.first(),
        v.ci95.services.first(),
    ) {
        out.push(Arrow {
            from: 0,
            to: entry,
            fraction: 1.0,
            per_request: (k.value(m), k.value(h)),
        });
    }
    let k = CallMetric::ATTEMPTS_PER_REQUEST;
    let calls = services
        .iter()
        .flat_map(|s| s.calls.iter().map(move |c| (s, c)));
    for (((s, c), m), h) in calls.zip(&v.metrics.calls).zip(&v.ci95.calls) {
        let (Some(from), Some(to)) = (
            node(&s.name),
            services.get(c.to).and_then(|t| node(&t.name)),
        ) else {
            continue;
        };
        out.push(Arrow {
            from,
            to,
            fraction: c.fraction,
            per_request: (k.value(m), k.value(h)),
        });
    }
    out
}

/// A rectangle in pixels: top-left and bottom-right corners.
type Rect = [(i32, i32); 2];

/// An arrow's label to place: the arrow's start and end, and the text.
type Label = ((i32, i32), (i32, i32), String);

/// Half the height of an arrow's label, in pixels.
const LABEL_HALF_HEIGHT: i32 = 10;

/// Half the width of an arrow's label, in pixels.
fn label_half_width(text: &str) -> i32 {
    canvas::text_width(text, 14) as i32 / 2 + 5
}

/// Where each arrow's label goes: on its arrow, at the middle if it is free, else at the
/// nearest place along the arrow (from 25 % to 75 % of its length) where it overlaps no
/// label placed before it and no box; at the middle when no place is free.
fn place_labels(arrows: Vec<Label>, boxes: &[Rect]) -> Vec<((i32, i32), String)> {
    const TRIES: [f64; 11] = [
        0.5, 0.42, 0.58, 0.34, 0.66, 0.26, 0.74, 0.46, 0.54, 0.3, 0.7,
    ];
    let overlaps = |a: &Rect, b: &Rect| {
        a[0].0 < b[1].0 + 3 && b[0].0 < a[1].0 + 3 && a[0].1 < b[1].1 + 2 && b[0].1 < a[1].1 + 2
    };
    let mut placed: Vec<Rect> = Vec::new();
    let mut out = Vec::new();
    for ((x0, y0), (x1, y1), text) in arrows {
        let w = label_half_width(&text);
        let at = |t: f64| {
            let x = x0 + ((x1 - x0) as f64 * t).round() as i32;
            let y = y0 + ((y1 - y0) as f64 * t).round() as i32;
            (
                (x, y),
                [
                    (x - w, y - LABEL_HALF_HEIGHT),
                    (x + w, y + LABEL_HALF_HEIGHT),
                ],
            )
        };
        let free = TRIES
            .iter()
            .map(|t| at(*t))
            .find(|(_, r)| !placed.iter().chain(boxes).any(|other| overlaps(r, other)));
        let (centre, rect) = free.unwrap_or_else(|| at(0.5));
        placed.push(rect);
        out.push((centre, text));
    }
    out
}

/// How one variant's panel is drawn: the shared layout, its colour, the per-request count
/// of the widest arrow and whether labels carry a half-width.
struct Panel<'a> {
    layout: &'a Layout,
    color: RGBColor,
    top: f64,
    with_ci: bool,
}

impl Panel<'_> {
    /// The panel: its title, its arrows under the boxes, the labels on top.
    fn draw<DB: DrawingBackend>(
        &self,
        area: &Area<DB>,
        name: &str,
        arrows: &[Arrow],
    ) -> Result<()> {
        let (width, height) = area.dim_in_pixel();
        let size = (width as i32, height as i32);
        // A thin rule between panels, and the variant's name in its colour.
        let rule = vec![(8, 0), (size.0 - 8, 0)];
        area.draw(&PathElement::new(rule, BLACK.mix(0.15).stroke_width(1)))
            .drawn()?;
        let style = (FONT, 16).into_font().color(&self.color);
        area.draw(&Text::new(name.to_string(), (12, 8), style))
            .drawn()?;
        let mut present = vec![0];
        present.extend(arrows.iter().map(|a| a.to));
        present.sort_unstable();
        present.dedup();
        // Arrows first, under the boxes.
        let mut labels = Vec::new();
        for a in arrows {
            labels.push(self.arrow(area, a, size)?);
        }
        let boxes: Vec<Rect> = present.iter().map(|&n| self.node_box(n, size)).collect();
        let labels = place_labels(labels, &boxes);
        for &n in &present {
            self.node(area, n, size)?;
        }
        // Labels last, on a white ground, so no arrow or box hides a number.
        for ((x, y), text) in labels {
            let w = label_half_width(&text);
            let (h, centre) = (LABEL_HALF_HEIGHT, Pos::new(HPos::Center, VPos::Center));
            let ground = [(x - w, y - h), (x + w, y + h)];
            area.draw(&Rectangle::new(ground, WHITE.filled())).drawn()?;
            let style = TextStyle::from((FONT, 14).into_font()).pos(centre);
            area.draw(&Text::new(text, (x, y + 1), style)).drawn()?;
        }
        Ok(())
    }

    /// Draws arrow `a` from the right edge of the caller to the left edge of the callee, with
    /// a head, its width on the figure's scale; returns its label to place.
    fn arrow<DB: DrawingBackend>(
        &self,
        area: &Area<DB>,
        a: &Arrow,
        (width, height): (i32, i32),
    ) -> Result<Label> {
        let layout = self.layout;
        let (x0, y0) = layout.centre(a.from, width, height);
        let (x1, y1) = layout.centre(a.to, width, height);
        let (x0, x1) = (x0 + layout.half_width(a.from), x1 - layout.half_width(a.to));
        let share = if self.top > 0.0 {
            a.per_request.0 / self.top
        } else {
            0.0
        };
        let stroke = (1.0 + (MAX_WIDTH - 1.0) * share.clamp(0.0, 1.0)).round() as u32;
        let head = 8 + stroke as i32;
        let (dx, dy) = ((x1 - x0) as f64, (y1 - y0) as f64);
        let length = (dx * dx + dy * dy).sqrt().max(1.0);
        let (ux, uy) = (dx / length, dy / length);
        let base = (
            x1 - (ux * head as f64) as i32,
            y1 - (uy * head as f64) as i32,
        );
        let color = self.color.mix(0.85);
        area.draw(&PathElement::new(
            vec![(x0, y0), base],
            color.stroke_width(stroke),
        ))
        .drawn()?;
        let side = (head as f64 * 0.55).max(stroke as f64);
        let wing = |s: f64| {
            (
                base.0 + (-uy * side * s) as i32,
                base.1 + (ux * side * s) as i32,
            )
        };
        let tip = vec![(x1, y1), wing(1.0), wing(-1.0)];
        area.draw(&Polygon::new(tip, color.filled())).drawn()?;
        let number = |x: f64| format!("{x:.2}");
        let text = if self.with_ci {
            format!("{} ± {}", number(a.per_request.0), number(a.per_request.1))
        } else {
            number(a.per_request.0)
        };
        Ok(((x0, y0), (x1, y1), text))
    }

    /// The corners of box `n`.
    fn node_box(&self, n: usize, (width, height): (i32, i32)) -> Rect {
        let (x, y) = self.layout.centre(n, width, height);
        let w = self.layout.half_width(n);
        [(x - w, y - BOX_HEIGHT / 2), (x + w, y + BOX_HEIGHT / 2)]
    }

    /// Draws box `n` with its name; the clients' box is a little darker.
    fn node<DB: DrawingBackend>(&self, area: &Area<DB>, n: usize, size: (i32, i32)) -> Result<()> {
        let corners = self.node_box(n, size);
        let fill = if n == 0 {
            RGBColor(235, 235, 235)
        } else {
            RGBColor(250, 250, 250)
        };
        area.draw(&Rectangle::new(corners, fill.filled())).drawn()?;
        let border = RGBColor(90, 90, 90).stroke_width(1);
        area.draw(&Rectangle::new(corners, border)).drawn()?;
        let label = if n == 0 {
            "clients"
        } else {
            &self.layout.nodes[n].0
        };
        // The font's centre sits a little high: one pixel down looks centred.
        let (x, y) = self.layout.centre(n, size.0, size.1);
        let centre = Pos::new(HPos::Center, VPos::Center);
        let style = TextStyle::from((FONT, BOX_FONT).into_font()).pos(centre);
        area.draw(&Text::new(label.to_string(), (x, y + 1), style))
            .drawn()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::{CALLS, SERVICES, graph_run};
    use crate::scenario::LoadOptions;

    #[test]
    fn the_layout_puts_each_service_one_column_right_of_its_deepest_caller() {
        let (experiment, _) = graph_run(&LoadOptions::default());
        let layout = Layout::of(&experiment.points[0].variants);
        let column = |name: &str| layout.nodes.iter().find(|(n, _)| n == name).unwrap().1;
        assert_eq!(
            ["(clients)", "frontend", "backend", "cache", "db"].map(column),
            [0, 1, 2, 2, 3]
        );
        assert_eq!(layout.columns[2].len(), 2);
    }

    #[test]
    fn the_call_graph_figure_draws_every_call_and_its_csv_holds_the_summary_numbers() {
        let (experiment, result) = graph_run(&LoadOptions::default());
        let figures =
            crate::report::charts::figures(&experiment, &result, Default::default(), 1).unwrap();
        let figure = figures.iter().find(|f| f.stem == "call-graph").unwrap();
        let png = image::load_from_memory(&figure.image).unwrap();
        let run = crate::report::charts::Run {
            experiment: &experiment,
            result: &result,
        };
        let (w, h) = CallGraph.size(&run);
        assert_eq!(
            (png.width(), png.height()),
            (2 * w, 2 * h),
            "twice the layout"
        );
        let mut reader = csv::Reader::from_reader(figure.csv.as_slice());
        let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        let variants = &result.points[0].variants;
        assert_eq!(rows.len(), variants.len() * (1 + CALLS.len()));
        for (v, chunk) in variants.iter().zip(rows.chunks(1 + CALLS.len())) {
            assert_eq!(&chunk[0][1], CLIENTS);
            assert_eq!(
                chunk[0][4].parse::<f64>().unwrap(),
                v.metrics.services[0].amplification
            );
            for ((row, call), &(from, to, fraction)) in
                chunk[1..].iter().zip(&v.metrics.calls).zip(&CALLS)
            {
                assert_eq!(
                    (&row[0], &row[1], &row[2]),
                    (v.name.as_str(), SERVICES[from], SERVICES[to])
                );
                assert_eq!(row[3].parse::<f64>().unwrap(), fraction);
                assert_eq!(row[4].parse::<f64>().unwrap(), call.attempts_per_request);
            }
        }
        let svg = crate::report::charts::figures(
            &experiment,
            &result,
            crate::report::ImageFormat::Svg,
            1,
        )
        .unwrap();
        let svg = svg.iter().find(|f| f.stem == "call-graph").unwrap();
        assert_eq!(svg.csv, figure.csv, "one table whatever the format");
    }

    #[test]
    fn labels_move_along_their_arrow_rather_than_cover_each_other() {
        // Two arrows crossing at their middles: the second label slides along its arrow.
        let arrows = vec![
            ((0, 0), (200, 100), "1.00 ± 0.03".to_string()),
            ((0, 100), (200, 0), "0.50 ± 0.01".to_string()),
        ];
        let placed = place_labels(arrows, &[]);
        assert_eq!(placed[0].0, (100, 50));
        let (a, b) = (placed[0].0, placed[1].0);
        assert!((a.1 - b.1).abs() >= 2 * LABEL_HALF_HEIGHT, "{a:?} {b:?}");
        assert!((b.0 + 2 * b.1 - 200).abs() <= 1, "on its own arrow: {b:?}");
    }
}
