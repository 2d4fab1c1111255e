//! Casefolded names: how Linux 6.1 F2FS looks names up in a directory with the casefold
//! flag (`F2FS_CASEFOLD_FL`) on a volume with the casefold feature and the
//! `utf8-12.1` encoding (`mkfs.f2fs -O casefold -C utf8`).
//!
//! Linux folds a name with `utf8_casefold` (fs/unicode): the "nfdicf" form of Unicode
//! 12.1, that is canonical decomposition (NFD) after full case folding (CaseFolding.txt
//! statuses C and F), with every Default_Ignorable_Code_Point removed. A removed
//! ignorable still ends a run of combining marks, so marks are never reordered across
//! it ("a◌̈", CGJ, "◌̣" folds to "a◌̈◌̣", "a◌̈◌̣" to "a◌̣◌̈"). Code points Unicode 12.1 has not
//! assigned pass through unchanged and also end such a run. The folded name, when it
//! is valid UTF-8, not empty and at most [`FOLDED_NAME_MAX`] bytes, is what the dentry
//! hash ([`crate::hash::dentry_hash`]) is computed over; the entry keeps the name as
//! given. Two names are the same when their folded forms are equal. A name that cannot
//! be folded (not UTF-8, folding to nothing or to more than 254 bytes) is an opaque byte
//! string: hashed and compared as is, unless the volume has the strict encoding flag
//! ([`SB_ENC_STRICT_MODE_FL`]), where Linux refuses it (EINVAL).
//!
//! Case folding and NFD come from the `caseless` (Unicode 16.0 case folding) and
//! `unicode-normalization` crates; the module `casefold_tables` restricts them to Unicode
//! 12.1 (what they would do to a code point assigned later is not done) and adds the
//! ignorables. Unicode's stability policies keep the folding and decomposition of code
//! points assigned in 12.1 unchanged in later versions.

use crate::casefold_tables::{ASSIGNED_12_1, DEFAULT_IGNORABLE_12_1};
use crate::hash::dentry_hash;
use unicode_normalization::UnicodeNormalization;

/// `s_encoding` of a volume whose names are UTF-8 folded by Unicode 12.1
/// (`F2FS_ENC_UTF8_12_1`), the only encoding Linux and f2fs-tools know.
pub const F2FS_ENC_UTF8_12_1: u16 = 1;
/// `s_encoding_flags` bit: names that cannot be folded are refused (strict mode).
pub const SB_ENC_STRICT_MODE_FL: u16 = 1 << 0;
/// `s_encoding_flags` bit: no linear search of a casefolded directory after its hash
/// lookup misses (newer kernels search linearly unless this is set; Linux 6.1 never
/// does).
pub const SB_ENC_NO_COMPAT_FALLBACK_FL: u16 = 1 << 1;
/// The longest folded name Linux hashes: `utf8_casefold` writes into a buffer of
/// `F2FS_NAME_LEN` bytes that must hold a terminating NUL too.
pub const FOLDED_NAME_MAX: usize = crate::consts::F2FS_NAME_LEN - 1;

fn in_ranges(ranges: &[(u32, u32)], c: char) -> bool {
    let c = c as u32;
    match ranges.binary_search_by(|&(lo, _)| lo.cmp(&c)) {
        Ok(_) => true,
        Err(0) => false,
        Err(i) => c <= ranges[i - 1].1,
    }
}

/// Appends the nfdicf form of `run` (code points assigned in 12.1, none ignorable) to
/// `out`: NFD, full case folding, NFD again (a folding can yield decomposable code
/// points or marks to reorder).
fn fold_run(run: &str, out: &mut String) {
    let folded = caseless::default_case_fold_str(&run.nfd().collect::<String>());
    out.extend(folded.nfd());
}

/// The nfdicf form of `name` with no length limit: `None` when `name` is not UTF-8.
pub fn fold(name: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(name).ok()?;
    let mut out = String::with_capacity(s.len());
    let mut run_start = 0;
    for (i, c) in s.char_indices() {
        let ignorable = in_ranges(DEFAULT_IGNORABLE_12_1, c);
        if ignorable || !in_ranges(ASSIGNED_12_1, c) {
            fold_run(&s[run_start..i], &mut out);
            if !ignorable {
                out.push(c);
            }
            run_start = i + c.len_utf8();
        }
    }
    fold_run(&s[run_start..], &mut out);
    Some(out)
}

/// Linux's `utf8_casefold` into F2FS's buffer: the folded form of `name` when it is
/// UTF-8 and folds to 1 to [`FOLDED_NAME_MAX`] bytes, else `None` (the name is then
/// an opaque byte string).
pub fn casefold(name: &[u8]) -> Option<Vec<u8>> {
    let f = fold(name)?;
    (!f.is_empty() && f.len() <= FOLDED_NAME_MAX).then(|| f.into_bytes())
}

