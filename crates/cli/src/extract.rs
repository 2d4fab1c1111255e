//! `uf2fs extract`: copy a file or a directory tree out of the image.
//!
//! The walk is iterative (an explicit stack of tasks). Directories are created first and
//! get their mode, owner and times in a `Finish` task popped after all their contents,
//! so read-only directories can still be filled and their mtimes survive.
//!
//! Regular files (but hard-linked ones) are written by worker threads, one per core
//! (at most [`MAX_WORKERS`]), while the walk goes on: creating and filling files in the
//! host file system is where extraction spends its time. Directories' `Finish` tasks
//! then wait until every worker is done, and run in the order the walk reached them.

pub(crate) mod android;
mod data;
mod dest;
mod metadata;

pub use android::AndroidOptions;

use crate::names::{base_name, escape_bytes, escape_os, image_path, join_path, validate_entry_name};
use crate::progress::{Files, Progress};
use anyhow::{anyhow, bail, Context};
use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::fs::{self, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use uf2fs_core::{FileKind, Fs, Ino, Stat};

/// Flags of `uf2fs extract`.
#[derive(Debug, Clone, Default)]
pub struct ExtractOptions {
    /// Replace existing non-directories at destination paths.
    pub force: bool,
    /// Android metadata files to write (see [`android`]).
    pub android: AndroidOptions,
}

/// Copies `path` (an in-image path) to `dest` on the host.
///
/// A directory's contents go inside `dest` (created if missing), like `cp -a PATH/. DEST`;
/// a non-directory becomes `dest`, or `dest/<name>` when `dest` is an existing directory.
pub fn run(fs: &Fs, path: &OsStr, dest: &Path, opts: &ExtractOptions) -> anyhow::Result<()> {
    let src = image_path(path);
    // Like cp -a: a symlink named on the command line is copied as a symlink, unless
    // written with a trailing slash.
    let follow = src.len() > 1 && src.ends_with(b"/");
    let ino = fs.resolve(&src, follow)?;
    let stat = fs.stat(ino)?;
    if opts.android.wanted() && stat.kind != FileKind::Dir {
        bail!(
            "{}: --fs-config and --file-contexts describe a directory tree; this is not a directory",
            escape_bytes(&src)
        );
    }
    let target = if stat.kind == FileKind::Dir {
        top_dir_dest(dest)?
    } else {
        top_file_dest(&src, dest)?
    };
    let progress = progress_for(fs, &src);
    let mut extractor = Extractor::new(fs, opts.force, &progress);
    if opts.android.wanted() {
        extractor.android = Some(android::AndroidWriter::create(&opts.android)?);
    }
    extractor.stack.push(Task::Visit {
        ino,
        src,
        rel: Vec::new(),
        dest: target,
    });
    extractor.run()?;
    progress.finish();
    let android_warnings = match extractor.android.take() {
        Some(writer) => writer.finish()?,
        None => Vec::new(),
    };
    extractor.meta.print_warnings();
    for warning in android_warnings {
        crate::errors::print_warning(&warning);
    }
    Ok(())
}

/// Progress on a terminal: for the whole image out of the checkpoint's counts (valid
/// inodes; valid blocks less the node blocks, as bytes: an estimate, which grows when
/// holes or compression make the files larger), for a part of it without totals.
fn progress_for(fs: &Fs, src: &[u8]) -> Progress {
    if src != b"/" {
        return Progress::bytes(None, Files::Counted(None), "extracting");
    }
    let cp = fs.checkpoint();
    let data_blocks = cp.valid_block_count.saturating_sub(u64::from(cp.valid_node_count));
    let bytes = data_blocks * fs.superblock().block_size() as u64;
    Progress::bytes(
        Some(bytes),
        Files::Counted(Some(u64::from(cp.valid_inode_count))),
        "extracting",
    )
}

/// The destination directory for a directory: created when missing.
fn top_dir_dest(dest: &Path) -> anyhow::Result<PathBuf> {
    match fs::symlink_metadata(dest) {
        // A symlink to a directory given by the user is a fine destination; work on the
        // directory itself so owner, xattrs and times land there.
        Ok(m) if m.file_type().is_symlink() => {
            fs::canonicalize(dest).with_context(|| format!("resolving destination {}", escape_os(dest)))
        }
        Ok(m) if m.is_dir() => Ok(dest.to_path_buf()),
        Ok(_) => bail!("destination {} exists and is not a directory", escape_os(dest)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir_all(dest).with_context(|| format!("creating {}", escape_os(dest)))?;
            Ok(dest.to_path_buf())
        }
        Err(err) => Err(err).with_context(|| format!("destination {}", escape_os(dest))),
    }
}

/// The destination path for a single non-directory.
fn top_file_dest(src: &[u8], dest: &Path) -> anyhow::Result<PathBuf> {
    if !dest.is_dir() {
        return Ok(dest.to_path_buf());
    }
    let name = base_name(src);
    validate_entry_name(name).map_err(|msg| anyhow!("{}: {msg}", escape_bytes(src)))?;
    Ok(dest.join(OsStr::from_bytes(name)))
}

/// One step of the walk.
enum Task {
    /// Copy the inode `ino`, found at in-image path `src` (`rel` inside the extracted
    /// tree, without leading `/`), to host path `dest`.
    Visit {
        ino: Ino,
        src: Vec<u8>,
        rel: Vec<u8>,
        dest: PathBuf,
    },
    /// All contents of a directory are written: now set its own metadata.
    Finish {
        ino: Ino,
        stat: Box<Stat>,
        src: Vec<u8>,
        dest: PathBuf,
    },
}

/// Most threads writing files at once.
pub const MAX_WORKERS: usize = 8;

/// A regular file for a worker to write.
struct FileJob {
    ino: Ino,
    stat: Box<Stat>,
    src: Vec<u8>,
    dest: PathBuf,
}

/// Threads that write files ([`FileJob`]s); the first error stops the extraction.
struct Workers<'s> {
    tx: std::sync::mpsc::SyncSender<FileJob>,
    failed: &'s std::sync::atomic::AtomicBool,
}

