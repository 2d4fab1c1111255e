//! Which files a read-write mount compresses and how: the mount options
//! `compress_algorithm=`, `compress_log_size=`, `compress_chksum`, `compress_mode=`,
//! `compress_extension=` and `nocompress_extension=` ([`CompressOptions`], parsed and
//! checked as Linux's `parse_options` checks them), the settings a new file takes at
//! create (F2FS's `set_compress_new_inode`: [`CompressOptions::for_new_file`]), and
//! the files `F2FS_IOC_COMPRESS_FILE` turned compression on for under
//! `compress_mode=user` (the kernel's in-memory `FI_ENABLE_COMPRESS`).

use super::encode::ClusterCodec;
use crate::{Error, Ino, Result};
use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};
use uf2fs_format::node::{compress_algorithm as alg, MIN_COMPRESS_LOG_SIZE};

/// Most extensions `compress_extension=` (and, apart, `nocompress_extension=`) take
/// (`COMPRESS_EXT_NUM`).
pub const COMPRESS_EXT_NUM: usize = 16;
/// Extensions are shorter than this (`F2FS_EXTENSION_LEN`, the terminating zero
/// included).
pub const EXTENSION_LEN: usize = 8;

/// `compress_mode=`: who decides when clusters are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CompressMode {
    /// `fs` (the default): writeback compresses every compressed file's clusters.
    #[default]
    Fs,
    /// `user`: clusters stay plain unless `F2FS_IOC_COMPRESS_FILE` asked for the
    /// file to be compressed.
    User,
}

impl CompressMode {
    /// The option's value.
    pub fn name(self) -> &'static str {
        match self {
            CompressMode::Fs => "fs",
            CompressMode::User => "user",
        }
    }
}

/// The compression mount options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressOptions {
    /// `compress_algorithm=`, `compress_log_size=`, `compress_chksum`: the settings
    /// new compressed files take.
    pub codec: ClusterCodec,
    /// `compress_mode=`.
    pub mode: CompressMode,
    /// `compress_extension=` (each option adds one; `*` means every file).
    pub extensions: Vec<String>,
    /// `nocompress_extension=`.
    pub noextensions: Vec<String>,
}

impl Default for CompressOptions {
    /// The kernel's defaults: LZ4, clusters of 4 blocks, no checksums, `fs` mode.
    fn default() -> CompressOptions {
        CompressOptions {
            codec: ClusterCodec::new(alg::LZ4, 0, MIN_COMPRESS_LOG_SIZE, false).expect("the kernel's defaults"),
            mode: CompressMode::Fs,
            extensions: Vec::new(),
            noextensions: Vec::new(),
        }
    }
}

/// Whether file name `name` has extension `ext` as F2FS's `is_extension_exist`
/// decides it for compression: `*` matches every name; otherwise the name ends with
/// `.` and the extension (case-insensitively) after at least one other byte.
pub fn has_extension(name: &[u8], ext: &[u8]) -> bool {
    if ext == b"*" {
        return true;
    }
    if ext.is_empty() || name.len() < ext.len() + 2 {
        return false;
    }
    let at = name.len() - ext.len();
    name[at - 1] == b'.' && name[at..].eq_ignore_ascii_case(ext)
}

