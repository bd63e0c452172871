//! The pictures: `--report FILE.svg` (dominant share per role, utilisation per resource and
//! tasks waiting, over simulated time) and `bench --plot FILE.svg` (DeclineOffers run time
//! against cluster size), drawn with plotters' SVG backend.
//!
//! Every picture keeps the same reading rules: each y axis scales to its own data, and a
//! fraction axis zoomed below 100 % says so above the plot; a series has one colour in every
//! panel of a picture and no two series share one (roles and resources included); reference
//! lines are dashed grey, never a series colour; each legend column is headed by what its
//! values are ("final", "avg over time", "peak", "at N agents").
//!
//! This crate is the only one that knows plotters' drawing (the policy lab's plots use its
//! palette and text styles). It knows nothing of the master, modules or files: it turns series
//! into SVG text.
#![deny(missing_docs)]

use std::collections::BTreeMap;
use std::fmt::Display;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Time series collected during a simulation.
#[derive(Debug, Default, Clone)]
pub struct Series {
    /// Sample times (seconds on the virtual clock).
    pub times: Vec<f64>,
    /// Dominant share per role, one value per sample (0 before the role appears).
    pub shares: BTreeMap<String, Vec<f64>>,
    /// Allocated fraction per resource name, one value per sample.
    pub utilisation: BTreeMap<String, Vec<f64>>,
    /// Tasks waiting to start per role (trace-driven frameworks), one value per sample.
    pub waiting: BTreeMap<String, Vec<f64>>,
    /// Events marked on every panel as a dashed vertical line: (time, label), such as a sorter
    /// switch or an inverse offer.
    pub marks: Vec<(f64, String)>,
    /// Maintenance windows, shaded on every panel: agent, start, duration (`None`: open).
    pub windows: BTreeMap<String, (f64, Option<f64>)>,
}

/// At most this many event marks are drawn (the rest are counted in a note).
pub const MAX_MARKS: usize = 12;

impl Series {
    /// Appends one sample.
    pub fn push(
        &mut self,
        time: f64,
        shares: &BTreeMap<String, f64>,
        utilisation: &BTreeMap<String, f64>,
    ) {
        self.push_with_waiting(time, shares, utilisation, &BTreeMap::new());
    }

    /// Appends one sample with the number of tasks waiting per role.
    pub fn push_with_waiting(
        &mut self,
        time: f64,
        shares: &BTreeMap<String, f64>,
        utilisation: &BTreeMap<String, f64>,
        waiting: &BTreeMap<String, f64>,
    ) {
        let n = self.times.len();
        self.times.push(time);
        for (map, values) in [
            (&mut self.shares, shares),
            (&mut self.utilisation, utilisation),
            (&mut self.waiting, waiting),
        ] {
            for k in values.keys() {
                map.entry(k.clone()).or_insert_with(|| vec![0.0; n]);
            }
            for (k, series) in map.iter_mut() {
                series.push(values.get(k).copied().unwrap_or(0.0));
            }
        }
    }

    /// Forgets all but the last `max` samples, and the marks before the first one kept (a
    /// live master's series stays bounded however long it runs).
    pub fn keep_last(&mut self, max: usize) {
        let drop = self.times.len().saturating_sub(max);
        if drop == 0 {
            return;
        }
        self.times.drain(..drop);
        let values = self
            .shares
            .values_mut()
            .chain(self.utilisation.values_mut())
            .chain(self.waiting.values_mut());
        for v in values {
            let extra = v.len().saturating_sub(max);
            v.drain(..extra);
        }
        let first = self.times.first().copied().unwrap_or(f64::INFINITY);
        self.marks.retain(|(t, _)| *t >= first);
    }

    /// Keeps at most `max` samples (evenly spaced, always the last one).
    pub fn thinned(&self, max: usize) -> Series {
        let n = self.times.len();
        if n <= max || max < 2 {
            return self.clone();
        }
        let keep: Vec<usize> = (0..max).map(|i| i * (n - 1) / (max - 1)).collect();
        let pick = |v: &Vec<f64>| keep.iter().map(|&i| v[i]).collect::<Vec<_>>();
        Series {
            times: pick(&self.times),
            shares: self.shares.iter().map(|(k, v)| (k.clone(), pick(v))).collect(),
            utilisation: self.utilisation.iter().map(|(k, v)| (k.clone(), pick(v))).collect(),
            waiting: self.waiting.iter().map(|(k, v)| (k.clone(), pick(v))).collect(),
            marks: self.marks.clone(),
            windows: self.windows.clone(),
        }
    }
}

/// A picture that plotters could not draw.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw the SVG picture '{picture}': {reason}")]
pub struct ReportError {
    picture: String,
    reason: String,
}

fn failed<E: Display>(picture: &str) -> impl Fn(E) -> ReportError + '_ {
    move |e| ReportError { picture: picture.to_owned(), reason: e.to_string() }
}

/// Series colours, handed out in order; grey is kept for reference lines.
pub const PALETTE: [RGBColor; 16] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x39, 0x3b, 0x79),
    RGBColor(0xad, 0x49, 0x4a),
    RGBColor(0x63, 0x79, 0x39),
    RGBColor(0x7b, 0x41, 0x73),
    RGBColor(0xe6, 0x55, 0x0d),
    RGBColor(0x31, 0x82, 0xbd),
    RGBColor(0x84, 0x3c, 0x39),
];
const REFERENCE: RGBColor = RGBColor(0x55, 0x55, 0x55);
/// The colour of titles, labels and axis text.
pub const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
const NOTE: RGBColor = RGBColor(0x66, 0x66, 0x66);
const ZOOM: RGBColor = RGBColor(0xb0, 0x30, 0x00);
const GRID: RGBColor = RGBColor(0xe4, 0xe4, 0xe4);

