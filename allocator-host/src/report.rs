//! `--report FILE.svg`: dominant share per role and cluster utilisation over time, as a
//! self-contained SVG (no plotting dependency; two line charts with axes and legends).

use std::collections::BTreeMap;
use std::fmt::Write;

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
}

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
        }
    }
}

const COLORS: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f",
];
const WIDTH: f64 = 960.0;
const PANEL: f64 = 300.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 200.0;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A "nice" tick step for a range.
fn tick_step(span: f64) -> f64 {
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(mag * 10.0)
}

/// Panel text: title, y-axis label, x-axis label; whether the legend shows each line's last
/// and largest value.
struct Labels<'a> {
    title: &'a str,
    y: &'a str,
    x: &'a str,
    legend_values: bool,
}

fn panel(
    svg: &mut String,
    top: f64,
    labels: Labels<'_>,
    times: &[f64],
    lines: &BTreeMap<String, Vec<f64>>,
    percent: bool,
) {
    let Labels { title, y: ylabel, x: xlabel, legend_values } = labels;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = PANEL - 70.0;
    let (x0, y0) = (LEFT, top + 40.0);
    let t_max = times.last().copied().unwrap_or(1.0).max(1e-9);
    let data_max = lines.values().flatten().copied().fold(0.0f64, f64::max);
    let (y_max, y_step) = if percent {
        (data_max.max(1.0), 0.25)
    } else {
        let step = tick_step(data_max.max(1.0) * 1.2).max(1.0);
        ((data_max / step).ceil().max(1.0) * step, step)
    };
    let x = |t: f64| x0 + t / t_max * plot_w;
    let y = |v: f64| y0 + plot_h - v / y_max * plot_h;
    let _ = writeln!(
        svg,
        r#"<text x="{x0}" y="{}" font-size="16" font-weight="bold">{}</text>"#,
        top + 22.0,
        escape(title)
    );
    let _ = writeln!(
        svg,
        r##"<rect x="{x0}" y="{y0}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>"##
    );
    // Y ticks.
    let mut v = 0.0;
    while v <= y_max + 1e-9 {
        let yy = y(v);
        let _ = writeln!(
            svg,
            r##"<line x1="{x0}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#eee"/>"##,
            x0 + plot_w
        );
        let label = if percent { format!("{:.0}%", v * 100.0) } else { format!("{v}") };
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{label}</text>"#,
            x0 - 6.0,
            yy + 4.0
        );
        v += y_step;
    }
    // X ticks.
    let step = tick_step(t_max);
    let mut t = 0.0;
    while t <= t_max + 1e-9 {
        let xx = x(t);
        let _ = writeln!(
            svg,
            r##"<line x1="{xx:.1}" y1="{:.1}" x2="{xx:.1}" y2="{:.1}" stroke="#999"/>"##,
            y0 + plot_h,
            y0 + plot_h + 4.0
        );
        let _ = writeln!(
            svg,
            r#"<text x="{xx:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#,
            y0 + plot_h + 16.0,
            t
        );
        t += step;
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
        x0 + plot_w / 2.0,
        y0 + plot_h + 32.0,
        escape(xlabel)
    );
    let _ = writeln!(
        svg,
        r#"<text x="16" y="{:.1}" font-size="12" transform="rotate(-90 16 {:.1})" text-anchor="middle">{}</text>"#,
        y0 + plot_h / 2.0,
        y0 + plot_h / 2.0,
        escape(ylabel)
    );
    for (i, (name, values)) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut points = String::new();
        for (t, v) in times.iter().zip(values) {
            let _ = write!(points, "{:.1},{:.1} ", x(*t), y(*v));
        }
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{color}" stroke-width="1.8" points="{points}"/>"#
        );
        let ly = y0 + 8.0 + i as f64 * 18.0;
        let lx = x0 + plot_w + 16.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/>"#,
            lx + 18.0
        );
        let last = values.last().copied().unwrap_or(0.0);
        let value = if !legend_values {
            String::new()
        } else if percent {
            format!(" ({:.0}%)", last * 100.0)
        } else {
            format!(" (now {last}, max {})", values.iter().copied().fold(0.0, f64::max))
        };
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" font-size="12">{}{value}</text>"#,
            lx + 24.0,
            ly + 4.0,
            escape(name)
        );
    }
}