impl CompressOptions {
    /// Applies one compression mount option, as Linux's `parse_options` reads it:
    /// `name` is the option's name, `value` what follows `=` (`None` for the flag
    /// `compress_chksum`). Returns false for an option that is not a compression one;
    /// values Linux refuses are [`Error::Invalid`] with the reason.
    pub fn set_option(&mut self, name: &str, value: Option<&str>) -> Result<bool> {
        let c = self.codec;
        match (name, value) {
            ("compress_chksum", None) => {
                self.codec = ClusterCodec::new(c.algorithm(), c.level(), c.log_cluster_size(), true)?
            }
            ("compress_algorithm", Some(v)) => {
                // Linux spells LZ4HC as "lz4:LEVEL"; "lz4hc" alone is uf2fs's
                // convenience (LZ4HC's default level).
                self.codec = ClusterCodec::parse(v, c.log_cluster_size(), c.checksum())?;
            }
            ("compress_log_size", Some(v)) => {
                let log: u8 = v
                    .parse()
                    .map_err(|_| Error::Invalid(format!("compress_log_size '{v}' is not a number")))?;
                self.codec = ClusterCodec::new(c.algorithm(), c.level(), log, c.checksum())?;
            }
            ("compress_mode", Some("fs")) => self.mode = CompressMode::Fs,
            ("compress_mode", Some("user")) => self.mode = CompressMode::User,
            ("compress_mode", Some(v)) => {
                return Err(Error::Invalid(format!("compress_mode '{v}': fs or user")));
            }
            ("compress_extension" | "nocompress_extension", Some(v)) => {
                let list = if name == "compress_extension" {
                    &mut self.extensions
                } else {
                    &mut self.noextensions
                };
                if v.is_empty() || v.len() >= EXTENSION_LEN {
                    return Err(Error::Invalid(format!(
                        "{name} '{v}': an extension has 1 to {} bytes",
                        EXTENSION_LEN - 1
                    )));
                }
                if list.len() >= COMPRESS_EXT_NUM {
                    return Err(Error::Invalid(format!("{name}: at most {COMPRESS_EXT_NUM} extensions")));
                }
                list.push(v.to_string());
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The checks Linux makes once every option is read (`f2fs_test_compress_extension`):
    /// `nocompress_extension=*` is refused, and so is an extension in both lists.
    pub fn check(&self) -> Result<()> {
        for no in &self.noextensions {
            if no == "*" {
                return Err(Error::Invalid(
                    "nocompress_extension=* is refused: it would name every file".into(),
                ));
            }
            if let Some(e) = self.extensions.iter().find(|e| e.eq_ignore_ascii_case(no)) {
                return Err(Error::Invalid(format!(
                    "extension '{e}' is in both compress_extension and nocompress_extension"
                )));
            }
        }
        Ok(())
    }

    /// The options as Linux's `/proc/mounts` shows them (the non-default ones and the
    /// algorithm), comma-separated.
    pub fn describe(&self) -> String {
        let mut out = vec![format!("compress_algorithm={}", self.codec.name())];
        out.push(format!("compress_log_size={}", self.codec.log_cluster_size()));
        if self.codec.checksum() {
            out.push("compress_chksum".into());
        }
        out.push(format!("compress_mode={}", self.mode.name()));
        out.extend(self.extensions.iter().map(|e| format!("compress_extension={e}")));
        out.extend(self.noextensions.iter().map(|e| format!("nocompress_extension={e}")));
        out.join(",")
    }

    /// What a new regular file named `name` takes, as `set_compress_new_inode` decides
    /// before the parent's flags: `Some(false)` when a `nocompress_extension` names it,
    /// `Some(true)` when a `compress_extension` does, `None` when neither (the parent
    /// decides). Files with a hot extension (`hot`) are never compressed by name.
    pub fn for_new_file(&self, name: &[u8], hot: bool) -> Option<bool> {
        if hot {
            return Some(false);
        }
        if self.noextensions.iter().any(|e| has_extension(name, e.as_bytes())) {
            return Some(false);
        }
        if self.extensions.iter().any(|e| has_extension(name, e.as_bytes())) {
            return Some(true);
        }
        None
    }
}

/// The compression state of a read-write mount: its options and the files
/// `F2FS_IOC_COMPRESS_FILE` enabled under `compress_mode=user`.
#[derive(Default)]
pub struct CompressState {
    options: Mutex<CompressOptions>,
    enabled: Mutex<HashSet<Ino>>,
}

impl CompressState {
    /// The options in force.
    pub fn options(&self) -> CompressOptions {
        self.options.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Replaces the options.
    pub fn set_options(&self, o: CompressOptions) {
        *self.options.lock().unwrap_or_else(PoisonError::into_inner) = o;
    }

    /// Whether writeback compresses the clusters of compressed file `ino` now: always
    /// under `compress_mode=fs`, under `user` only while `F2FS_IOC_COMPRESS_FILE`
    /// runs on it.
    pub fn may_compress(&self, ino: Ino) -> bool {
        let mode = self.options.lock().unwrap_or_else(PoisonError::into_inner).mode;
        mode == CompressMode::Fs
            || self
                .enabled
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&ino)
    }

    /// Marks (or unmarks) `ino` as one whose clusters writeback compresses under
    /// `compress_mode=user`.
    pub fn set_enabled(&self, ino: Ino, on: bool) {
        let mut e = self.enabled.lock().unwrap_or_else(PoisonError::into_inner);
        if on {
            e.insert(ino);
        } else {
            e.remove(&ino);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_and_are_checked_as_linux_does() {
        let mut o = CompressOptions::default();
        assert_eq!(o.codec.name(), "lz4");
        assert!(o.set_option("compress_algorithm", Some("zstd:6")).unwrap());
        assert!(o.set_option("compress_log_size", Some("4")).unwrap());
        assert!(o.set_option("compress_chksum", None).unwrap());
        assert_eq!(
            (o.codec.name(), o.codec.log_cluster_size(), o.codec.checksum()),
            ("zstd:6".to_string(), 4, true)
        );
        // A later algorithm keeps the cluster size and checksums.
        o.set_option("compress_algorithm", Some("lz4:12")).unwrap();
        assert_eq!(
            (o.codec.name(), o.codec.log_cluster_size()),
            ("lz4hc:12".to_string(), 4)
        );
        assert!(o.set_option("compress_log_size", Some("1")).is_err());
        assert!(o.set_option("compress_log_size", Some("9")).is_err());
        assert!(o.set_option("compress_algorithm", Some("zstd:23")).is_err());
        assert!(o.set_option("compress_mode", Some("auto")).is_err());
        o.set_option("compress_mode", Some("user")).unwrap();
        assert_eq!(o.mode, CompressMode::User);
        assert!(!o.set_option("background_gc", Some("on")).unwrap());
        assert!(o.set_option("compress_extension", Some("toolongext")).is_err());
        for i in 0..COMPRESS_EXT_NUM {
            o.set_option("compress_extension", Some(&format!("e{i}"))).unwrap();
        }
        assert!(o.set_option("compress_extension", Some("more")).is_err());
        o.check().unwrap();
        o.set_option("nocompress_extension", Some("E3")).unwrap();
        assert!(o.check().is_err(), "in both lists");
        let mut o = CompressOptions::default();
        o.set_option("nocompress_extension", Some("*")).unwrap();
        assert!(o.check().is_err());
    }

    #[test]
    fn new_files_are_chosen_by_extension_as_linux_chooses() {
        let mut o = CompressOptions::default();
        o.set_option("compress_extension", Some("txt")).unwrap();
        o.set_option("nocompress_extension", Some("jpg")).unwrap();
        assert_eq!(o.for_new_file(b"a.TXT", false), Some(true));
        assert_eq!(
            o.for_new_file(b"a.txt", true),
            Some(false),
            "hot files are not compressed"
        );
        assert_eq!(o.for_new_file(b"a.jpg", false), Some(false));
        assert_eq!(o.for_new_file(b"a.txt.tmp", false), None, "the extension ends the name");
        assert_eq!(o.for_new_file(b".txt", false), None);
        assert_eq!(o.for_new_file(b"txt", false), None);
        o.set_option("compress_extension", Some("*")).unwrap();
        assert_eq!(o.for_new_file(b"anything", false), Some(true));
        assert_eq!(o.for_new_file(b"b.jpg", false), Some(false), "nocompress first");
    }
}
