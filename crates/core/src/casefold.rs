//! Which name rules a directory follows: exact bytes, or Linux's casefolded names
//! ([`uf2fs_format::casefold`]) in a directory with the casefold flag on a volume with
//! the casefold feature. Every lookup, the read-only [`crate::Fs::lookup`] and the
//! namespace operations' `namei::dentry::find`, goes through [`dir_name`]; see
//! docs/casefold.md.

use crate::{Error, Ino, Result};
use uf2fs_format::casefold::{DirName, F2FS_ENC_UTF8_12_1, SB_ENC_NO_COMPAT_FALLBACK_FL, SB_ENC_STRICT_MODE_FL};
use uf2fs_format::node::Inode;
use uf2fs_format::superblock::{Superblock, FEATURE_CASEFOLD};

/// Refuses a casefolded directory uf2fs cannot fold names of: the volume lacks the
/// casefold feature (Linux 6.1 would fold with no encoding loaded; newer kernels call
/// such an inode corrupt) or names an encoding other than UTF-8 12.1 (Linux refuses to
/// mount it).
fn check_encoding(sb: &Superblock, dir: Ino) -> Result<()> {
    if !sb.has(FEATURE_CASEFOLD) {
        return Err(Error::corrupt(
            format!("directory inode {dir}"),
            None,
            "it has the casefold flag but the volume has no casefold feature",
        ));
    }
    if sb.s_encoding != F2FS_ENC_UTF8_12_1 {
        return Err(Error::Unsupported {
            feature: "casefold",
            detail: format!("name encoding {} (uf2fs knows utf8-12.1 only)", sb.s_encoding),
        });
    }
    Ok(())
}

/// `name` as directory `dir` (inode `ino`) compares it. In a casefolded directory of a
/// strict-encoding volume a name that cannot be folded is [`Error::Invalid`] (EINVAL,
/// as Linux answers).
pub(crate) fn dir_name<'a>(sb: &Superblock, dir: &Inode, ino: Ino, name: &'a [u8]) -> Result<DirName<'a>> {
    let casefolded = dir.is_casefold();
    if casefolded {
        check_encoding(sb, ino)?;
    }
    let strict = sb.s_encoding_flags & SB_ENC_STRICT_MODE_FL != 0;
    DirName::new(name, casefolded, strict).map_err(|_| {
        Error::Invalid(format!(
            "{:?} is not a valid UTF-8 name for casefolded directory inode {ino} (strict encoding)",
            crate::error::show_name(name)
        ))
    })
}

/// Whether a lookup that missed through the hash levels of `dir` searches every entry
/// again, as newer kernels do for casefolded directories (whose stored hashes another
/// folding may have computed) unless the volume sets `SB_ENC_NO_COMPAT_FALLBACK_FL`.
/// Linux 6.1 does not; uf2fs does, so that it finds every name Linux 6.1 or newer
/// kernels find.
pub(crate) fn linear_fallback(sb: &Superblock, dir: &Inode) -> bool {
    dir.is_casefold() && sb.s_encoding_flags & SB_ENC_NO_COMPAT_FALLBACK_FL == 0
}
