//! Time conversions between FUSE's `SystemTime`s and core [`Timestamp`]s, before 1970
//! included.

use std::time::SystemTime;

use fuser::TimeOrNow;
use uf2fs_core::Timestamp;

/// A core timestamp for a system time; times before 1970 are clamped to it (F2FS
/// stores unsigned seconds).
pub(crate) fn timestamp(t: SystemTime) -> Timestamp {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(since) => Timestamp {
            secs: i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
            nsecs: since.subsec_nanos(),
        },
        // Before 1970: whole seconds down, nanoseconds up (as `struct timespec`).
        Err(e) => {
            let before = e.duration();
            let secs = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
            match before.subsec_nanos() {
                0 => Timestamp { secs: -secs, nsecs: 0 },
                n => Timestamp {
                    secs: -secs - 1,
                    nsecs: 1_000_000_000 - n,
                },
            }
        }
    }
}

/// A core timestamp for a `utimensat` time, `UTIME_NOW` being the current time.
pub(crate) fn timestamp_or_now(t: TimeOrNow) -> Timestamp {
    match t {
        TimeOrNow::SpecificTime(t) => request_timestamp(t),
        TimeOrNow::Now => timestamp(SystemTime::now()),
    }
}

/// The time a SETATTR request carried, from fuser's `SystemTime` of it. fuser 0.18
/// builds that as `UNIX_EPOCH - (|secs| s + nsecs ns)` for negative seconds, where the
/// kernel's `(secs, nsecs)` means `secs + nsecs ns` (`struct timespec`): a time half a
/// second before 1970, `(-1, 500000000)`, arrives as 1.5 s before. Undone here; whole
/// seconds are unaffected. (The mount test `times_before_1970_survive` notices when
/// fuser changes this.)
fn request_timestamp(t: SystemTime) -> Timestamp {
    let ts = timestamp(t);
    if ts.secs < 0 && ts.nsecs != 0 {
        // timestamp() gave (-S - 1, 1e9 - n) for what the kernel sent as (-S, n).
        Timestamp {
            secs: ts.secs + 1,
            nsecs: 1_000_000_000 - ts.nsecs,
        }
    } else {
        ts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times_before_1970_keep_their_sign() {
        let at = |t: SystemTime| {
            let ts = timestamp(t);
            (ts.secs, ts.nsecs)
        };
        let epoch = SystemTime::UNIX_EPOCH;
        assert_eq!(at(epoch + Duration::new(5, 7)), (5, 7));
        assert_eq!(at(epoch), (0, 0));
        assert_eq!(at(epoch - Duration::from_secs(315_619_140)), (-315_619_140, 0));
        assert_eq!(at(epoch - Duration::from_millis(1500)), (-2, 500_000_000));
        // And back, as the attributes show them.
        let t = epoch - Duration::from_millis(1500);
        assert_eq!(crate::attr::system_time(timestamp(t)), t);
        // A request's (-1, 500000000), which fuser hands over as 1.5 s before 1970.
        let ts = request_timestamp(epoch - Duration::from_millis(1500));
        assert_eq!((ts.secs, ts.nsecs), (-1, 500_000_000));
        let ts = request_timestamp(epoch - Duration::from_secs(7));
        assert_eq!((ts.secs, ts.nsecs), (-7, 0));
    }
}
