//! The experiment's picture (plotters, SVG): the paper's Fig. 9(a) — unallocated GPU % against
//! arrived GPU demand %, 75–130 %, median and interquartile band over seeds, one line per
//! allocator — above the fragmentation amount (% of GPU capacity) against arrived demand,
//! 0–130 %, likewise. And the paper's bar figures redrawn ([`render_bars_svg`]): per trace
//! family, the unallocated GPU % at 100 % arrived per pod list and allocator.

use std::collections::BTreeMap;

use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

use super::{MAX_BUCKET, Row};
use allocator_pictures::{INK, PALETTE};

/// Text in the report's style (plain, dark).
fn text(px: f64, h: HPos) -> TextStyle<'static> {
    allocator_pictures::text(px, INK, h, false)
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

/// How [`draw_chart`] draws: a colour per series, whether it has its own legend, whether the
/// y axis starts at 0, and an arrived % to mark with a thin vertical line.
struct Look {
    colours: Vec<RGBColor>,
    legend: bool,
    from_zero: bool,
    mark_x: Option<usize>,
}

impl Look {
    /// The palette in order, a legend, the y axis fitted to the data.
    fn plain(series: &[Band]) -> Look {
        let colours = (0..series.len()).map(|i| PALETTE[i % PALETTE.len()]).collect();
        Look { colours, legend: true, from_zero: false, mark_x: None }
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn draw_chart(
    area: &Area<'_>,
    caption: &str,
    y_desc: &str,
    x_range: (usize, usize),
    series: &[Band],
    look: &Look,
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
    let y0 = if look.from_zero { 0.0 } else { (lo - pad).max(0.0).floor() };
    let y1 = (hi + pad).ceil();
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
    if let Some(m) = look.mark_x {
        let m = m as f64;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(m, y0), (m, y1)],
                RGBColor(0x88, 0x88, 0x88).stroke_width(1),
            )))
            .map_err(err)?;
    }
    for (i, b) in series.iter().enumerate() {
        let colour = look.colours.get(i).copied().unwrap_or(PALETTE[i % PALETTE.len()]);
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
    if !look.legend {
        return Ok(());
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
            &Look::plain(&unallocated),
        )?;
        draw_chart(
            &bottom,
            "GPU fragmentation amount (FGD's measure)",
            "Fragmentation (% of GPU capacity)",
            (0, MAX_BUCKET),
            &frag,
            &Look::plain(&frag),
        )?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The trace families of the paper's bar figures: the panel's caption and the pod
/// lists (file stems without `openb_pod_list_`), in the paper's order.
const FAMILIES: [(&str, [&str; 4]); 4] = [
    (
        "GPU-sharing pods bring N % of the GPU demand (gpushareN)",
        ["gpushare40", "gpushare60", "gpushare80", "gpushare100"],
    ),
    (
        "Multi-GPU pods bring N % of the GPU demand (multigpuN)",
        ["multigpu20", "multigpu30", "multigpu40", "multigpu50"],
    ),
    (
        "N % of GPU pods are limited to given GPU models (gpuspecN)",
        ["gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33"],
    ),
    ("CPU-only pods: more of them from cpu050 to cpu250", ["cpu050", "cpu100", "cpu200", "cpu250"]),
];

/// A pod list's label: its file stem without the trace's `openb_pod_list_` prefix.
fn label(workload: &str) -> &str {
    workload.strip_prefix("openb_pod_list_").unwrap_or(workload)
}

/// (mean, min, max) over seeds of the unallocated GPU % at 100 % arrived, per
/// (pod list, allocator).
type BarStats = BTreeMap<(String, String), (f64, f64, f64)>;

fn bar_stats(rows: &[Row]) -> BarStats {
    let mut values: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for r in rows {
        if let Some(Some(a)) = r.allocated.get(100) {
            values.entry((r.workload.clone(), r.policy.clone())).or_default().push(100.0 - a);
        }
    }
    values
        .into_iter()
        .map(|(k, v)| {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (k, (mean, min, max))
        })
        .collect()
}

/// x units per pod list in a bar panel (the axis is integer so that plotters labels it).
const UNIT: i32 = 1000;

/// One panel of grouped bars: per pod list in `traces` (workload names), one bar per
/// allocator, with a min–max whisker; the y axis runs from 0 to `y_max`.
fn draw_bars(
    area: &Area<'_>,
    caption: &str,
    traces: &[String],
    allocators: &[String],
    stats: &BarStats,
    y_max: f64,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<_>| format!("cannot draw the experiment's bars: {e}");
    let n = traces.len();
    let labels: Vec<String> = traces.iter().map(|t| label(t).to_owned()).collect();
    // Tick labels shrink when the pod lists are many or their names long.
    let slot = (f64::from(area.dim_in_pixel().0) - 90.0) / n.max(1) as f64;
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(1) as f64;
    let tick_px = (slot / (longest * 0.66)).clamp(7.0, 11.5);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, text(15.0, HPos::Center))
        .margin(10)
        .margin_right(18)
        .x_label_area_size(42)
        .y_label_area_size(56)
        .build_cartesian_2d(
            (-UNIT / 2..n as i32 * UNIT - UNIT / 2)
                .with_key_points((0..n as i32).map(|i| i * UNIT).collect()),
            0.0..y_max,
        )
        .map_err(err)?;
    let tick_label = |x: &i32| {
        let i = (x + UNIT / 2).div_euclid(UNIT);
        usize::try_from(i).ok().and_then(|i| labels.get(i)).cloned().unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("Pod list")
        .y_desc("Unallocated GPU (% of GPU capacity)")
        .x_label_style(text(tick_px, HPos::Center))
        .y_label_style(text(11.0, HPos::Center))
        .axis_desc_style(text(12.0, HPos::Center))
        .bold_line_style(RGBColor(0xe4, 0xe4, 0xe4))
        .light_line_style(TRANSPARENT)
        .y_labels(7)
        .x_label_formatter(&tick_label)
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()
        .map_err(err)?;
    // The production trace, when shown, is the reference: a thin rule sets it apart.
    if labels.first().is_some_and(|l| l == "default") && n > 1 {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(UNIT / 2, 0.0), (UNIT / 2, y_max)],
                RGBColor(0x99, 0x99, 0x99).stroke_width(1),
            )))
            .map_err(err)?;
    }
    let value_style =
        allocator_pictures::text(9.5, RGBColor(0x44, 0x44, 0x44), HPos::Center, false);
    // Each group takes 80 % of its pod list's slot, a bar at most 56 px; each bar 90 % of
    // its share of the group.
    let k = allocators.len().max(1) as i32;
    let slot_px = (chart.backend_coord(&(UNIT, 0.0)).0 - chart.backend_coord(&(0, 0.0)).0).max(1);
    let width = (UNIT * 4 / 5 / k).min(56 * UNIT / slot_px);
    let bar = |i: usize, j: usize| {
        let x0 = i as i32 * UNIT - width * k / 2 + j as i32 * width;
        (x0, x0 + width * 9 / 10, x0 + width * 9 / 20)
    };
    // The means above the whiskers, where every bar of the panel is wide enough to hold its own.
    let value = |mean: f64| format!("{mean:.1}");
    let bar_px = chart.backend_coord(&(width * 9 / 10, 0.0)).0 - chart.backend_coord(&(0, 0.0)).0;
    let values_fit = stats.iter().filter(|((w, _), _)| traces.contains(w)).all(|(_, s)| {
        area.estimate_text_size(&value(s.0), &value_style)
            .is_ok_and(|(w, _)| w as i32 + 2 <= bar_px)
    });
    for (i, trace) in traces.iter().enumerate() {
        for (j, policy) in allocators.iter().enumerate() {
            let Some(&(mean, min, max)) = stats.get(&(trace.clone(), policy.clone())) else {
                continue;
            };
            let colour = PALETTE[j % PALETTE.len()];
            let (x0, x1, mid) = bar(i, j);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, 0.0), (x1, mean)],
                    colour.filled(),
                )))
                .map_err(err)?;
            if values_fit {
                let (x, y) = chart.backend_coord(&(mid, max));
                let (bx, by) = area.get_base_pixel();
                area.draw(&Text::new(value(mean), (x - bx, y - by - 15), value_style.clone()))
                    .map_err(err)?;
            }
            if max > min {
                let cap = width / 5;
                let whisker = INK.stroke_width(1);
                chart
                    .draw_series([
                        PathElement::new(vec![(mid, min), (mid, max)], whisker),
                        PathElement::new(vec![(mid - cap, min), (mid + cap, min)], whisker),
                        PathElement::new(vec![(mid - cap, max), (mid + cap, max)], whisker),
                    ])
                    .map_err(err)?;
            }
        }
    }
    Ok(())
}

