//! A memory device for tests that asks, during a flush, whether the file system
//! still serves operations (test builds only).

use super::{BlockDevice, MemDevice};
use crate::mkfs::{mem_image, MkfsOptions};
use crate::{Fs, OpenOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

/// A memory device whose first flush after [`FlushProbe::arm`] checks whether an
/// operation on another thread can run during it: it creates a file named
/// [`FlushProbe::NAME`] in the root and waits up to 2 s for that to return.
pub(crate) struct FlushProbe {
    inner: MemDevice,
    fs: Arc<OnceLock<Weak<Fs>>>,
    armed: Arc<AtomicBool>,
    ran: Arc<Mutex<Option<bool>>>,
}

/// The test's handle on a [`FlushProbe`]'s file system.
pub(crate) struct Probed {
    pub(crate) fs: Arc<Fs>,
    armed: Arc<AtomicBool>,
    ran: Arc<Mutex<Option<bool>>>,
}

impl FlushProbe {
    /// The file the probe creates.
    pub(crate) const NAME: &'static [u8] = b"during-the-flush";

    /// A fresh read-write file system of `bytes` on a probe device.
    pub(crate) fn fs(bytes: u64) -> Probed {
        let image = mem_image(&MkfsOptions::default(), bytes);
        let slot = Arc::new(OnceLock::new());
        let armed = Arc::new(AtomicBool::new(false));
        let ran = Arc::new(Mutex::new(None));
        let dev = FlushProbe {
            inner: MemDevice::new(image),
            fs: slot.clone(),
            armed: armed.clone(),
            ran: ran.clone(),
        };
        let fs = Arc::new(Fs::open_device_with(Box::new(dev), "probe", OpenOptions { read_write: true }).unwrap());
        slot.set(Arc::downgrade(&fs)).unwrap();
        Probed { fs, armed, ran }
    }
}

impl Probed {
    /// Probes the next flush (or stops waiting for one, with `false`).
    pub(crate) fn arm(&self, on: bool) {
        self.armed.store(on, Ordering::SeqCst);
    }

    /// Whether the operation ran during the probed flush; `None` before one.
    pub(crate) fn ran(&self) -> Option<bool> {
        *self.ran.lock().unwrap()
    }
}

impl BlockDevice for FlushProbe {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> crate::Result<()> {
        self.inner.read_blocks(blkaddr, buf)
    }
    fn block_count(&self) -> u64 {
        self.inner.block_count()
    }
    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> crate::Result<()> {
        self.inner.write_blocks(blkaddr, buf)
    }
    fn flush(&self) -> crate::Result<()> {
        if self.armed.swap(false, Ordering::SeqCst) {
            let fs = self.fs.get().and_then(Weak::upgrade).expect("the file system");
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                let root = fs.root();
                let r = fs.create(root, FlushProbe::NAME, 0o644, 0, 0);
                let _ = tx.send(r.is_ok());
            });
            let ran = rx.recv_timeout(Duration::from_secs(2)).unwrap_or(false);
            *self.ran.lock().unwrap() = Some(ran);
        }
        self.inner.flush()
    }
}