const WIDTH: u32 = 960;
const HEADER: u32 = 56;
/// Characters of the title per line (18 px bold on the picture's width); longer titles wrap.
const TITLE_CHARS: usize = 84;
const TITLE_LINE: u32 = 22;
const SHADE: RGBColor = RGBColor(0xf2, 0xe6, 0xc8);
const MARK: RGBColor = RGBColor(0x88, 0x88, 0x88);
const PANEL: u32 = 300;
/// Height of a panel's caption and scale note above its plot.
const PANEL_HEAD: u32 = 40;
const LEGEND: u32 = 300;
const FONT: &str = "sans-serif";
/// Legend rows and their spacing.
const LEGEND_TOP: i32 = PANEL_HEAD as i32 + 6;
const ROW: i32 = 17;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Text of `px` pixels (plotters' SVG backend writes the size divided by 1.24).
pub fn text(px: f64, colour: RGBColor, h: HPos, bold: bool) -> TextStyle<'static> {
    let style = if bold { FontStyle::Bold } else { FontStyle::Normal };
    TextStyle {
        font: (FONT, px * 1.24, style).into_font(),
        color: colour.to_backend_color(),
        pos: Pos::new(h, VPos::Top),
    }
}

/// How a panel's values read.
#[derive(Clone, Copy, PartialEq)]
enum Scale {
    /// A fraction of a whole, shown in percent; the axis never goes past 100 %.
    Fraction,
    /// Whole numbers (tasks).
    Count,
    /// Measurements in a unit (`ms`, `µs`).
    Measure(&'static str),
}

impl Scale {
    /// A legend value.
    fn value(self, v: f64) -> String {
        match self {
            Scale::Fraction => percent(v),
            Scale::Count => format!("{v:.0}"),
            Scale::Measure(unit) => format!("{v:.2} {unit}"),
        }
    }
}

/// A share in percent with the digits a small share needs.
fn percent(v: f64) -> String {
    let p = v * 100.0;
    if !p.is_finite() {
        "-".to_owned()
    } else if p == 0.0 {
        "0%".to_owned()
    } else if p >= 9.95 {
        format!("{p:.0}%")
    } else if p >= 0.995 {
        format!("{p:.1}%")
    } else if p >= 0.01 {
        format!("{p:.2}%")
    } else {
        "<0.01%".to_owned()
    }
}

/// The smallest "round" number (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten) at least
/// `v`: tops at which plotters' ticks end, so the top is labelled (1.2 is left out: its ticks
/// stop at 1).
fn nice_ceiling(v: f64) -> f64 {
    if !v.is_finite() || v <= 0.0 {
        return 1.0;
    }
    let mag = 10f64.powf(v.log10().floor());
    [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|c| *c >= v * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
}

/// A tick label: `v` with the decimals an axis reaching `top` needs, trailing zeros dropped.
fn tick(v: f64, top: f64) -> String {
    let decimals = (2.0 - top.log10().floor()).clamp(0.0, 9.0) as usize;
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { &s };
    if s == "-0" { "0".to_owned() } else { s.to_owned() }
}

/// One line of a panel.
struct Line<'a> {
    name: &'a str,
    colour: RGBColor,
    values: &'a [f64],
    /// The legend's values, one per column of the panel.
    legend: Vec<String>,
    /// A reference line (dashed grey) rather than data.
    reference: bool,
    /// The line's own x values, when not the panel's.
    xs: Option<Vec<f64>>,
}

/// One chart: a caption, axes, lines and their legend.
struct Panel<'a> {
    caption: String,
    /// A line under the caption saying how to read the panel.
    note: Option<String>,
    y_desc: String,
    scale: Scale,
    /// Legend heading over the names ("role", "resource", "series").
    key: &'a str,
    /// Legend headings over the values ("final", "avg over time", ...).
    columns: Vec<String>,
    lines: Vec<Line<'a>>,
    /// Marks each data point (sparse measurements).
    markers: bool,
    /// Events (dashed vertical lines, labelled) and windows (shaded), on the time axis.
    events: Option<&'a Series>,
    /// Draws each value as holding until the next sample (a state over time) rather than
    /// joining the points.
    steps: bool,
}

/// `text` in lines of at most `width` characters, broken at spaces (a longer word is a line
/// of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    lines
}

