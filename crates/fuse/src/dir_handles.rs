//! Open directory streams: a snapshot of the listing per `opendir`, read by offset.
//!
//! `readdir` may be resumed at any offset the kernel saw (after a short buffer, a
//! `seekdir`, or a `telldir` from user space). Each handle therefore freezes the listing
//! when the stream starts (the first read at offset 0, taken again at every read from
//! offset 0, which a `rewinddir` makes): entry `i` of the snapshot carries offset `i + 1`, the position of the entry
//! after it, so resuming at offset `k` continues with entry `k` and every entry is listed
//! exactly once. A snapshot holds one [`DirEntry`] per name in the directory plus "." and
//! "..": its size is bounded by the directory's own.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use fuser::{Errno, FileHandle};
use uf2fs_core::{DirEntry, FileKind, Ino};

/// The listing of one directory as it was at `opendir`.
#[derive(Debug)]
pub(crate) struct DirSnapshot {
    /// The directory listed.
    dir: Ino,
    /// ".", "..", then the directory's entries in on-disk order.
    entries: Vec<DirEntry>,
}

impl DirSnapshot {
    /// Snapshot of directory `dir` whose parent is `parent`, with `entries` from
    /// `Fs::read_dir` (which never contains "." or "..").
    pub(crate) fn new(dir: Ino, parent: Ino, entries: Vec<DirEntry>) -> DirSnapshot {
        let dot = |name: &[u8], ino| DirEntry {
            name: name.to_vec(),
            ino,
            kind: FileKind::Dir,
        };
        let mut all = Vec::with_capacity(entries.len() + 2);
        all.push(dot(b".", dir));
        all.push(dot(b"..", parent));
        all.extend(entries);
        DirSnapshot { dir, entries: all }
    }

    /// The directory listed.
    pub(crate) fn dir(&self) -> Ino {
        self.dir
    }

    /// Entries from readdir offset `offset` on, each with the offset that resumes after it.
    pub(crate) fn entries_from(&self, offset: u64) -> impl Iterator<Item = (u64, &DirEntry)> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        self.entries
            .iter()
            .enumerate()
            .skip(start)
            .map(|(index, entry)| (index as u64 + 1, entry))
    }

    /// Number of entries including "." and "..".
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Most directory streams open at once; `opendir` beyond it fails with `EMFILE`.
pub(crate) const OPEN_DIRS_MAX: usize = 1 << 16;

/// Table of open directory handles.
#[derive(Debug)]
pub(crate) struct DirHandles {
    /// Next handle to give out; handles are never reused while the mount lives.
    next: AtomicU64,
    /// Open handles and their snapshots.
    open: Mutex<HashMap<u64, Arc<DirSnapshot>>>,
    /// Bound on `open.len()`.
    open_max: usize,
}

impl DirHandles {
    /// An empty table admitting up to `open_max` open streams.
    pub(crate) fn new(open_max: usize) -> DirHandles {
        DirHandles {
            next: AtomicU64::new(1),
            open: Mutex::new(HashMap::new()),
            open_max,
        }
    }

    /// Register `snapshot` and return its handle.
    pub(crate) fn insert(&self, snapshot: DirSnapshot) -> Result<FileHandle, Errno> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.len() >= self.open_max {
            return Err(Errno::EMFILE);
        }
        let fh = self.next.fetch_add(1, Ordering::Relaxed);
        open.insert(fh, Arc::new(snapshot));
        Ok(FileHandle(fh))
    }

    /// The snapshot of handle `fh`; `EBADF` if it is not open.
    pub(crate) fn get(&self, fh: FileHandle) -> Result<Arc<DirSnapshot>, Errno> {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    /// Puts `snapshot` in place of handle `fh`'s (the stream started over); returns
    /// it. `EBADF` if `fh` is not open.
    pub(crate) fn replace(&self, fh: FileHandle, snapshot: DirSnapshot) -> Result<Arc<DirSnapshot>, Errno> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = open.get_mut(&fh.0).ok_or(Errno::EBADF)?;
        *slot = Arc::new(snapshot);
        Ok(slot.clone())
    }

    /// Forget handle `fh` (releasedir). Unknown handles are ignored.
    pub(crate) fn remove(&self, fh: FileHandle) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.remove(&fh.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, ino: Ino) -> DirEntry {
        DirEntry {
            name: name.as_bytes().to_vec(),
            ino,
            kind: FileKind::File,
        }
    }

    fn snapshot(n: u32) -> DirSnapshot {
        let entries = (0..n).map(|i| entry(&format!("f{i}"), 100 + i)).collect();
        DirSnapshot::new(10, 3, entries)
    }

    fn names(items: &[(u64, &DirEntry)]) -> Vec<String> {
        items
            .iter()
            .map(|(_, e)| String::from_utf8_lossy(&e.name).into_owned())
            .collect()
    }

    #[test]
    fn dot_entries_come_first() {
        let snap = snapshot(2);
        let all: Vec<_> = snap.entries_from(0).collect();
        assert_eq!(names(&all), [".", "..", "f0", "f1"]);
        assert_eq!((all[0].1.ino, all[1].1.ino), (10, 3));
        assert_eq!(all.iter().map(|(off, _)| *off).collect::<Vec<_>>(), [1, 2, 3, 4]);
    }

    #[test]
    fn resuming_at_any_offset_continues_after_that_entry() {
        let snap = snapshot(50);
        let all: Vec<_> = snap.entries_from(0).collect();
        for (i, (next, _)) in all.iter().enumerate() {
            let rest: Vec<_> = snap.entries_from(*next).collect();
            assert_eq!(names(&rest), names(&all[i + 1..]));
        }
    }

    #[test]
    fn chunked_listing_yields_every_entry_once() {
        let snap = snapshot(5000);
        let mut seen = Vec::new();
        let mut offset = 0;
        loop {
            let chunk: Vec<_> = snap.entries_from(offset).take(37).collect();
            let Some((last, _)) = chunk.last() else { break };
            offset = *last;
            seen.extend(names(&chunk));
        }
        assert_eq!(seen.len(), snap.len());
        let mut sorted = seen.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), seen.len());
    }

    #[test]
    fn offsets_past_the_end_are_empty() {
        let snap = snapshot(3);
        assert_eq!(snap.entries_from(5).count(), 0);
        assert_eq!(snap.entries_from(u64::MAX).count(), 0);
    }

    #[test]
    fn handles_open_get_release() {
        let table = DirHandles::new(2);
        let a = table.insert(snapshot(1)).unwrap();
        let b = table.insert(snapshot(2)).unwrap();
        assert_ne!(a, b);
        assert_eq!(table.insert(snapshot(0)).unwrap_err(), Errno::EMFILE);
        assert_eq!(table.get(b).unwrap().len(), 4);
        table.remove(a);
        assert_eq!(table.get(a).unwrap_err(), Errno::EBADF);
        let c = table.insert(snapshot(0)).unwrap();
        assert!(c != a && c != b, "handles are not reused");
    }
}
