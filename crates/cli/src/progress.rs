//! Progress of long work (`extract`, `mkfs`, building an image from a tree) on stderr,
//! drawn only when stderr is a terminal (as the bench subcommands do): in a pipe or a log
//! file nothing is written, and
//! counting costs an atomic add. The bar is cleared when the work ends, so a finished
//! command leaves only its own output.

use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Whether the line also counts files.
#[derive(Debug, Clone, Copy)]
pub enum Files {
    /// No file count (`mkfs`).
    Hidden,
    /// Files done, out of this many when known.
    Counted(Option<u64>),
}

/// Bytes (and files) done, with the rate and, when the total is known, the time left.
pub struct Progress {
    bar: Option<ProgressBar>,
    files: Arc<AtomicU64>,
}

impl Progress {
    /// Progress counted in bytes, out of `total` when known (else no bar and no time
    /// left), and in files as `files` says. `what` ends the line (`extracting`,
    /// `formatting`).
    pub fn bytes(total: Option<u64>, files_shown: Files, what: &str) -> Progress {
        let files = Arc::new(AtomicU64::new(0));
        if !std::io::stderr().is_terminal() {
            return Progress { bar: None, files };
        }
        let template = match total {
            Some(_) => {
                "{elapsed_precise} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}{files}{msg}"
            }
            None => "{elapsed_precise} {spinner} {bytes} {binary_bytes_per_sec}{files}{msg}",
        };
        let counted = Arc::clone(&files);
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ")
            .with_key("files", move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                let done = counted.load(Ordering::Relaxed);
                let _ = match files_shown {
                    Files::Counted(Some(all)) => write!(w, " {done}/{all} files"),
                    Files::Counted(None) => write!(w, " {done} files"),
                    Files::Hidden => Ok(()),
                };
            });
        let bar = match total {
            Some(t) => ProgressBar::new(t),
            None => ProgressBar::no_length(),
        };
        bar.set_style(style);
        bar.set_message(format!(" {what}"));
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar: Some(bar), files }
    }

    /// Progress that is never drawn (for `--quiet`).
    pub fn hidden() -> Progress {
        Progress {
            bar: None,
            files: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Adds `n` bytes done. A total that was an estimate grows to what is done.
    pub fn add_bytes(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
            if bar.length().is_some_and(|len| bar.position() > len) {
                bar.set_length(bar.position());
            }
        }
    }

    /// Sets the bytes done (for work that reports its position).
    pub fn set_bytes(&self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }

    /// Counts one more file done.
    pub fn add_file(&self) {
        self.files.fetch_add(1, Ordering::Relaxed);
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    /// A command that fails half-way leaves no bar behind its error line either.
    fn drop(&mut self) {
        self.finish();
    }
}
