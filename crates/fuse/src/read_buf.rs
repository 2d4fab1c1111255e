//! A reusable per-thread buffer for file reads, so serving a READ allocates nothing once a
//! worker thread has seen its largest request.

use std::cell::RefCell;

/// Largest READ served in one reply. The kernel never asks for more than
/// `max_pages * PAGE_SIZE`, which fuser bounds by its 16 MiB maximum write size.
pub(crate) const READ_MAX: usize = 16 << 20;

thread_local! {
    /// This worker thread's read buffer; grows to the largest request seen, up to READ_MAX.
    static READ_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Run `f` with a buffer of `len` bytes (clamped to [`READ_MAX`]) from this thread's pool.
/// The buffer's contents are unspecified; `f` must not call `with_buffer` itself.
pub(crate) fn with_buffer<R>(len: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
    let len = len.min(READ_MAX);
    READ_BUF.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() < len {
                buf.resize(len, 0);
            }
            f(&mut buf[..len])
        }
        // Re-entered (not expected): fall back to a fresh buffer rather than panic.
        Err(_) => f(&mut vec![0; len]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_has_requested_length_and_is_reused() {
        let first = with_buffer(8192, |buf| {
            assert_eq!(buf.len(), 8192);
            buf.as_ptr() as usize
        });
        let second = with_buffer(100, |buf| {
            assert_eq!(buf.len(), 100);
            buf.as_ptr() as usize
        });
        assert_eq!(first, second);
    }

    #[test]
    fn requests_are_clamped() {
        with_buffer(READ_MAX + 1, |buf| assert_eq!(buf.len(), READ_MAX));
    }

    #[test]
    fn reentry_does_not_panic() {
        with_buffer(16, |outer| {
            with_buffer(32, |inner| assert_eq!((outer.len(), inner.len()), (16, 32)))
        });
    }
}
