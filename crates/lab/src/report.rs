//! What the lab prints and saves: the setup, the table of results with each policy's
//! WAF against greedy's, and the JSON records.

use crate::run::RunResult;
use crate::setup::{Setup, BLOCK_BYTES};
use crate::size::{format_size, gib};
use crate::volume::Geometry;
use std::fmt::Write as _;
use std::path::Path;

/// Sets each result's `waf_vs_greedy` from the greedy run of its workload, when there
/// is one.
pub fn compare_with_greedy(results: &mut [RunResult]) {
    let greedy: Vec<(String, f64)> = results
        .iter()
        .filter(|r| r.policy == "greedy")
        .map(|r| (r.workload.clone(), r.waf))
        .collect();
    for r in results.iter_mut() {
        r.waf_vs_greedy = greedy
            .iter()
            .find(|(w, _)| *w == r.workload)
            .filter(|(_, g)| *g > 0.0)
            .map(|(_, g)| r.waf / g - 1.0);
    }
}

/// Two lines on the setup and the volume made for it.
pub fn describe(setup: &Setup, g: &Geometry) -> String {
    let preset = setup.preset.map_or("custom".to_string(), |p| format!("preset {p}"));
    let node_blocks = crate::volume::file_footprint(setup.file_blocks()) - setup.file_blocks();
    let reserve = if setup.reserved_sections == 0 {
        format!("{} reserved sections (mkfs.f2fs 1.15's)", g.reserved_sections())
    } else {
        format!("{} reserved sections (-Z)", g.reserved_sections())
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "setup: {preset}: {} conventional + {} zones of {} (one section each), overprovision {}%, {reserve}; \
         Linux {}'s GC loop{}",
        format_size(setup.conv_bytes),
        setup.zones,
        format_size(setup.zone_bytes),
        setup.overprovision_pct,
        setup.kernel,
        setup
            .writer_hold
            .map_or(String::new(), |h| format!(", the writer held at {h} dirty pages")),
    );
    let _ = writeln!(
        s,
        "volume: {} sections in the main area ({} conventional), user space {}; file {} = {:.3} of the zones, \
         about {} node blocks ({:.1} sections), {:.2}% of the main area free for GC; {} of 4 KiB \
         writes measured, seed {}",
        g.main_sections,
        g.conv_main_sections,
        format_size(g.user_blocks * BLOCK_BYTES),
        format_size(setup.file_bytes),
        setup.file_share_of_zones(),
        node_blocks,
        node_blocks as f64 / g.zone_blocks as f64,
        g.gc_slack(setup.file_blocks()) * 100.0,
        format_size(setup.io_bytes),
        setup.seed,
    );
    if let Some(idle) = setup.idle {
        let _ = writeln!(
            s,
            "idle: the writer pauses {} s after every {} of overwrites; background GC and {} s checkpoints \
             run on the simulated clock (256 MiB/s of writes)",
            idle.pause_secs,
            format_size(idle.every_bytes),
            crate::idle::CHECKPOINT_INTERVAL.as_secs(),
        );
    }
    s
}

/// The results as an aligned text table.
pub fn table(results: &[RunResult]) -> String {
    let header = [
        "policy",
        "workload",
        "WAF",
        "vs greedy",
        "user GiB",
        "device GiB",
        "data moved",
        "node moved",
        "GC fg/bg",
        "victims d/n",
        "util",
        "elapsed s",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for r in results {
        rows.push(vec![
            r.policy.clone(),
            r.workload.clone(),
            format!("{:.2}", r.waf),
            r.waf_vs_greedy
                .map_or("-".to_string(), |v| format!("{:+.1}%", v * 100.0)),
            format!("{:.2}", gib(r.user_blocks * BLOCK_BYTES)),
            format!("{:.2}", gib(r.device_blocks * BLOCK_BYTES)),
            r.data_blocks_moved.to_string(),
            r.node_blocks_moved.to_string(),
            format!("{}/{}", r.fg_gc_calls, r.bg_gc_calls),
            format!("{}/{}", r.data_victims, r.node_victims),
            format!("{:.3}", r.utilization),
            format!("{:.1}", r.elapsed_s),
        ]);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            // Names to the left, numbers to the right.
            if c < 2 {
                let _ = write!(line, "{cell:<w$}", w = widths[c]);
            } else {
                let _ = write!(line, "{cell:>w$}", w = widths[c]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// One line per workload with greedy's analytical WAF at the utilisation its runs
/// ended at (the yardstick for uniform overwrites).
pub fn limits(results: &[RunResult]) -> String {
    let mut out = String::new();
    let mut seen: Vec<&str> = Vec::new();
    for r in results {
        if seen.contains(&r.workload.as_str()) {
            continue;
        }
        seen.push(&r.workload);
        if let Some(wa) = r.greedy_limit {
            let _ = write!(
                out,
                "{}: utilisation {:.3}, greedy's analytical WAF for uniform overwrites there {:.2} (data moves only)",
                r.workload, r.utilization, wa
            );
            if let Some(usable) = r.greedy_limit_usable {
                let _ = write!(out, "; {usable:.2} without the reserved sections and open logs");
            }
            out.push('\n');
        }
    }
    out
}

/// Writes the records as a JSON array, one object per (policy, workload).
pub fn write_json(results: &[RunResult], path: &Path) -> Result<(), String> {
    let text = serde_json::to_string_pretty(results).map_err(|e| format!("encoding the results: {e}"))?;
    std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}