/// Writes one regular file: data, then owner, xattrs, mode and times.
fn write_regular(
    fs: &Fs,
    meta: &mut metadata::MetadataWriter,
    job: &FileJob,
    force: bool,
    buf: &mut [u8],
    progress: &Progress,
) -> anyhow::Result<()> {
    let mut file = create_file(&job.dest, force)?;
    data::copy_data(fs, job.ino, &mut file, buf, progress)
        .with_context(|| format!("writing {}", escape_os(&job.dest)))?;
    meta.apply_file(fs, job.ino, &job.stat, &file, &job.dest)?;
    progress.add_file();
    Ok(())
}

/// Creates `dest` as a new empty file, owner-only. O_EXCL never follows a symlink
/// planted at `dest`; only when something is there already is it looked at (and
/// removed with `force`), so a fresh destination costs one system call per file.
fn create_file(dest: &Path, force: bool) -> anyhow::Result<fs::File> {
    let open = || OpenOptions::new().write(true).create_new(true).mode(0o600).open(dest);
    match open() {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            dest::clear_slot(dest, force)?;
            open()
        }
        r => r,
    }
    .with_context(|| format!("creating {}", escape_os(dest)))
}

/// State of one extraction.
struct Extractor<'a> {
    fs: &'a Fs,
    force: bool,
    /// Files and bytes done, shown on a terminal.
    progress: &'a Progress,
    meta: metadata::MetadataWriter,
    /// Writer of `--fs-config` and `--file-contexts`, when asked for.
    android: Option<android::AndroidWriter>,
    stack: Vec<Task>,
    /// Data buffer reused for every file.
    buf: Vec<u8>,
    /// First host path of each multiply-linked inode, for hard links.
    links: HashMap<Ino, PathBuf>,
    /// Directories entered so far: a corrupt image could loop.
    dirs_seen: HashSet<Ino>,
    /// With worker threads: directories whose metadata waits for them.
    finishes: Vec<(Ino, Box<Stat>, Vec<u8>, PathBuf)>,
}