/// A name to find in (or add to) one directory, as the directory compares names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirName<'a> {
    /// Compared byte for byte (a directory without the casefold flag, "." and "..",
    /// or a name that cannot be folded).
    Exact(&'a [u8]),
    /// The name given and its folded form; entries match by folded form.
    Folded {
        /// The name as given (what a new entry stores).
        name: &'a [u8],
        /// Its folded form (what the hash is computed over).
        folded: Vec<u8>,
    },
}

/// A name Linux refuses in a casefolded directory of a strict-encoding volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidName;

impl<'a> DirName<'a> {
    /// How a directory compares `name`: `casefolded` is the directory's casefold flag
    /// (on a volume with the casefold feature), `strict` the volume's
    /// [`SB_ENC_STRICT_MODE_FL`]. A strict volume refuses names that cannot be folded.
    pub fn new(name: &'a [u8], casefolded: bool, strict: bool) -> Result<DirName<'a>, InvalidName> {
        if !casefolded || name == b"." || name == b".." {
            return Ok(DirName::Exact(name));
        }
        match casefold(name) {
            Some(folded) => Ok(DirName::Folded { name, folded }),
            None if strict => Err(InvalidName),
            None => Ok(DirName::Exact(name)),
        }
    }

    /// The name as given.
    pub fn name(&self) -> &'a [u8] {
        match self {
            DirName::Exact(n) | DirName::Folded { name: n, .. } => n,
        }
    }

    /// The hash its dentry carries (`f2fs_dentry_hash` of the folded form, or of the
    /// bytes when not folded).
    pub fn hash(&self) -> u32 {
        match self {
            DirName::Exact(n) => dentry_hash(n),
            DirName::Folded { folded, .. } => dentry_hash(folded),
        }
    }

    /// Whether a dentry named `entry` is this name: equal bytes, or equal folded forms
    /// (an entry that is not UTF-8 never equals a folded name).
    pub fn matches(&self, entry: &[u8]) -> bool {
        match self {
            DirName::Exact(n) => *n == entry,
            DirName::Folded { folded, .. } => fold(entry).is_some_and(|f| f.as_bytes() == folded.as_slice()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(s: &str) -> String {
        fold(s.as_bytes()).unwrap()
    }

    #[test]
    fn folds_as_linux_6_1() {
        assert_eq!(f("Straße"), "strasse");
        assert_eq!(f("ẞ"), "ss");
        assert_eq!(f("ǅ"), "ǆ");
        assert_eq!(f("Ǆ"), "ǆ");
        assert_eq!(f("İstanbul"), "i\u{307}stanbul");
        assert_eq!(f("café"), "cafe\u{301}");
        assert_eq!(f("\u{212A}"), "k");
        assert_eq!(f("\u{212B}"), "a\u{30A}");
        assert_eq!(f("ΣΊΣΥΦΟΣ"), f("σίσυφος"));
        assert_eq!(f("한"), "\u{1112}\u{1161}\u{11AB}");
        // Marks in canonical order; an ignorable is dropped but still blocks reordering.
        assert_eq!(f("a\u{308}\u{323}"), "a\u{323}\u{308}");
        assert_eq!(f("a\u{308}\u{34F}\u{323}"), "a\u{308}\u{323}");
        assert_eq!(f("zero\u{200B}width"), "zerowidth");
        // Assigned after 12.1 (U+A7C0, Unicode 14): Linux 6.1 leaves it as it is.
        assert_eq!(f("\u{A7C0}X"), "\u{A7C0}x");
        // Unassigned marks end a run as Linux's ccc 0 does.
        assert_eq!(f("a\u{308}\u{0378}\u{323}"), "a\u{308}\u{378}\u{323}");
        assert_eq!(fold(b"bad-\xff"), None);
    }

    #[test]
    fn casefold_limits() {
        assert_eq!(casefold("\u{200B}".as_bytes()), None);
        let long = "ΐ".repeat(100); // 200 bytes, folds to 600
        assert_eq!(casefold(long.as_bytes()), None);
        assert!(casefold("ß".repeat(127).as_bytes()).is_some()); // 254 bytes folded
        assert_eq!(casefold(format!("{}s", "ß".repeat(127)).as_bytes()), None); // 255
    }

    #[test]
    fn dir_names() {
        let n = DirName::new("Straße".as_bytes(), true, false).unwrap();
        assert!(n.matches(b"STRASSE"));
        assert!(!n.matches(b"STRASSE\xff"));
        assert_eq!(n.hash(), dentry_hash(b"strasse"));
        assert_eq!(DirName::new(b"bad\xff", true, false), Ok(DirName::Exact(b"bad\xff")));
        assert_eq!(DirName::new(b"bad\xff", true, true), Err(InvalidName));
        assert_eq!(DirName::new(b"..", true, true), Ok(DirName::Exact(b"..")));
        let plain = DirName::new("Straße".as_bytes(), false, true).unwrap();
        assert!(!plain.matches(b"STRASSE"));
    }

    #[test]
    fn tables_are_sorted_and_disjoint() {
        for t in [ASSIGNED_12_1, DEFAULT_IGNORABLE_12_1] {
            assert!(t.windows(2).all(|w| w[0].1 < w[1].0) && t.iter().all(|r| r.0 <= r.1));
        }
    }
}
