//! File names and paths inside an image: validation, joining and escaping for messages.
//!
//! Names in an F2FS image are raw bytes. They reach stdout unchanged (`ls`), but every
//! message on stderr escapes them so a hostile name cannot forge extra lines.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;

/// Escapes bytes for a one-line message: valid UTF-8 text stays readable, control
/// characters and invalid bytes become `\xNN` (or `\u{..}`), and `\` becomes `\\`.
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                c if c.is_control() && (c as u32) < 0x100 => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                c if c.is_control() => {
                    let _ = write!(out, "\\u{{{:x}}}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// [`escape_bytes`] for a host or image path given as an `OsStr` or `Path`.
pub fn escape_os(s: impl AsRef<OsStr>) -> String {
    escape_bytes(s.as_ref().as_bytes())
}

/// Checks that a directory entry's name is safe to use as one host path component.
///
/// A corrupt or malicious image may hold names that are empty, contain `/` or NUL, or
/// are `.` or `..`; creating any of them could write outside the destination.
pub fn validate_entry_name(name: &[u8]) -> Result<(), String> {
    let problem = if name.is_empty() {
        "is empty"
    } else if name == b"." || name == b".." {
        "is a reserved name"
    } else if name.contains(&b'/') {
        "contains '/'"
    } else if name.contains(&0) {
        "contains a NUL byte"
    } else {
        return Ok(());
    };
    Err(format!("unsafe entry name \"{}\" {problem}", escape_bytes(name)))
}

/// The absolute in-image path for a command-line argument: a relative path is taken
/// from the image's root, and an empty argument means the root.
pub fn image_path(arg: &OsStr) -> Vec<u8> {
    let bytes = arg.as_bytes();
    if bytes.first() == Some(&b'/') {
        bytes.to_vec()
    } else {
        let mut path = Vec::with_capacity(bytes.len() + 1);
        path.push(b'/');
        path.extend_from_slice(bytes);
        path
    }
}

/// Joins a directory path and an entry name with exactly one `/` between them, the way
/// `ls -R` spells subdirectory headers (`/` + `a` is `/a`, `d/` + `a` is `d/a`).
pub fn join_path(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut path = Vec::with_capacity(dir.len() + name.len() + 1);
    path.extend_from_slice(dir);
    if !dir.ends_with(b"/") {
        path.push(b'/');
    }
    path.extend_from_slice(name);
    path
}

/// The last component of a path, ignoring trailing slashes (`/a/b/` gives `b`).
/// Empty for the root.
pub fn base_name(path: &[u8]) -> &[u8] {
    let trimmed = match path.iter().rposition(|&b| b != b'/') {
        Some(last) => &path[..=last],
        None => return &[],
    };
    match trimmed.iter().rposition(|&b| b == b'/') {
        Some(slash) => &trimmed[slash + 1..],
        None => trimmed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_names_are_refused() {
        for bad in [&b""[..], b".", b"..", b"a/b", b"/", b"..//x", b"a\0b"] {
            assert!(validate_entry_name(bad).is_err(), "{bad:?}");
        }
        for good in [&b"a"[..], b"...", b".hidden", b"..x", b"a b", b"\xff\xfe", b"x\ny"] {
            assert!(validate_entry_name(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn error_names_the_entry_on_one_line() {
        let err = validate_entry_name(b"../etc\n/passwd").unwrap_err();
        assert!(err.contains("../etc\\x0a/passwd"), "{err}");
        assert!(!err.contains('\n'));
    }

    #[test]
    fn escaping() {
        assert_eq!(escape_bytes(b"plain caf\xc3\xa9"), "plain café");
        assert_eq!(escape_bytes(b"a\nb\tc"), "a\\x0ab\\x09c");
        assert_eq!(escape_bytes(b"\xff\\"), "\\xff\\\\");
        assert_eq!(escape_bytes("\u{2028}x".as_bytes()), "\u{2028}x");
        assert_eq!(escape_bytes("\u{85}".as_bytes()), "\\x85");
    }

    #[test]
    fn paths() {
        assert_eq!(image_path(OsStr::new("a/b")), b"/a/b");
        assert_eq!(image_path(OsStr::new("/a")), b"/a");
        assert_eq!(image_path(OsStr::new("")), b"/");
        assert_eq!(join_path(b"/", b"a"), b"/a");
        assert_eq!(join_path(b"/d", b"a"), b"/d/a");
        assert_eq!(join_path(b"d/", b"a"), b"d/a");
        assert_eq!(base_name(b"/a/b"), b"b");
        assert_eq!(base_name(b"/a/b//"), b"b");
        assert_eq!(base_name(b"b"), b"b");
        assert_eq!(base_name(b"/"), b"");
        assert_eq!(base_name(b""), b"");
    }
}