/// Draws the picture: a title block, then the panels one under the other, sharing `xs`.
fn render(
    title: &str,
    subtitle: &str,
    xs: &[f64],
    x_desc: &str,
    panels: &[Panel<'_>],
) -> Result<String, ReportError> {
    let lines = wrap(title, TITLE_CHARS);
    let extra = TITLE_LINE * (lines.len().max(1) as u32 - 1);
    let header = HEADER + extra;
    let height = header + PANEL * panels.len().max(1) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        let fail = failed(title);
        root.fill(&WHITE).map_err(&fail)?;
        let (head, body) = root.split_vertically(header);
        for (i, line) in lines.iter().enumerate() {
            let y = 8 + (TITLE_LINE as i32) * i as i32;
            head.draw(&Text::new(line.clone(), (70, y), text(18.0, INK, HPos::Left, true)))
                .map_err(&fail)?;
        }
        let y = 34 + extra as i32;
        head.draw(&Text::new(subtitle.to_owned(), (70, y), text(12.0, NOTE, HPos::Left, false)))
            .map_err(&fail)?;
        let areas = body.split_evenly((panels.len().max(1), 1));
        for (area, panel) in areas.iter().zip(panels) {
            draw_panel(area, xs, x_desc, panel).map_err(&fail)?;
        }
        root.present().map_err(&fail)?;
    }
    Ok(svg)
}

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn draw_panel(area: &Area<'_>, xs: &[f64], x_desc: &str, p: &Panel<'_>) -> DrawResult {
    let (left, legend) = area.split_horizontally(WIDTH - LEGEND);
    let (head, plot) = left.split_vertically(PANEL_HEAD);
    let finite = |v: &&f64| v.is_finite();
    let x_max = xs.iter().filter(finite).copied().fold(0.0, f64::max);
    let x_max = if x_max > 0.0 { x_max } else { 1.0 };
    let data_max =
        p.lines.iter().flat_map(|l| l.values.iter()).filter(finite).copied().fold(0.0, f64::max);
    let y_top = match p.scale {
        // Zoom only where the whole-cluster axis would squash the lines into its lower half.
        Scale::Fraction => Some(nice_ceiling(data_max * 1.08)).filter(|t| *t <= 0.5).unwrap_or(1.0),
        Scale::Count | Scale::Measure(_) => nice_ceiling(data_max * 1.08),
    };
    head.draw(&Text::new(p.caption.clone(), (70, 4), text(16.0, INK, HPos::Left, true)))?;
    let zoom = (p.scale == Scale::Fraction && y_top < 1.0).then(|| {
        format!(
            "y axis zoomed to the data: 0 to {}% (100% is the whole cluster)",
            tick(y_top * 100.0, y_top * 100.0)
        )
    });
    // Windows beyond the time axis, and marks past the limit, are said rather than drawn.
    let mut events_note = Vec::new();
    if let Some(events) = p.events {
        for (agent, (start, duration)) in &events.windows {
            if *start >= x_max {
                let until = duration
                    .map_or("on".to_owned(), |d| format!("to {} s", tick(start + d, start + d)));
                events_note.push(format!(
                    "maintenance window on {agent} from {} s {until}, after this run",
                    tick(*start, *start)
                ));
            }
        }
        if events.marks.len() > MAX_MARKS {
            events_note.push(format!("{} more events not marked", events.marks.len() - MAX_MARKS));
        }
    }
    let note: Vec<&str> =
        zoom.iter().chain(&p.note).chain(&events_note).map(String::as_str).collect();
    if !note.is_empty() {
        // A zoomed axis is the one thing a reader must not miss.
        let colour = if zoom.is_some() { ZOOM } else { NOTE };
        let style = text(12.0, colour, HPos::Left, false);
        head.draw(&Text::new(note.join("; "), (70, 23), style))?;
    }

    let mut chart = ChartBuilder::on(&plot)
        .margin_right(24)
        .margin_top(4)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_max, 0.0..y_top)?;
    let y_fmt = |v: &f64| match p.scale {
        Scale::Fraction => format!("{}%", tick(v * 100.0, y_top * 100.0)),
        _ => tick(*v, y_top),
    };
    let x_fmt = |v: &f64| tick(*v, x_max);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .max_light_lines(0)
        .bold_line_style(GRID)
        .axis_style(NOTE)
        .x_labels(8)
        .y_labels(6)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(text(11.0, INK, HPos::Center, false))
        .axis_desc_style(text(12.0, INK, HPos::Center, false))
        .x_desc(x_desc)
        .y_desc(p.y_desc.as_str())
        .draw()?;

    if let Some(events) = p.events {
        for (start, duration) in events.windows.values() {
            let end = duration.map_or(x_max, |d| (start + d).min(x_max));
            if *start < x_max && end > *start {
                let band = Rectangle::new([(*start, 0.0), (end, y_top)], SHADE.filled());
                chart.draw_series(std::iter::once(band))?;
            }
        }
        for (t, label) in events.marks.iter().take(MAX_MARKS) {
            let line = vec![(*t, 0.0), (*t, y_top)];
            chart.draw_series(DashedLineSeries::new(line, 4, 4, MARK.stroke_width(1)))?;
            // Labels stay inside the plot: right of the line, or left of it near the end.
            let h = if *t > x_max * 0.55 { HPos::Right } else { HPos::Left };
            let style = text(10.0, NOTE, h, false);
            chart.draw_series(std::iter::once(Text::new(
                label.clone(),
                (*t, y_top * 0.97),
                style,
            )))?;
        }
    }
    for (i, line) in p.lines.iter().enumerate() {
        // A line exactly on an earlier one is drawn dashed over it, so both colours show.
        let hidden = p.lines[..i].iter().any(|l| l.values == line.values && !l.reference);
        let points: Vec<(f64, f64)> = line
            .xs
            .as_deref()
            .unwrap_or(xs)
            .iter()
            .zip(line.values)
            .filter(|(x, v)| x.is_finite() && v.is_finite())
            .map(|(x, v)| (*x, *v))
            .collect();
        let points = if p.steps { steps(&points) } else { points };
        if line.reference {
            chart.draw_series(DashedLineSeries::new(points, 8, 5, REFERENCE.stroke_width(2)))?;
        } else if hidden {
            chart.draw_series(DashedLineSeries::new(points, 6, 6, line.colour.stroke_width(2)))?;
        } else {
            chart.draw_series(LineSeries::new(
                points.iter().copied(),
                line.colour.stroke_width(2),
            ))?;
            if p.markers {
                chart.draw_series(
                    points.iter().map(|&(x, v)| Circle::new((x, v), 3, line.colour.filled())),
                )?;
            }
        }
    }
    draw_legend(&legend, p)
}

