//! The one place where core errors become errnos for the kernel.

use fuser::Errno;

/// The errno FUSE replies for a core error: `uf2fs_core::Error::errno`, the mapping every
/// front end shares.
pub(crate) fn errno(err: &uf2fs_core::Error) -> Errno {
    Errno::from_i32(err.errno())
}

/// `Result` adapter: core errors to errnos.
pub(crate) trait OrErrno<T> {
    /// Map the error through [`errno`].
    fn or_errno(self) -> Result<T, Errno>;
}

impl<T> OrErrno<T> for uf2fs_core::Result<T> {
    fn or_errno(self) -> Result<T, Errno> {
        self.map_err(|err| errno(&err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uf2fs_core::Error;

    #[test]
    fn core_errors_keep_their_errno() {
        assert_eq!(errno(&Error::NotFound("x".into())), Errno::ENOENT);
        assert_eq!(errno(&Error::NotDir("x".into())), Errno::ENOTDIR);
        assert_eq!(errno(&Error::corrupt("inode 5", Some(9), "bad")).code(), 117);
        let io = Error::Io {
            context: "read".into(),
            source: std::io::Error::other("x"),
        };
        assert_eq!(errno(&io), Errno::EIO);
    }
}
