//! What the `--json` outputs share: names that may not be UTF-8, and writing one JSON
//! document to stdout. The field names of every document are listed in docs/json.md.

use serde::Serialize;
use std::io::Write;

/// A name or path from the image as JSON text: the bytes read as UTF-8, an invalid
/// sequence becoming U+FFFD. [`bytes_if_lossy`] gives the exact bytes beside it when that
/// loses something.
pub fn text(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).into_owned()
}

/// The raw bytes of a name, only when they are not valid UTF-8 (the `*_bytes` fields,
/// left out otherwise), so that a script can rebuild the exact name.
pub fn bytes_if_lossy(raw: &[u8]) -> Option<Vec<u8>> {
    std::str::from_utf8(raw).is_err().then(|| raw.to_vec())
}

/// Writes `value` to stdout as pretty-printed JSON and a final newline.
pub fn print(value: &impl Serialize) -> anyhow::Result<()> {
    let mut out = crate::output::buffered_stdout();
    serde_json::to_writer_pretty(&mut out, value)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}
