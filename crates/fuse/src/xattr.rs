//! FUSE's size-probe protocol for `getxattr` and `listxattr`, and the flags of
//! `setxattr`.
//!
//! User space first asks with size 0 to learn how big a buffer it needs, then asks again
//! with a buffer: the reply is the size, the bytes, or `ERANGE` when the buffer is too
//! small (the value may have grown in between).

use fuser::{Errno, ReplyXattr};
use uf2fs_core::{Xattr, XATTR_CREATE, XATTR_REPLACE};

/// The name of the access ACL.
pub(crate) const ACL_ACCESS: &str = "system.posix_acl_access";

/// The core's flags for a `setxattr` with `flags` (`XATTR_CREATE`, `XATTR_REPLACE`) at
/// `position`: any other flag, or a position (macOS resource forks only), is `EINVAL`.
pub(crate) fn set_flags(flags: i32, position: u32) -> Result<u32, Errno> {
    let known = (XATTR_CREATE | XATTR_REPLACE) as i32;
    if position != 0 || flags & !known != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(flags as u32)
}

/// What to answer a `getxattr`/`listxattr` request of buffer size `size`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum XattrAnswer<'a> {
    /// A size probe: the number of bytes the caller needs.
    Size(u32),
    /// The bytes themselves.
    Data(&'a [u8]),
    /// An error (`ERANGE` for a short buffer, `E2BIG` for a value FUSE cannot describe).
    Error(Errno),
}

/// Decide how to answer a request with buffer size `size` for `value`.
pub(crate) fn answer(value: &[u8], size: u32) -> XattrAnswer<'_> {
    let Ok(len) = u32::try_from(value.len()) else {
        return XattrAnswer::Error(Errno::E2BIG);
    };
    if size == 0 {
        XattrAnswer::Size(len)
    } else if len > size {
        XattrAnswer::Error(Errno::ERANGE)
    } else {
        XattrAnswer::Data(value)
    }
}

/// Answer `reply` for `value` under the size-probe rules.
pub(crate) fn send(reply: ReplyXattr, value: &[u8], size: u32) {
    match answer(value, size) {
        XattrAnswer::Size(len) => reply.size(len),
        XattrAnswer::Data(bytes) => reply.data(bytes),
        XattrAnswer::Error(errno) => reply.error(errno),
    }
}

/// The `listxattr` payload: every name followed by a NUL byte.
pub(crate) fn name_list(xattrs: &[Xattr]) -> Vec<u8> {
    let len = xattrs.iter().map(|x| x.name.len() + 1).sum();
    let mut list = Vec::with_capacity(len);
    for xattr in xattrs {
        list.extend_from_slice(&xattr.name);
        list.push(0);
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_zero_is_a_probe() {
        assert_eq!(answer(b"hello", 0), XattrAnswer::Size(5));
        assert_eq!(answer(b"", 0), XattrAnswer::Size(0));
    }

    #[test]
    fn big_enough_buffer_gets_the_data() {
        assert_eq!(answer(b"hello", 5), XattrAnswer::Data(b"hello"));
        assert_eq!(answer(b"hello", 4096), XattrAnswer::Data(b"hello"));
        assert_eq!(answer(b"", 10), XattrAnswer::Data(b""));
    }

    #[test]
    fn short_buffer_is_erange() {
        assert_eq!(answer(b"hello", 4), XattrAnswer::Error(Errno::ERANGE));
        assert_eq!(answer(b"hello", 1), XattrAnswer::Error(Errno::ERANGE));
    }

    #[test]
    fn setxattr_flags_map_to_the_cores() {
        assert_eq!(set_flags(0, 0), Ok(0));
        assert_eq!(set_flags(libc::XATTR_CREATE, 0), Ok(XATTR_CREATE));
        assert_eq!(set_flags(libc::XATTR_REPLACE, 0), Ok(XATTR_REPLACE));
        assert_eq!(set_flags(libc::XATTR_CREATE | libc::XATTR_REPLACE, 0), Ok(3));
        assert_eq!(set_flags(4, 0), Err(Errno::EINVAL));
        assert_eq!(set_flags(0, 1), Err(Errno::EINVAL));
    }

    #[test]
    fn name_list_is_nul_terminated_names() {
        let x = |name: &str| Xattr {
            name: name.as_bytes().to_vec(),
            value: b"v".to_vec(),
        };
        assert_eq!(name_list(&[]), b"");
        assert_eq!(name_list(&[x("user.a"), x("trusted.bc")]), b"user.a\0trusted.bc\0");
    }
}
