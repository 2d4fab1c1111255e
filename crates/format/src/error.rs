use thiserror::Error;

/// Why a block could not be decoded. The caller adds the block address.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FormatError {
    /// The buffer is shorter than the structure.
    #[error("{structure}: need {need} bytes, have {got}")]
    TooShort {
        /// Structure being decoded.
        structure: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes given.
        got: usize,
    },
    /// A magic number does not match.
    #[error("{structure}: bad magic {found:#x} (expected {expected:#x})")]
    BadMagic {
        /// Structure being decoded.
        structure: &'static str,
        /// Magic found.
        found: u32,
        /// Magic expected.
        expected: u32,
    },
    /// A checksum does not match.
    #[error("{structure}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    BadChecksum {
        /// Structure being decoded.
        structure: &'static str,
        /// CRC stored on disk.
        stored: u32,
        /// CRC computed over the bytes.
        computed: u32,
    },
    /// A field is out of range or inconsistent with another field.
    #[error("{structure}: {detail}")]
    Invalid {
        /// Structure being decoded.
        structure: &'static str,
        /// What is wrong.
        detail: String,
    },
}

impl FormatError {
    /// Shorthand for [`FormatError::Invalid`].
    pub fn invalid(structure: &'static str, detail: impl Into<String>) -> FormatError {
        FormatError::Invalid {
            structure,
            detail: detail.into(),
        }
    }

    /// Fails with [`FormatError::TooShort`] unless `buf` holds `need` bytes.
    pub fn need(structure: &'static str, buf: &[u8], need: usize) -> crate::Result<()> {
        if buf.len() < need {
            return Err(FormatError::TooShort {
                structure,
                need,
                got: buf.len(),
            });
        }
        Ok(())
    }
}
