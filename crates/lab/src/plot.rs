//! `--plot FILE.svg`: cumulative WAF against user data written since the overwrite
//! phase began, one line per policy, one panel per workload (stacked in one SVG).

use crate::run::RunResult;
use crate::setup::BLOCK_BYTES;
use crate::size::gib;
use plotters::prelude::*;
use std::path::Path;

/// Width of the SVG, and height of one panel, in pixels.
const WIDTH: u32 = 900;
const PANEL_HEIGHT: u32 = 420;

/// Line colours, one per policy in command-line order (distinct on white).
const COLOURS: [RGBColor; 8] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x33, 0x33, 0x33),
];

/// Draws the curves of `results` into `path`.
pub fn plot(results: &[RunResult], path: &Path) -> Result<(), String> {
    let mut workloads: Vec<&str> = Vec::new();
    for r in results {
        if !workloads.contains(&r.workload.as_str()) {
            workloads.push(&r.workload);
        }
    }
    if workloads.is_empty() {
        return Err("no results to plot".into());
    }
    let mut policies: Vec<&str> = Vec::new();
    for r in results {
        if !policies.contains(&r.policy.as_str()) {
            policies.push(&r.policy);
        }
    }
    let err = |e: &dyn std::fmt::Display| format!("drawing {}: {e}", path.display());
    let height = PANEL_HEIGHT * workloads.len() as u32;
    let root = SVGBackend::new(path, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let panels = root.split_evenly((workloads.len(), 1));
    for (panel, workload) in panels.iter().zip(&workloads) {
        let runs: Vec<&RunResult> = results.iter().filter(|r| r.workload == *workload).collect();
        let curve = |r: &RunResult| -> Vec<(f64, f64)> {
            r.curve
                .iter()
                .filter(|s| s.user_blocks > 0)
                .map(|s| (gib(s.user_blocks * BLOCK_BYTES), s.waf()))
                .collect()
        };
        let x_max = runs
            .iter()
            .map(|r| gib(r.user_blocks * BLOCK_BYTES))
            .fold(0.0, f64::max)
            .max(1e-6);
        let y_max = runs
            .iter()
            .flat_map(|r| curve(r).into_iter().map(|(_, y)| y))
            .fold(1.0, f64::max)
            * 1.1;
        let title = match runs.first() {
            Some(r) => format!(
                "{workload}: cumulative WAF since the overwrites began ({} zones of {} MiB)",
                r.setup.zones,
                r.setup.zone_bytes >> 20
            ),
            None => workload.to_string(),
        };
        let mut chart = ChartBuilder::on(panel)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("user data written (GiB)")
            .y_desc("WAF")
            .draw()
            .map_err(|e| err(&e))?;
        for r in &runs {
            let i = policies.iter().position(|p| *p == r.policy).unwrap_or(0);
            let color = COLOURS[i % COLOURS.len()].to_rgba();
            chart
                .draw_series(LineSeries::new(curve(r), color.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(format!("{} ({:.2})", r.policy, r.waf))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// One point of `bench writeback --plot`: a configuration's median throughput.
#[derive(Debug, Clone, PartialEq)]
pub struct WbPoint {
    /// Workload name (one panel each).
    pub workload: String,
    /// Policy name (one line each; the one-context `single` run starts every line).
    pub policy: String,
    /// Writeback contexts.
    pub contexts: usize,
    /// Median MiB/s.
    pub mib_per_s: f64,
}

/// Draws `bench writeback --plot`: throughput against the number of writeback
/// contexts, one line per policy, one panel per workload (stacked in one SVG).
pub fn plot_writeback(points: &[WbPoint], path: &Path) -> Result<(), String> {
    let mut workloads: Vec<&str> = Vec::new();
    let mut policies: Vec<&str> = Vec::new();
    for p in points {
        if !workloads.contains(&p.workload.as_str()) {
            workloads.push(&p.workload);
        }
        if p.contexts > 1 && !policies.contains(&p.policy.as_str()) {
            policies.push(&p.policy);
        }
    }
    if workloads.is_empty() {
        return Err("no results to plot".into());
    }
    if policies.is_empty() {
        policies.push("single");
    }
    let err = |e: &dyn std::fmt::Display| format!("drawing {}: {e}", path.display());
    let root = SVGBackend::new(path, (WIDTH, PANEL_HEIGHT * workloads.len() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let panels = root.split_evenly((workloads.len(), 1));
    for (panel, workload) in panels.iter().zip(&workloads) {
        let mine: Vec<&WbPoint> = points.iter().filter(|p| p.workload == *workload).collect();
        let x_max = mine.iter().map(|p| p.contexts).max().unwrap_or(1).max(2) as f64;
        let y_max = mine.iter().map(|p| p.mib_per_s).fold(1.0, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(panel)
            .caption(
                format!("{workload}: write throughput against writeback contexts"),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.5..x_max + 0.5, 0.0..y_max)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("writeback contexts")
            .y_desc("MiB/s (median)")
            .draw()
            .map_err(|e| err(&e))?;
        let single = mine.iter().find(|p| p.contexts == 1).map(|p| (1.0, p.mib_per_s));
        for (i, policy) in policies.iter().enumerate() {
            let mut line: Vec<(f64, f64)> = single.into_iter().collect();
            let mut rest: Vec<(f64, f64)> = mine
                .iter()
                .filter(|p| p.contexts > 1 && p.policy == *policy)
                .map(|p| (p.contexts as f64, p.mib_per_s))
                .collect();
            rest.sort_by(|a, b| a.0.total_cmp(&b.0));
            line.extend(rest);
            let color = COLOURS[i % COLOURS.len()].to_rgba();
            chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(policy.to_string())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            chart
                .draw_series(line.into_iter().map(|(x, y)| Circle::new((x, y), 4, color.filled())))
                .map_err(|e| err(&e))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// Points a latency-over-time line keeps at most (windows are merged, keeping each
/// group's largest latency, so that spikes stay visible).
const TIME_POINTS: usize = 1500;

/// `bench latency --plot FILE.svg`: per load, front-I/O `clat` over time (the largest
/// in each 10 ms window, merged down to at most `TIME_POINTS` (1500) points, log scale) with
/// one line per pacer, and the `clat` CDF with one line per pacer.
pub fn plot_latency(results: &[crate::latency::LatencyResult], path: &Path) -> Result<(), String> {
    let mut loads: Vec<&str> = Vec::new();
    let mut pacers: Vec<&str> = Vec::new();
    for r in results {
        if !loads.contains(&r.load.as_str()) {
            loads.push(&r.load);
        }
        if !pacers.contains(&r.pacer.as_str()) {
            pacers.push(&r.pacer);
        }
    }
    if loads.is_empty() {
        return Err("no results to plot".into());
    }
    let err = |e: &dyn std::fmt::Display| format!("drawing {}: {e}", path.display());
    let root = SVGBackend::new(path, (WIDTH * 2, PANEL_HEIGHT * loads.len() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let rows = root.split_evenly((loads.len(), 2));
    let y_max = results.iter().map(|r| r.clat_max_us).fold(100.0, f64::max) * 2.0;
    for (i, load) in loads.iter().enumerate() {
        let runs: Vec<_> = results.iter().filter(|r| r.load == *load).collect();
        let colour = |pacer: &str| {
            let i = pacers.iter().position(|p| *p == pacer).unwrap_or(0);
            COLOURS[i % COLOURS.len()].to_rgba()
        };
        // Latency over time.
        let series = |r: &crate::latency::LatencyResult| -> Vec<(f64, f64)> {
            let per = r.windows.len().div_ceil(TIME_POINTS).max(1);
            r.windows
                .chunks(per)
                .map(|c| {
                    let x = c[0].ms as f64 / 1000.0;
                    let y = c.iter().map(|w| w.clat_max_us).fold(1.0, f64::max);
                    (x, y)
                })
                .collect()
        };
        let x_max = runs
            .iter()
            .filter_map(|r| r.windows.last().map(|w| w.ms as f64 / 1000.0))
            .fold(1e-3, f64::max);
        let mut chart = ChartBuilder::on(&rows[2 * i])
            .caption(
                format!("load {load}: largest clat per 10 ms window (merged to {TIME_POINTS} points)"),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..x_max, (1.0..y_max).log_scale())
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("simulated time since the overwrites began (s)")
            .y_desc("clat (µs, log)")
            .draw()
            .map_err(|e| err(&e))?;
        for r in &runs {
            let c = colour(&r.pacer);
            chart
                .draw_series(LineSeries::new(series(r), c.stroke_width(1)))
                .map_err(|e| err(&e))?
                .label(format!("{} (max {:.0} µs)", r.pacer, r.clat_max_us))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
        // CDF.
        let mut chart = ChartBuilder::on(&rows[2 * i + 1])
            .caption(format!("load {load}: clat CDF"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((1.0..y_max).log_scale(), 0.0..1.0)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("clat (µs, log)")
            .y_desc("fraction of writes at or below")
            .draw()
            .map_err(|e| err(&e))?;
        for r in &runs {
            let c = colour(&r.pacer);
            let pts: Vec<(f64, f64)> = r.clat_cdf.iter().map(|&(x, q)| (x.max(1.0), q)).collect();
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(format!("{} (p99 {:.0} µs)", r.pacer, r.clat_p99_us))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