/// An SVG document of `height` with a white background, a title and a subtitle, left open for
/// the panels.
fn svg_start(height: f64, title: &str, subtitle: &str) -> String {
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="24" font-size="18" font-weight="bold">{}</text>"#,
        escape(title)
    );
    let _ = writeln!(
        svg,
        r##"<text x="{LEFT}" y="44" font-size="12" fill="#555">{}</text>"##,
        escape(subtitle)
    );
    svg
}

/// Renders the report: a title line, then the panels (a third, tasks waiting per role, when
/// trace-driven frameworks had tasks waiting).
pub fn render_svg(title: &str, subtitle: &str, series: &Series) -> String {
    let s = series.thinned(1500);
    let with_waiting = s.waiting.values().flatten().any(|v| *v > 0.0);
    let panels = if with_waiting { 3.0 } else { 2.0 };
    let height = 60.0 + panels * PANEL;
    let mut svg = svg_start(height, title, subtitle);
    panel(
        &mut svg,
        50.0,
        Labels {
            title: "Dominant share per role (offered + allocated, over the cluster total)",
            y: "dominant share",
            x: "time (s, simulated)",
            legend_values: true,
        },
        &s.times,
        &s.shares,
        true,
    );
    panel(
        &mut svg,
        50.0 + PANEL,
        Labels {
            title: "Cluster utilisation per resource (allocated / total)",
            y: "allocated",
            x: "time (s, simulated)",
            legend_values: true,
        },
        &s.times,
        &s.utilisation,
        true,
    );
    if with_waiting {
        panel(
            &mut svg,
            50.0 + 2.0 * PANEL,
            Labels {
                title: "Tasks waiting to start, per role",
                y: "tasks waiting",
                x: "time (s, simulated)",
                legend_values: true,
            },
            &s.times,
            &s.waiting,
            false,
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// Renders x/y charts sharing the x values `xs` (ascending), one panel per `(y label, lines)`
/// entry, each line with a value for every x (benchmark curves).
pub fn render_curve_svg(
    title: &str,
    subtitle: &str,
    xs: &[f64],
    xlabel: &str,
    panels: &[(&str, &BTreeMap<String, Vec<f64>>)],
) -> String {
    let height = 60.0 + PANEL * panels.len() as f64;
    let mut svg = svg_start(height, title, subtitle);
    for (i, (ylabel, lines)) in panels.iter().enumerate() {
        let labels = Labels { title: ylabel, y: ylabel, x: xlabel, legend_values: false };
        panel(&mut svg, 50.0 + PANEL * i as f64, labels, xs, lines, false);
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_fill_missing_roles_with_zero() {
        let mut s = Series::default();
        s.push(0.0, &BTreeMap::from([("a".to_owned(), 0.5)]), &BTreeMap::new());
        s.push(1.0, &BTreeMap::from([("b".to_owned(), 0.25)]), &BTreeMap::new());
        assert_eq!(s.shares["a"], vec![0.5, 0.0]);
        assert_eq!(s.shares["b"], vec![0.0, 0.25]);
    }

    #[test]
    fn svg_has_both_panels_and_a_legend_per_series() {
        let mut s = Series::default();
        for i in 0..10 {
            let t = f64::from(i);
            s.push(
                t,
                &BTreeMap::from([("prod".to_owned(), t / 10.0), ("dev<x>".to_owned(), 0.1)]),
                &BTreeMap::from([("cpus".to_owned(), 0.5)]),
            );
        }
        let svg = render_svg("t", "sub", &s);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("Dominant share per role") && svg.contains("Cluster utilisation"));
        assert_eq!(svg.matches("<polyline").count(), 3);
        assert!(svg.contains("dev&lt;x&gt; (10%)"), "names are escaped and show their last value");
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
}