/// The corners of a step function through `points`: each value holds until the next point.
fn steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &(x, v)) in points.iter().enumerate() {
        if i > 0 {
            out.push((x, points[i - 1].1));
        }
        out.push((x, v));
    }
    out
}

/// The legend: a heading row, then one row per line (sample stroke, name, values).
fn draw_legend(area: &Area<'_>, p: &Panel<'_>) -> DrawResult {
    let right = LEGEND as i32 - 12;
    let col_w = 104;
    let first_col = right - col_w * (p.columns.len() as i32 - 1).max(0);
    let name_chars = ((first_col - 34 - 58) / 7).max(6) as usize;
    let heading = text(11.0, NOTE, HPos::Left, true);
    area.draw(&Text::new(p.key.to_owned(), (34, LEGEND_TOP), heading.clone()))?;
    for (i, c) in p.columns.iter().enumerate() {
        let x = first_col + col_w * i as i32;
        area.draw(&Text::new(c.clone(), (x, LEGEND_TOP), text(11.0, NOTE, HPos::Right, true)))?;
    }
    let rows = ((PANEL as i32 - LEGEND_TOP - ROW - 8) / ROW).max(1) as usize;
    let shown = if p.lines.len() > rows { rows - 1 } else { p.lines.len() };
    for (i, line) in p.lines.iter().take(shown).enumerate() {
        let y = LEGEND_TOP + ROW * (i as i32 + 1);
        let mid = y + 7;
        if line.reference {
            for x in [4, 18] {
                area.draw(&PathElement::new(
                    vec![(x, mid), (x + 9, mid)],
                    REFERENCE.stroke_width(2),
                ))?;
            }
        } else {
            area.draw(&PathElement::new(vec![(4, mid), (28, mid)], line.colour.stroke_width(3)))?;
        }
        let name = if line.name.chars().count() > name_chars {
            format!("{}…", line.name.chars().take(name_chars - 1).collect::<String>())
        } else {
            line.name.to_owned()
        };
        area.draw(&Text::new(name, (34, y), text(12.0, INK, HPos::Left, false)))?;
        for (j, v) in line.legend.iter().enumerate() {
            let x = first_col + col_w * j as i32;
            area.draw(&Text::new(v.clone(), (x, y), text(12.0, INK, HPos::Right, false)))?;
        }
    }
    if shown < p.lines.len() {
        let y = LEGEND_TOP + ROW * (shown as i32 + 1);
        let more = format!("… and {} more (not listed)", p.lines.len() - shown);
        area.draw(&Text::new(more, (34, y), text(12.0, NOTE, HPos::Left, false)))?;
    }
    Ok(())
}

/// The mean of a step function holding `values[i]` from `times[i]` to `times[i + 1]`; the last
/// value when the samples span no time.
fn time_average(times: &[f64], values: &[f64]) -> f64 {
    let span = match (times.first(), times.last()) {
        (Some(a), Some(b)) if b - a > 0.0 => b - a,
        _ => return values.last().copied().unwrap_or(0.0),
    };
    let sum: f64 = times.windows(2).zip(values).map(|(t, v)| v * (t[1] - t[0])).sum();
    sum / span
}

/// Renders the report: the dominant share per role, the utilisation per resource and, when
/// trace-driven frameworks had tasks waiting, the tasks waiting per role. Roles keep their
/// colour from panel to panel; resources take colours no role has.
pub fn render_svg(title: &str, subtitle: &str, series: &Series) -> Result<String, ReportError> {
    let mut roles: Vec<&String> = series.shares.keys().chain(series.waiting.keys()).collect();
    roles.sort();
    roles.dedup();
    let role_colour = |name: &str| {
        let i = roles.iter().position(|r| r.as_str() == name).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    };
    let resource_colour = |i: usize| PALETTE[(roles.len() + i) % PALETTE.len()];
    let last = |v: &[f64]| v.last().copied().unwrap_or(0.0);
    let peak = |v: &[f64]| v.iter().copied().filter(|x| x.is_finite()).fold(0.0, f64::max);
    let s = series.thinned(1500);
    let fraction_columns = vec!["final".to_owned(), "avg over time".to_owned()];

    let shares = Panel {
        note: None,
        caption: "Dominant share per role (offered + allocated, of the cluster total)".into(),
        y_desc: "dominant share".into(),
        scale: Scale::Fraction,
        key: "role",
        columns: fraction_columns.clone(),
        lines: s
            .shares
            .iter()
            .map(|(name, values)| Line {
                name,
                colour: role_colour(name),
                values,
                legend: vec![
                    percent(last(&series.shares[name])),
                    percent(time_average(&series.times, &series.shares[name])),
                ],
                reference: false,
                xs: None,
            })
            .collect(),
        markers: false,
        events: Some(&s),
        steps: true,
    };
    let utilisation = Panel {
        note: None,
        caption: "Cluster utilisation per resource (allocated / total)".into(),
        y_desc: "allocated".into(),
        scale: Scale::Fraction,
        key: "resource",
        columns: fraction_columns,
        lines: s
            .utilisation
            .iter()
            .enumerate()
            .map(|(i, (name, values))| Line {
                name,
                colour: resource_colour(i),
                values,
                legend: vec![
                    percent(last(&series.utilisation[name])),
                    percent(time_average(&series.times, &series.utilisation[name])),
                ],
                reference: false,
                xs: None,
            })
            .collect(),
        markers: false,
        events: Some(&s),
        steps: true,
    };
    let mut panels = vec![shares, utilisation];
    if s.waiting.values().flatten().any(|v| *v > 0.0) {
        panels.push(Panel {
            note: None,
            caption: "Tasks waiting to start, per role".into(),
            y_desc: "tasks waiting".into(),
            scale: Scale::Count,
            key: "role",
            columns: vec!["final".to_owned(), "peak".to_owned()],
            lines: s
                .waiting
                .iter()
                .map(|(name, values)| Line {
                    name,
                    colour: role_colour(name),
                    values,
                    legend: vec![
                        Scale::Count.value(last(&series.waiting[name])),
                        Scale::Count.value(peak(&series.waiting[name])),
                    ],
                    reference: false,
                    xs: None,
                })
                .collect(),
            markers: false,
            events: Some(&s),
            steps: true,
        });
    }
    render(title, subtitle, &s.times, "time (s, simulated)", &panels)
}

