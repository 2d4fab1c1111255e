//! SELinux file_contexts (the text form), matched as libselinux's file backend
//! matches it: each line `REGEX [TYPE] LABEL`, REGEX anchored at both ends, TYPE one
//! of `--` (regular file), `-d`, `-l`, `-c`, `-b`, `-p`, `-s` (any type when absent),
//! LABEL a context or `<<none>>` (no label). Specs whose REGEX has no regex
//! metacharacters are exact paths and are tried first; among the specs that match, the
//! last one in the file wins. The compiled `file_contexts.bin` is refused with a
//! message asking for the text form.

use anyhow::{bail, Context};
use regex::bytes::Regex;
use std::path::Path;

/// Magic number at the start of a compiled file_contexts.bin.
const COMPILED_MAGIC: u32 = 0xf97c_ff8a;

#[derive(Debug)]
enum Pattern {
    Exact(Vec<u8>),
    Regex(Regex),
}

#[derive(Debug)]
struct Spec {
    pattern: Pattern,
    /// `S_IFMT` bits the spec is limited to.
    kind: Option<u32>,
    /// `None` for `<<none>>`.
    label: Option<Vec<u8>>,
}

/// A loaded file_contexts file.
#[derive(Debug, Default)]
pub struct FileContexts {
    exact: Vec<Spec>,
    regex: Vec<Spec>,
}

/// Whether libselinux would treat `p` as a regex (it has a metacharacter).
fn has_meta(p: &[u8]) -> bool {
    p.iter().any(|b| b".^$?*+|[({\\".contains(b))
}

fn file_kind(t: &str) -> Option<u32> {
    Some(match t {
        "--" => 0o100000,
        "-d" => 0o040000,
        "-l" => 0o120000,
        "-c" => 0o020000,
        "-b" => 0o060000,
        "-p" => 0o010000,
        "-s" => 0o140000,
        _ => return None,
    })
}

impl FileContexts {
    /// Parses the text of a file_contexts file (named in errors as `shown`).
    pub fn parse(text: &[u8], shown: &str) -> anyhow::Result<FileContexts> {
        if text.len() >= 4 && u32::from_le_bytes(text[..4].try_into().expect("4 bytes")) == COMPILED_MAGIC {
            bail!("{shown} is a compiled file_contexts.bin, which uf2fs does not read: pass the text file_contexts");
        }
        let mut fc = FileContexts::default();
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            let at = || format!("{shown}:{}", n + 1);
            let line = std::str::from_utf8(line).with_context(|| format!("{}: not UTF-8 text", at()))?;
            let t: Vec<&str> = line.split_whitespace().collect();
            if t.is_empty() || t[0].starts_with('#') {
                continue;
            }
            let (re, kind, label) = match t.as_slice() {
                [re, label] => (*re, None, *label),
                [re, ty, label] => {
                    let k = file_kind(ty).with_context(|| format!("{}: unknown file type '{ty}'", at()))?;
                    (*re, Some(k), *label)
                }
                _ => bail!("{}: expected 'REGEX [TYPE] LABEL', found {} fields", at(), t.len()),
            };
            let label = (label != "<<none>>").then(|| label.as_bytes().to_vec());
            let pattern = if has_meta(re.as_bytes()) {
                let r = Regex::new(&format!("^(?:{re})$"))
                    .with_context(|| format!("{}: regex '{re}' does not compile", at()))?;
                Pattern::Regex(r)
            } else {
                Pattern::Exact(re.as_bytes().to_vec())
            };
            let spec = Spec { pattern, kind, label };
            match spec.pattern {
                Pattern::Exact(_) => fc.exact.push(spec),
                Pattern::Regex(_) => fc.regex.push(spec),
            }
        }
        Ok(fc)
    }

    /// Reads and parses `path`.
    pub fn load(path: &Path) -> anyhow::Result<FileContexts> {
        let text = std::fs::read(path).with_context(|| format!("cannot read file_contexts {}", path.display()))?;
        FileContexts::parse(&text, &path.display().to_string())
    }

    /// The label of absolute path `path` of file type `mode & S_IFMT`: `None` when
    /// no spec matches or the matching one says `<<none>>`.
    pub fn lookup(&self, path: &[u8], mode: u32) -> Option<&[u8]> {
        let kind = mode & 0o170000;
        let fits = |s: &&Spec| s.kind.is_none_or(|k| k == kind);
        let hit = self
            .exact
            .iter()
            .rev()
            .filter(fits)
            .find(|s| matches!(&s.pattern, Pattern::Exact(p) if p == path))
            .or_else(|| {
                self.regex
                    .iter()
                    .rev()
                    .filter(fits)
                    .find(|s| matches!(&s.pattern, Pattern::Regex(r) if r.is_match(path)))
            })?;
        hit.label.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &[u8] = b"# comment
/system(/.*)?           u:object_r:system_file:s0
/system/bin/sh      --  u:object_r:shell_exec:s0
/system/bin(/.*)?       u:object_r:system_bin:s0
/system/bin/.*      -l  u:object_r:bin_link:s0
/system/lib             u:object_r:exact_lib:s0
/system/lib(/.*)?       u:object_r:lib_file:s0
/system/none            <<none>>
";

    #[test]
    fn specs_match_as_libselinux_matches_them() {
        let fc = FileContexts::parse(TEXT, "fc").unwrap();
        let l = |p: &str, m: u32| {
            fc.lookup(p.as_bytes(), m)
                .map(|l| String::from_utf8(l.to_vec()).unwrap())
        };
        assert_eq!(l("/system", 0o040755).unwrap(), "u:object_r:system_file:s0");
        assert_eq!(
            l("/system/bin/sh", 0o100755).unwrap(),
            "u:object_r:shell_exec:s0",
            "exact before regex"
        );
        assert_eq!(
            l("/system/bin/sh", 0o120777).unwrap(),
            "u:object_r:bin_link:s0",
            "type field"
        );
        assert_eq!(
            l("/system/bin/ls", 0o100755).unwrap(),
            "u:object_r:system_bin:s0",
            "last match wins"
        );
        assert_eq!(l("/system/lib", 0o040755).unwrap(), "u:object_r:exact_lib:s0");
        assert_eq!(l("/system/xbin", 0o040755).unwrap(), "u:object_r:system_file:s0");
        assert_eq!(l("/vendor", 0o040755), None);
        assert_eq!(l("/system/none", 0o100644), None);
        assert_eq!(l("/systemx", 0o100644), None, "anchored");
    }

    #[test]
    fn bad_files_are_one_line_errors() {
        let e = FileContexts::parse(b"/a(  u:r\n", "fc").unwrap_err().to_string();
        assert!(e.starts_with("fc:1: regex '/a(' does not compile"), "{e}");
        let e = FileContexts::parse(b"/a -x u:r\n", "fc").unwrap_err().to_string();
        assert!(e.contains("unknown file type"), "{e}");
        let mut bin = 0xf97c_ff8au32.to_le_bytes().to_vec();
        bin.extend_from_slice(b"\0\0\0\0");
        let e = FileContexts::parse(&bin, "fc.bin").unwrap_err().to_string();
        assert!(e.contains("pass the text file_contexts"), "{e}");
    }
}
