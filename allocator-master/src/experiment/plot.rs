//! The experiment's picture (plotters, SVG): the paper's Fig. 9(a) — unallocated GPU % against
//! arrived GPU demand %, 75–130 %, median and interquartile band over seeds, one line per
//! allocator — above the fragmentation amount (% of GPU capacity) against arrived demand,
//! 0–130 %, likewise.

use std::collections::BTreeMap;

use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

use super::{MAX_BUCKET, Row};
use crate::report::{INK, PALETTE};

/// Text in the report's style (plain, dark).
fn text(px: f64, h: HPos) -> TextStyle<'static> {
    crate::report::text(px, INK, h, false)
}

/// One allocator's (q1, median, q3) per bucket.
type Band = (String, Vec<Option<(f64, f64, f64)>>);

/// The q-quantile of sorted values (linear interpolation).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Per allocator (in first-seen order) and bucket: (q1, median, q3) of `value(row)` over
/// seeds, for the rows of `workload`.
fn bands(rows: &[Row], workload: &str, value: impl Fn(&Row, usize) -> Option<f64>) -> Vec<Band> {
    let mut order: Vec<String> = Vec::new();
    let mut by: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.workload == workload) {
        if !order.contains(&r.policy) {
            order.push(r.policy.clone());
        }
        by.entry(r.policy.clone()).or_default().push(r);
    }
    order
        .into_iter()
        .map(|p| {
            let runs = &by[&p];
            let per_bucket = (0..=MAX_BUCKET)
                .map(|a| {
                    let mut v: Vec<f64> = runs.iter().filter_map(|r| value(r, a)).collect();
                    if v.is_empty() {
                        return None;
                    }
                    v.sort_by(f64::total_cmp);
                    Some((quantile(&v, 0.25), quantile(&v, 0.5), quantile(&v, 0.75)))
                })
                .collect();
            (p, per_bucket)
        })
        .collect()
}

fn draw_chart(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    caption: &str,
    y_desc: &str,
    x_range: (usize, usize),
    series: &[Band],
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<_>| format!("cannot draw the experiment's plot: {e}");
    let points = |b: &Band| -> Vec<(usize, (f64, f64, f64))> {
        (x_range.0..=x_range.1).filter_map(|a| b.1[a].map(|v| (a, v))).collect()
    };
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for b in series {
        for (_, (q1, _, q3)) in points(b) {
            lo = lo.min(q1);
            hi = hi.max(q3);
        }
    }
    if !lo.is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.08).max(0.5);
    let (y0, y1) = ((lo - pad).max(0.0).floor(), (hi + pad).ceil());
    let mut chart = ChartBuilder::on(area)
        .caption(caption, text(15.0, HPos::Center))
        .margin(12)
        .margin_right(36)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(x_range.0 as f64..x_range.1 as f64, y0..y1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("Arrived GPU demand (% of GPU capacity)")
        .y_desc(y_desc)
        .label_style(text(11.0, HPos::Center))
        .axis_desc_style(text(12.0, HPos::Center))
        .light_line_style(TRANSPARENT)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()
        .map_err(err)?;
    for (i, b) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let pts = points(b);
        let mut band: Vec<(f64, f64)> = pts.iter().map(|(a, v)| (*a as f64, v.2)).collect();
        band.extend(pts.iter().rev().map(|(a, v)| (*a as f64, v.0)));
        chart.draw_series(std::iter::once(Polygon::new(band, colour.mix(0.18)))).map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|(a, v)| (*a as f64, v.1)),
                colour.stroke_width(2),
            ))
            .map_err(err)?
            .label(b.0.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(3))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(text(12.0, HPos::Left))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(0xcc, 0xcc, 0xcc))
        .draw()
        .map_err(err)?;
    Ok(())
}

/// The SVG for `workload`'s rows: unallocated GPU (75–130 %) above fragmentation (0–130 %).
pub fn render_svg(rows: &[Row], workload: &str, seeds: usize) -> Result<String, String> {
    let unallocated = bands(rows, workload, |r, a| r.allocated[a].map(|v| 100.0 - v));
    let frag = bands(rows, workload, |r, a| r.fragmentation[a]);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 980)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| format!("cannot draw the experiment's plot: {e}");
        root.fill(&WHITE).map_err(err)?;
        let (head, body) = root.split_vertically(50);
        head.draw(&Text::new(
            format!(
                "Packing experiment: {workload}, median and interquartile band over {seeds} seed{}",
                if seeds == 1 { "" } else { "s" }
            ),
            (20, 14),
            text(16.0, HPos::Left),
        ))
        .map_err(err)?;
        let (top, bottom) = body.split_vertically(465);
        draw_chart(
            &top,
            "Unallocated GPU from 75 % arrived (lower is better; the paper's Fig. 9(a))",
            "Unallocated GPU (%)",
            (75, MAX_BUCKET),
            &unallocated,
        )?;
        draw_chart(
            &bottom,
            "GPU fragmentation amount (FGD's measure)",
            "Fragmentation (% of GPU capacity)",
            (0, MAX_BUCKET),
            &frag,
        )?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}