/// One line per curve, coloured by its place among the curves (so a curve keeps its colour in
/// every panel drawn from maps with the same keys), with its last value in the legend.
fn series_lines<K: AsRef<str>>(curves: &BTreeMap<K, Vec<f64>>, scale: Scale) -> Vec<Line<'_>> {
    curves
        .iter()
        .enumerate()
        .map(|(i, (name, values))| Line {
            name: name.as_ref(),
            colour: PALETTE[i % PALETTE.len()],
            values,
            legend: vec![values.last().map_or("-".to_owned(), |&x| scale.value(x))],
            reference: false,
            xs: None,
        })
        .collect()
}

/// Renders the DeclineOffers curves: milliseconds per run against agents, one line per
/// subject and framework count (`curves`, a value per entry of `agents`), with a dashed
/// reference through the origin and the last point of the first curve (linear growth); the
/// same figures per agent, where linear growth is flat; and, when `per_considered` has curves
/// (same keys and lengths as `curves`, those measured), nanoseconds per (agent × framework
/// considered), flat where the cost is linear in the frameworks the walks consider.
pub fn decline_offers_curve_svg(
    agents: &[u32],
    curves: &BTreeMap<String, Vec<f64>>,
    per_considered: &BTreeMap<String, Vec<f64>>,
    runs: &str,
) -> Result<String, ReportError> {
    let xs: Vec<f64> = agents.iter().map(|&a| f64::from(a)).collect();
    let per_agent: BTreeMap<&String, Vec<f64>> = curves
        .iter()
        .map(|(k, v)| (k, v.iter().zip(&xs).map(|(ms, a)| ms * 1000.0 / a).collect()))
        .collect();
    // Linear growth: through the origin and the first curve's last point.
    let reference = match (curves.iter().next(), xs.last()) {
        (Some((name, first)), Some(&x_last)) if x_last > 0.0 => first
            .last()
            .filter(|y| y.is_finite())
            .map(|&y_last| (name.as_str(), x_last, [0.0, y_last], [y_last * 1000.0 / x_last; 2])),
        _ => None,
    };
    let column = match agents.last() {
        Some(a) => format!("at {a} agents"),
        None => "last".to_owned(),
    };
    let at_last = |v: &[f64], scale: Scale| v.last().map_or("-".to_owned(), |&x| scale.value(x));
    let ms = Scale::Measure("ms");
    let us = Scale::Measure("µs");
    let mut run_lines = series_lines(curves, ms);
    let mut agent_lines = series_lines(&per_agent, us);
    let (mut run_note, mut agent_note) = (None, None);
    if let Some((first, x_last, ms_ref, us_ref)) = &reference {
        run_note = Some(format!(
            "dashed: linear in agents, through the origin and {first} at {x_last} agents"
        ));
        agent_note =
            Some(format!("dashed: linear in agents, at {first}'s cost at {x_last} agents"));
        for (lines, values, scale) in [(&mut run_lines, ms_ref, ms), (&mut agent_lines, us_ref, us)]
        {
            lines.push(Line {
                name: "linear in agents",
                colour: REFERENCE,
                values,
                legend: vec![at_last(values, scale)],
                reference: true,
                xs: Some(vec![0.0, *x_last]),
            });
        }
    }
    let ns = Scale::Measure("ns");
    let pair_lines = series_lines(per_considered, ns);
    let mut panels = vec![
        Panel {
            caption: "Time per allocation run".into(),
            note: run_note,
            y_desc: "ms per allocation run".into(),
            scale: ms,
            key: "subject, frameworks",
            columns: vec![column.clone()],
            lines: run_lines,
            markers: true,
            events: None,
            steps: false,
        },
        Panel {
            caption: "Time per agent per run (flat where the cost is linear in agents)".into(),
            note: agent_note,
            y_desc: "µs per agent per run".into(),
            scale: us,
            key: "subject, frameworks",
            columns: vec![column.clone()],
            lines: agent_lines,
            markers: true,
            events: None,
            steps: false,
        },
    ];
    if !pair_lines.is_empty() {
        panels.push(Panel {
            caption: "Time per (agent × framework considered) per run".into(),
            note: Some(
                "flat where the cost is linear in the frameworks the walks consider (taken \
                 from the role's order and checked, filtered or granted)"
                    .into(),
            ),
            y_desc: "ns per agent × framework considered".into(),
            scale: ns,
            key: "subject, frameworks",
            columns: vec![column],
            lines: pair_lines,
            markers: true,
            events: None,
            steps: false,
        });
    }
    render(
        "DeclineOffers: allocation run time against cluster size",
        &format!(
            "median of {runs} per point (steady state); every offer declined with a long refuse \
             filter"
        ),
        &xs,
        "agents",
        &panels,
    )
}