/// A row of legend entries, centred on `area`: a colour swatch and the allocator's name.
fn draw_legend(area: &Area<'_>, allocators: &[String], y: i32) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<_>| format!("cannot draw the experiment's legend: {e}");
    let style = text(12.5, HPos::Left);
    let widths: Vec<i32> = allocators
        .iter()
        .map(|a| area.estimate_text_size(a, &style).map_or(60, |(w, _)| w as i32))
        .collect();
    let total: i32 = widths.iter().map(|w| w + 20 + 26).sum::<i32>() - 26;
    let mut x = (area.dim_in_pixel().0 as i32 - total) / 2;
    for (j, (a, w)) in allocators.iter().zip(&widths).enumerate() {
        let colour = PALETTE[j % PALETTE.len()];
        area.draw(&Rectangle::new([(x, y + 1), (x + 13, y + 14)], colour.filled())).map_err(err)?;
        area.draw(&Text::new(a.clone(), (x + 19, y), style.clone())).map_err(err)?;
        x += w + 20 + 26;
    }
    Ok(())
}

/// The paper's bar figures redrawn: per trace family with rows (gpushare, multigpu, gpuspec,
/// cpu; `default` first when present), grouped bars of the mean unallocated GPU % at 100 %
/// arrived per pod list and allocator, with min–max whiskers over seeds; if no family has
/// rows, the pod lists present in one panel. Below, for the first pod list in `rows`, the
/// fragmentation amount (% of capacity) and ratio (% of unallocated GPU) against arrived
/// demand, median and interquartile band over seeds.
pub fn render_bars_svg(rows: &[Row]) -> Result<String, String> {
    let Some(first) = rows.first() else {
        return Err("cannot draw the experiment's bars: there are no results".into());
    };
    let mut allocators: Vec<String> = Vec::new();
    let mut workloads: Vec<String> = Vec::new();
    let mut seeds: Vec<u64> = Vec::new();
    for r in rows {
        if !allocators.contains(&r.policy) {
            allocators.push(r.policy.clone());
        }
        if !workloads.contains(&r.workload) {
            workloads.push(r.workload.clone());
        }
        if !seeds.contains(&r.seed) {
            seeds.push(r.seed);
        }
    }
    let find = |l: &str| workloads.iter().find(|w| label(w) == l).cloned();
    let default = find("default");
    let mut panels: Vec<(String, Vec<String>)> = Vec::new();
    for (caption, members) in FAMILIES {
        let present: Vec<String> = members.iter().filter_map(|m| find(m)).collect();
        if present.is_empty() {
            continue;
        }
        panels.push((caption.to_owned(), default.iter().cloned().chain(present).collect()));
    }
    // No family run: the pod lists present, in one panel.
    let families = !panels.is_empty();
    if !families {
        let caption = "The pod lists run (none of the paper's trace families)";
        panels.push((caption.to_owned(), workloads.clone()));
    }
    let stats = bar_stats(rows);
    let top = stats.values().map(|s| s.2).fold(0.0, f64::max);
    let y_max = ((top * 1.06) / 5.0).ceil().max(1.0) * 5.0;

    let colour_of = |p: &str| {
        let j = allocators.iter().position(|a| a == p).unwrap_or(0);
        PALETTE[j % PALETTE.len()]
    };
    let look = |series: &[Band]| Look {
        colours: series.iter().map(|b| colour_of(&b.0)).collect(),
        legend: false,
        from_zero: true,
        mark_x: Some(100),
    };
    let amount = bands(rows, &first.workload, |r, a| r.fragmentation[a]);
    let ratio = bands(rows, &first.workload, |r, a| r.frag_ratio[a]);

    const WIDTH: u32 = 1200;
    const HEAD: u32 = 96;
    const BAR_ROW: u32 = 350;
    const LOWER_HEAD: u32 = 74;
    const LOWER: u32 = 390;
    let columns = if panels.len() == 1 { 1 } else { 2 };
    let bar_rows = panels.len().div_ceil(columns) as u32;
    let height = HEAD + bar_rows * BAR_ROW + LOWER_HEAD + LOWER;
    let n = seeds.len();
    let seeds_text = format!("{n} seed{}", if n == 1 { "" } else { "s" });
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| format!("cannot draw the experiment's bars: {e}");
        root.fill(&WHITE).map_err(err)?;
        let (head, body) = root.split_vertically(HEAD);
        head.draw(&Text::new(
            format!(
                "Packing experiment: unallocated GPU when the arrived GPU demand reaches 100 % \
                 of capacity, {seeds_text}"
            ),
            (20, 12),
            text(17.0, HPos::Left),
        ))
        .map_err(err)?;
        head.draw(&Text::new(
            format!(
                "{}{}",
                if n == 1 {
                    "Bars: one seed (lower is better)."
                } else {
                    "Bars: mean over seeds (lower is better); whiskers: min–max over seeds."
                },
                if families && default.is_some() {
                    " Each family panel starts with the production trace, default, for reference."
                } else {
                    ""
                }
            ),
            (20, 40),
            allocator_pictures::text(12.0, RGBColor(0x55, 0x55, 0x55), HPos::Left, false),
        ))
        .map_err(err)?;
        draw_legend(&head, &allocators, 68)?;
        let (grid, lower) = body.split_vertically(bar_rows * BAR_ROW);
        let cells = grid.split_evenly((bar_rows as usize, columns));
        for ((caption, traces), cell) in panels.iter().zip(&cells) {
            draw_bars(cell, caption, traces, &allocators, &stats, y_max)?;
        }
        let (lower_head, lower_body) = lower.split_vertically(LOWER_HEAD);
        lower_head
            .draw(&PathElement::new(
                vec![(20, 6), (WIDTH as i32 - 20, 6)],
                RGBColor(0xcc, 0xcc, 0xcc).stroke_width(1),
            ))
            .map_err(err)?;
        lower_head
            .draw(&Text::new(
                format!(
                    "Fragmentation (FGD's measure) of pod list {} against arrived GPU demand: \
                     median line and interquartile band over {seeds_text}; grey line: 100 % arrived",
                    label(&first.workload)
                ),
                (20, 18),
                text(14.0, HPos::Left),
            ))
            .map_err(err)?;
        draw_legend(&lower_head, &allocators, 46)?;
        let (left, right) = lower_body.split_horizontally(WIDTH / 2);
        draw_chart(
            &left,
            "Fragmentation amount",
            "Fragmentation (% of GPU capacity)",
            (0, MAX_BUCKET),
            &amount,
            &look(&amount),
        )?;
        draw_chart(
            &right,
            "Fragmentation ratio",
            "Fragmentation (% of unallocated GPU)",
            (0, MAX_BUCKET),
            &ratio,
            &look(&ratio),
        )?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    use allocator_pictures::svg_texts as texts;

    /// A row whose allocated GPU is `allocated` % in every bucket.
    fn row(workload: &str, policy: &str, seed: u64, allocated: f64) -> Row {
        let all = |v: f64| vec![Some(v); MAX_BUCKET + 1];
        Row {
            workload: format!("openb_pod_list_{workload}"),
            policy: policy.to_owned(),
            seed,
            allocated: all(allocated),
            fragmentation: all(10.0),
            frag_ratio: all(50.0),
            dropped: 0,
            pods: 100,
        }
    }

    #[test]
    fn bars_label_every_pod_list_of_the_families_run_and_every_allocator() {
        let traces = ["default", "gpushare40", "gpushare60", "multigpu20", "multigpu30"];
        let mut rows = Vec::new();
        for (i, t) in traces.iter().enumerate() {
            for (p, policy) in ["Random", "BestFit"].iter().enumerate() {
                for seed in [1, 2] {
                    rows.push(row(t, policy, seed, 80.0 + (i + p) as f64 + seed as f64));
                }
            }
        }
        let svg = render_bars_svg(&rows).unwrap();
        let t = texts(&svg);
        for label in traces.iter().chain(&["Random", "BestFit"]) {
            assert!(t.iter().any(|x| x == label), "no text '{label}' in {t:?}");
        }
        // default is the reference in both family panels; the families not run are left out.
        assert_eq!(t.iter().filter(|x| *x == "default").count(), 2, "{t:?}");
        for absent in ["gpushare80", "gpuspec10", "cpu050", "openb_pod_list_default"] {
            assert!(!t.iter().any(|x| x == absent), "'{absent}' drawn: {t:?}");
        }
        assert!(t[0].contains("2 seeds"), "{}", t[0]);
        // Bar heights are the mean unallocated % at 100 % arrived: Random on default, seeds
        // 1 and 2, allocated 81 and 82 %, so 18.5 %.
        assert!(t.iter().any(|x| x == "18.5"), "{t:?}");

        // No family: the pod lists run, in one panel.
        let custom = vec![row("mine", "Random", 1, 90.0), row("other", "Random", 1, 90.0)];
        let t = texts(&render_bars_svg(&custom).unwrap());
        for label in ["mine", "other", "Random"] {
            assert!(t.iter().any(|x| x == label), "no text '{label}' in {t:?}");
        }
    }
}