impl<'a> Extractor<'a> {
    fn new(fs: &'a Fs, force: bool, progress: &'a Progress) -> Extractor<'a> {
        Extractor {
            fs,
            force,
            progress,
            meta: metadata::MetadataWriter::new(),
            android: None,
            stack: Vec::new(),
            buf: vec![0; data::CHUNK_BYTES],
            links: HashMap::new(),
            dirs_seen: HashSet::new(),
            finishes: Vec::new(),
        }
    }

    /// Pops tasks until the stack is empty, with worker threads writing the files.
    fn run(&mut self) -> anyhow::Result<()> {
        let n = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_WORKERS);
        if n <= 1 {
            return self.walk(None);
        }
        let fs = self.fs;
        let force = self.force;
        let progress = self.progress;
        let failed = std::sync::atomic::AtomicBool::new(false);
        let first_error: std::sync::Mutex<Option<anyhow::Error>> = std::sync::Mutex::new(None);
        let (tx, rx) = std::sync::mpsc::sync_channel::<FileJob>(256);
        let rx = std::sync::Mutex::new(rx);
        let walked = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..n)
                .map(|_| {
                    let (rx, failed, first_error) = (&rx, &failed, &first_error);
                    scope.spawn(move || {
                        let mut meta = metadata::MetadataWriter::new();
                        let mut buf = vec![0u8; data::CHUNK_BYTES];
                        loop {
                            let job = match rx.lock().unwrap_or_else(std::sync::PoisonError::into_inner).recv() {
                                Ok(job) => job,
                                Err(_) => break,
                            };
                            if failed.load(std::sync::atomic::Ordering::Relaxed) {
                                continue;
                            }
                            if let Err(e) = write_regular(fs, &mut meta, &job, force, &mut buf, progress) {
                                let e = e.context(escape_bytes(&job.src));
                                failed.store(true, std::sync::atomic::Ordering::Relaxed);
                                first_error
                                    .lock()
                                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                                    .get_or_insert(e);
                            }
                        }
                        meta
                    })
                })
                .collect();
            let walked = self.walk(Some(Workers { tx, failed: &failed }));
            for h in handles {
                match h.join() {
                    Ok(meta) => self.meta.absorb(meta),
                    Err(_) => failed.store(true, std::sync::atomic::Ordering::Relaxed),
                }
            }
            walked
        });
        if let Some(e) = first_error
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            return Err(e);
        }
        walked?;
        if failed.load(std::sync::atomic::Ordering::Relaxed) {
            bail!("a thread writing files failed");
        }
        // Every file is written: now the directories' own metadata, children first.
        for (ino, stat, src, dest) in std::mem::take(&mut self.finishes) {
            self.meta
                .apply(self.fs, ino, &stat, &dest)
                .with_context(|| escape_bytes(&src))?;
        }
        Ok(())
    }

    /// The walk: pops tasks until the stack is empty (or a worker failed). With
    /// `workers`, regular files go to them and directories' metadata waits in
    /// `finishes`; dropping `workers` at the end lets the threads finish.
    fn walk(&mut self, workers: Option<Workers<'_>>) -> anyhow::Result<()> {
        while let Some(task) = self.stack.pop() {
            if workers
                .as_ref()
                .is_some_and(|w| w.failed.load(std::sync::atomic::Ordering::Relaxed))
            {
                return Ok(());
            }
            match task {
                Task::Visit { ino, src, rel, dest } => {
                    self.visit(ino, &src, &rel, dest, workers.as_ref())
                        .with_context(|| escape_bytes(&src))?;
                }
                Task::Finish { ino, stat, src, dest } if workers.is_some() => {
                    self.finishes.push((ino, stat, src, dest));
                }
                Task::Finish { ino, stat, src, dest } => {
                    self.meta
                        .apply(self.fs, ino, &stat, &dest)
                        .with_context(|| escape_bytes(&src))?;
                }
            }
        }
        Ok(())
    }

    /// Copies one inode (a regular file that is not hard-linked goes to `workers`, if
    /// any).
    fn visit(
        &mut self,
        ino: Ino,
        src: &[u8],
        rel: &[u8],
        dest: PathBuf,
        workers: Option<&Workers<'_>>,
    ) -> anyhow::Result<()> {
        let stat = self.fs.stat(ino)?;
        if let Some(android) = &mut self.android {
            android.record(self.fs, ino, &stat, rel)?;
        }
        if stat.kind == FileKind::Dir {
            return self.enter_dir(ino, stat, src, rel, dest);
        }
        if stat.nlink > 1 {
            if let Some(first) = self.links.get(&ino) {
                dest::clear_slot(&dest, self.force)?;
                return fs::hard_link(first, &dest)
                    .with_context(|| format!("linking {} to {}", escape_os(&dest), escape_os(first)));
            }
        }
        if let (FileKind::File, 1, Some(w)) = (stat.kind, stat.nlink, workers) {
            let job = FileJob {
                ino,
                stat: Box::new(stat),
                src: src.to_vec(),
                dest,
            };
            // A send fails only when every worker is gone (one panicked).
            return w
                .tx
                .send(job)
                .map_err(|_| anyhow!("the threads writing files are gone"));
        }
        let created = match stat.kind {
            FileKind::File => self.write_file(ino, &dest).map(|()| true)?,
            FileKind::Symlink => self.write_symlink(ino, &dest).map(|()| true)?,
            _ => self.meta.make_node(&stat, &dest, self.force)?,
        };
        if created {
            self.meta.apply(self.fs, ino, &stat, &dest)?;
            if stat.nlink > 1 {
                self.links.insert(ino, dest);
            }
        }
        self.progress.add_file();
        Ok(())
    }

    /// Creates a directory and schedules its entries, then its own metadata.
    fn enter_dir(&mut self, ino: Ino, stat: Stat, src: &[u8], rel: &[u8], dest: PathBuf) -> anyhow::Result<()> {
        if !self.dirs_seen.insert(ino) {
            bail!("corrupt image: directory inode {ino} reached a second time (directory loop)");
        }
        self.progress.add_file();
        let mut entries = self.fs.read_dir(ino)?;
        for entry in &entries {
            validate_entry_name(&entry.name).map_err(|msg| anyhow!("refusing to extract: {msg}"))?;
        }
        dest::ensure_dir(&dest, self.force)?;
        entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        self.stack.push(Task::Finish {
            ino,
            stat: Box::new(stat),
            src: src.to_vec(),
            dest: dest.clone(),
        });
        // Reversed so entries are extracted in name order.
        for entry in entries.into_iter().rev() {
            let child_dest = dest.join(OsStr::from_bytes(&entry.name));
            let child_src = join_path(src, &entry.name);
            let child_rel = if rel.is_empty() {
                entry.name.clone()
            } else {
                join_path(rel, &entry.name)
            };
            self.stack.push(Task::Visit {
                ino: entry.ino,
                src: child_src,
                rel: child_rel,
                dest: child_dest,
            });
        }
        Ok(())
    }

    /// Creates a regular file with the inode's data (holes stay holes).
    fn write_file(&mut self, ino: Ino, dest: &Path) -> anyhow::Result<()> {
        let mut file = create_file(dest, self.force)?;
        data::copy_data(self.fs, ino, &mut file, &mut self.buf, self.progress)
            .with_context(|| format!("writing {}", escape_os(dest)))
    }

    /// Creates a symlink with the target exactly as stored.
    fn write_symlink(&mut self, ino: Ino, dest: &Path) -> anyhow::Result<()> {
        let target = self.fs.read_link(ino)?;
        dest::clear_slot(dest, self.force)?;
        std::os::unix::fs::symlink(OsStr::from_bytes(&target), dest)
            .with_context(|| format!("creating symlink {} -> {}", escape_os(dest), escape_bytes(&target)))
    }
}