/// The text of every `<text>` element of an SVG, in order (for tests of the pictures, here and
/// in the lab).
pub fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeping_the_last_samples_keeps_every_series_aligned_and_the_marks_among_them() {
        let mut series = Series::default();
        for t in 0..10 {
            let shares = BTreeMap::from([("a".to_owned(), f64::from(t))]);
            series.push(f64::from(t), &shares, &BTreeMap::new());
            series.marks.push((f64::from(t), format!("mark {t}")));
        }
        series.keep_last(3);
        assert_eq!(series.times, [7.0, 8.0, 9.0]);
        assert_eq!(series.shares["a"], [7.0, 8.0, 9.0]);
        assert_eq!(series.marks.len(), 3);
        series.keep_last(5);
        assert_eq!(series.times.len(), 3, "nothing more to forget");
    }

    use super::svg_texts as texts;

    /// The stroke colour of every `<polyline>` drawn `width` pixels wide, in drawing order.
    fn strokes(svg: &str, width: u32) -> Vec<String> {
        let wide = format!("stroke-width=\"{width}\"");
        svg.split("<polyline")
            .skip(1)
            .map(|p| &p[..p.find("/>").unwrap_or(p.len())])
            .filter(|p| p.contains(&wide))
            .filter_map(|p| p.split("stroke=\"").nth(1)?.split('"').next().map(str::to_owned))
            .collect()
    }

    const REFERENCE_HEX: &str = "#555555";

    /// A series of `n` samples one second apart: each role's share and each resource's
    /// utilisation constant.
    fn constant(n: u32, shares: &[(&str, f64)], util: &[(&str, f64)]) -> Series {
        let map = |kv: &[(&str, f64)]| kv.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
        let mut s = Series::default();
        for i in 0..n {
            s.push(f64::from(i), &map(shares), &map(util));
        }
        s
    }

    #[test]
    fn series_fill_missing_roles_with_zero() {
        let mut s = Series::default();
        s.push(0.0, &BTreeMap::from([("a".to_owned(), 0.5)]), &BTreeMap::new());
        s.push(1.0, &BTreeMap::from([("b".to_owned(), 0.25)]), &BTreeMap::new());
        assert_eq!(s.shares["a"], vec![0.5, 0.0]);
        assert_eq!(s.shares["b"], vec![0.0, 0.25]);
    }

    #[test]
    fn thinning_keeps_the_ends() {
        let mut s = Series::default();
        for i in 0..100 {
            s.push(
                f64::from(i),
                &BTreeMap::new(),
                &BTreeMap::from([("cpus".to_owned(), f64::from(i))]),
            );
        }
        let t = s.thinned(10);
        assert_eq!(t.times.len(), 10);
        assert_eq!(t.times[0], 0.0);
        assert_eq!(*t.times.last().unwrap(), 99.0);
    }

    #[test]
    fn the_report_draws_a_line_and_a_legend_row_per_role_and_resource() {
        let s = constant(10, &[("prod", 0.4), ("dev<x>", 0.1)], &[("cpus", 0.5)]);
        let svg = render_svg("t", "sub", &s).unwrap();
        let t = texts(&svg);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(t.iter().any(|x| x.starts_with("Dominant share per role")));
        assert!(t.iter().any(|x| x.starts_with("Cluster utilisation per resource")));
        assert_eq!(strokes(&svg, 2).len(), 3, "one line per role and resource");
        assert_eq!(strokes(&svg, 3).len(), 3, "one legend sample per role and resource");
        assert!(t.contains(&"dev&lt;x&gt;".to_owned()), "names are escaped: {t:?}");
    }

    #[test]
    fn a_share_peaking_at_a_fifth_of_a_percent_gets_an_axis_scaled_to_it() {
        let s = constant(10, &[("ls", 0.002)], &[("gpus", 0.002)]);
        let t = texts(&render_svg("t", "sub", &s).unwrap());
        assert!(t.contains(&"0.25%".to_owned()), "the axis tops out at 0.25 %: {t:?}");
        assert!(!t.contains(&"100%".to_owned()) && !t.contains(&"50%".to_owned()));
        let note = "y axis zoomed to the data: 0 to 0.25% (100% is the whole cluster)";
        assert_eq!(t.iter().filter(|x| *x == note).count(), 2, "both panels say they are zoomed");
    }

    #[test]
    fn a_share_above_half_the_cluster_keeps_the_whole_axis_without_a_zoom_note() {
        let s = constant(10, &[("ml", 0.6)], &[("gpus", 0.6)]);
        let t = texts(&render_svg("t", "sub", &s).unwrap());
        assert!(t.contains(&"100%".to_owned()));
        assert!(!t.iter().any(|x| x.contains("zoomed")));
    }

    #[test]
    fn states_over_time_are_drawn_as_steps_holding_until_the_next_sample() {
        let mut s = Series::default();
        for (t, v) in [(0.0, 0.1), (1.0, 0.3), (4.0, 0.2)] {
            s.push(t, &BTreeMap::from([("r".to_owned(), v)]), &BTreeMap::new());
        }
        let svg = render_svg("t", "sub", &s).unwrap();
        let line = svg.split("<polyline").find(|p| p.contains("stroke-width=\"2\"")).unwrap();
        let points: Vec<&str> = line
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        assert_eq!(points.len(), 5, "three samples, two corners: {points:?}");
        let y = |p: &str| p.split(',').nth(1).unwrap().to_owned();
        let x = |p: &str| p.split(',').next().unwrap().to_owned();
        assert_eq!(
            (x(points[1]), y(points[1])),
            (x(points[2]), y(points[0])),
            "0.1 holds until t=1"
        );
    }

    #[test]
    fn one_colour_per_series_roles_keep_theirs_across_panels_and_resources_take_others() {
        let role = |a, b| BTreeMap::from([("a".to_owned(), a), ("b".to_owned(), b)]);
        let util = BTreeMap::from([("cpus".to_owned(), 0.5), ("mem".to_owned(), 0.25)]);
        let mut s = Series::default();
        for i in 0..5 {
            s.push_with_waiting(f64::from(i), &role(0.5, 0.25), &util, &role(3.0, 1.0));
        }
        let svg = render_svg("t", "sub", &s).unwrap();
        // Drawing order: shares a, b; utilisation cpus, mem; waiting a, b.
        let c = strokes(&svg, 2);
        assert_eq!(c.len(), 6, "{c:?}");
        assert_eq!((&c[4], &c[5]), (&c[0], &c[1]), "a role's colour is the same in every panel");
        let distinct: std::collections::BTreeSet<&String> = c[..4].iter().collect();
        assert_eq!(distinct.len(), 4, "no role shares a colour with a resource: {c:?}");
        assert!(!c.contains(&REFERENCE_HEX.to_owned()), "grey is kept for references");
    }

    #[test]
    fn legend_values_are_headed_final_and_avg_over_time() {
        // 10 % for five seconds, then 30 % for five: final 30 %, time-average 20 %.
        let mut s = Series::default();
        for i in 0..=10 {
            let v = if i < 5 { 0.1 } else { 0.3 };
            s.push(f64::from(i), &BTreeMap::from([("r".to_owned(), v)]), &BTreeMap::new());
        }
        let t = texts(&render_svg("t", "sub", &s).unwrap());
        let row = t.iter().position(|x| x == "r").expect("legend row for r");
        assert_eq!(t[row + 1..row + 3], ["30%".to_owned(), "20%".to_owned()]);
        let head = t.iter().position(|x| x == "role").expect("legend heading");
        assert_eq!(t[head + 1..head + 3], ["final".to_owned(), "avg over time".to_owned()]);
    }

    #[test]
    fn waiting_tasks_get_a_panel_headed_final_and_peak_only_when_tasks_waited() {
        let none = constant(5, &[("r", 0.5)], &[("cpus", 0.5)]);
        let t = texts(&render_svg("t", "sub", &none).unwrap());
        assert!(!t.contains(&"Tasks waiting to start, per role".to_owned()));
        let mut s = Series::default();
        for (i, w) in [4.0, 9.0, 2.0].into_iter().enumerate() {
            let shares = BTreeMap::from([("r".to_owned(), 0.5)]);
            let waiting = BTreeMap::from([("r".to_owned(), w)]);
            s.push_with_waiting(i as f64, &shares, &BTreeMap::new(), &waiting);
        }
        let t = texts(&render_svg("t", "sub", &s).unwrap());
        let panel = t.iter().position(|x| x == "Tasks waiting to start, per role").unwrap();
        let head = panel + t[panel..].iter().position(|x| x == "role").unwrap();
        assert_eq!(t[head + 1..head + 6], ["final", "peak", "r", "2", "9"].map(str::to_owned));
    }

    #[test]
    fn a_legend_too_long_for_its_panel_counts_the_roles_it_leaves_out() {
        let names: Vec<String> = (0..40).map(|i| format!("role{i:02}")).collect();
        let shares: Vec<(&str, f64)> = names.iter().map(|n| (n.as_str(), 0.01)).collect();
        let t = texts(&render_svg("t", "sub", &constant(3, &shares, &[])).unwrap());
        let more = t.iter().find(|x| x.starts_with("… and ")).expect("an overflow row");
        let listed = names.iter().filter(|n| t.contains(n)).count();
        assert_eq!(*more, format!("… and {} more (not listed)", 40 - listed));
    }

    #[test]
    fn a_long_title_wraps_instead_of_being_cut() {
        let title = "word ".repeat(40);
        let t = texts(&render_svg(title.trim(), "sub", &constant(3, &[("r", 0.5)], &[])).unwrap());
        let lines: Vec<&String> = t.iter().filter(|x| x.starts_with("word")).collect();
        assert!(lines.len() >= 2, "{t:?}");
        assert_eq!(lines.iter().map(|l| l.split(' ').count()).sum::<usize>(), 40);
        assert!(!t.iter().any(|x| x.contains('…')));
    }

    #[test]
    fn events_are_marked_and_windows_beyond_the_run_are_said() {
        let mut s = constant(3, &[("r", 0.5)], &[("cpus", 0.5), ("mem", 0.5)]);
        s.marks.push((1.0, "sorters: random / drf".into()));
        s.windows.insert("a1".into(), (3600.0, Some(1800.0)));
        let svg = render_svg("t", "sub", &s).unwrap();
        let t = texts(&svg);
        assert!(t.iter().any(|x| x == "sorters: random / drf"), "{t:?}");
        assert!(t.iter().any(|x| x.contains("maintenance window on a1 from 3600 s to 5400 s")));
        // mem lies on cpus: it is drawn dashed so that both show.
        assert!(svg.contains("stroke-dasharray") || svg.matches("<polyline").count() > 2);
    }

    #[test]
    fn the_same_series_renders_the_same_svg() {
        let s = constant(50, &[("a", 0.3), ("b", 0.001)], &[("cpus", 0.7)]);
        assert_eq!(render_svg("t", "sub", &s).unwrap(), render_svg("t", "sub", &s).unwrap());
    }

    #[test]
    fn empty_and_non_finite_series_render_without_panicking() {
        assert!(render_svg("t", "sub", &Series::default()).unwrap().starts_with("<svg"));
        let s = constant(3, &[("a", f64::NAN), ("b", f64::INFINITY)], &[("cpus", -1.0)]);
        assert!(render_svg("t", "sub", &s).unwrap().starts_with("<svg"));
        let curves = BTreeMap::from([("x".to_owned(), vec![f64::NAN])]);
        assert!(
            decline_offers_curve_svg(&[0], &curves, &curves, "runs 1-1")
                .unwrap()
                .starts_with("<svg")
        );
        assert!(
            decline_offers_curve_svg(&[], &BTreeMap::new(), &BTreeMap::new(), "runs 1-1")
                .unwrap()
                .starts_with("<svg")
        );
    }

    fn curves() -> BTreeMap<String, Vec<f64>> {
        BTreeMap::from([
            ("built-in, 100 fw".to_owned(), vec![2.0, 21.0, 48.0]),
            ("module drf, 100 fw".to_owned(), vec![1.9, 19.4, 42.8]),
        ])
    }

    #[test]
    fn curve_series_keep_their_colour_in_both_panels() {
        let svg = decline_offers_curve_svg(
            &[1000, 5000, 10_000],
            &curves(),
            &BTreeMap::new(),
            "runs 1-3",
        )
        .unwrap();
        let c: Vec<String> = strokes(&svg, 2).into_iter().filter(|c| c != REFERENCE_HEX).collect();
        assert_eq!(c.len(), 4, "two series in two panels: {c:?}");
        assert_eq!(c[..2], c[2..]);
        assert_ne!(c[0], c[1]);
    }

    #[test]
    fn the_cost_per_framework_considered_gets_a_third_panel_when_measured() {
        let pairs = BTreeMap::from([("built-in, 100 fw".to_owned(), vec![120.0, 150.0, 160.0])]);
        let svg =
            decline_offers_curve_svg(&[1000, 5000, 10_000], &curves(), &pairs, "runs 1-3").unwrap();
        let t = texts(&svg);
        assert!(t.iter().any(|x| x.starts_with("Time per (agent × framework considered)")));
        assert!(t.contains(&"160.00 ns".to_owned()), "the last point in the legend: {t:?}");
        let without = decline_offers_curve_svg(
            &[1000, 5000, 10_000],
            &curves(),
            &BTreeMap::new(),
            "runs 1-3",
        )
        .unwrap();
        assert!(!texts(&without).iter().any(|x| x.contains("framework considered")));
    }

    #[test]
    fn the_linear_reference_is_dashed_grey_and_explained() {
        let svg = decline_offers_curve_svg(
            &[1000, 5000, 10_000],
            &curves(),
            &BTreeMap::new(),
            "runs 1-3",
        )
        .unwrap();
        let dashes = strokes(&svg, 2).iter().filter(|c| *c == REFERENCE_HEX).count();
        // Each panel: a line in many pieces, and a legend sample in two.
        assert!(dashes > 2 * (2 + 4), "the reference is drawn dashed: {dashes} pieces");
        let t = texts(&svg);
        assert_eq!(t.iter().filter(|x| *x == "linear in agents").count(), 2);
        assert!(t.contains(
            &"dashed: linear in agents, through the origin and built-in, 100 fw at 10000 agents"
                .to_owned()
        ));
        assert_eq!(t.iter().filter(|x| *x == "at 10000 agents").count(), 2);
        assert!(t.contains(&"48.00 ms".to_owned()) && t.contains(&"4.80 µs".to_owned()));
    }

    #[test]
    fn the_top_of_every_scaled_axis_is_labelled() {
        for peak in [0.0009, 0.0014, 0.0019, 0.0023, 0.0028, 0.0037, 0.0046, 0.0055, 0.0072, 0.011]
        {
            let s = constant(3, &[("r", peak)], &[]);
            let top = nice_ceiling(peak * 1.08);
            let label = format!("{}%", tick(top * 100.0, top * 100.0));
            let t = texts(&render_svg("t", "sub", &s).unwrap());
            assert!(t.contains(&label), "peak {peak}: no tick reads {label}: {t:?}");
        }
        for peak in [9.0, 14.0, 19.0, 23.0, 28.0, 37.0, 46.0, 55.0, 72.0, 110.0] {
            let curves = BTreeMap::from([("x".to_owned(), vec![peak / 2.0, peak])]);
            let t = texts(
                &decline_offers_curve_svg(&[1, 2], &curves, &BTreeMap::new(), "runs 1-1").unwrap(),
            );
            let top = nice_ceiling(peak * 1.08);
            assert!(t.contains(&tick(top, top)), "peak {peak}: no tick reads {top}: {t:?}");
        }
    }

    #[test]
    fn axis_tops_are_round_numbers_just_above_the_data() {
        assert_eq!(nice_ceiling(0.0021), 0.0025);
        assert_eq!(nice_ceiling(118.0), 150.0);
        assert_eq!(nice_ceiling(0.0115), 0.015);
        assert_eq!(nice_ceiling(6.1), 8.0);
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(tick(0.15000000000000002, 0.25), "0.15");
        assert_eq!(tick(5000.0, 20000.0), "5000");
    }
}
