//! What every `uf2fs bench` subcommand shares for its output: the check of an output
//! path before the runs, and the progress bar.

use crate::errors::UsageError;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::Path;
use std::time::Duration;

/// Refuses an output path that is a directory or whose directory does not exist.
pub fn check_output(path: &Path) -> anyhow::Result<()> {
    let shown = path.display();
    if path.is_dir() {
        return Err(UsageError(format!("{shown} is a directory, not a file to write")).into());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(UsageError(format!("cannot write {shown}: {} is not a directory", dir.display())).into());
    }
    Ok(())
}

/// A progress bar of `total` units on stderr: elapsed time, bar, percentage, ETA and a
/// message (the runs in progress).
pub fn progress_bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {percent:>3}% ETA {eta} {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(500));
    bar
}
