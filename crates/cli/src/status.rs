//! `uf2fs status MOUNTPOINT`: the write and garbage-collection figures of a running
//! uf2fs mount, read from the status attribute of its root directory
//! ([`uf2fs_fuse::STATUS_XATTR`]): its `key: value` lines as they are, or with `--json`
//! one JSON object made from them by the rules of [`to_json`].

use crate::names::escape_os;
use serde_json::{Map, Number, Value};
use std::io::Write;
use std::path::Path;

/// Prints the status report of the uf2fs mount at `mountpoint`.
pub fn run(mountpoint: &Path, as_json: bool) -> anyhow::Result<()> {
    let shown = escape_os(mountpoint);
    let meta = std::fs::metadata(mountpoint).map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
    if !meta.is_dir() {
        anyhow::bail!("{shown} is not a directory (give the mountpoint of a uf2fs mount)");
    }
    let not_ours = || anyhow::anyhow!("{shown} is not the root of a uf2fs mount");
    let report = match xattr::get(mountpoint, uf2fs_fuse::STATUS_XATTR) {
        Ok(Some(r)) => r,
        Ok(None) => return Err(not_ours()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTSUP) | Some(libc::ENODATA)) => return Err(not_ours()),
        Err(e) => anyhow::bail!("{shown}: reading its status: {e}"),
    };
    if as_json {
        return crate::json::print(&to_json(&String::from_utf8_lossy(&report)));
    }
    let mut out = std::io::stdout().lock();
    out.write_all(&report)?;
    out.flush()?;
    Ok(())
}

/// The report as a JSON object. Each `key: value` line becomes a field named by its key
/// in snake case (`user blocks written` → `user_blocks_written`); lines indented under
/// one make it an object holding its own value as `value` and theirs by name. A value is
///
/// * a number when it is one number, alone, with a unit of seconds (`0.25 s`) or
///   followed by a restatement in parentheses (`2048 (0.008 GiB)`);
/// * an object of numbers when it is a list of counts (`1 foreground, 2 background` →
///   `{"foreground": 1, "background": 2}`), a final parenthesis ignored;
/// * the text as it is otherwise.
pub fn to_json(report: &str) -> Value {
    let mut top = Map::new();
    // The last unindented line's field, and its object once lines were indented under it.
    let mut parent: Option<(String, Option<Map<String, Value>>)> = None;
    fn close(top: &mut Map<String, Value>, parent: Option<(String, Option<Map<String, Value>>)>) {
        if let Some((name, Some(children))) = parent {
            top.insert(name, Value::Object(children));
        }
    }
    for line in report.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let name = snake_case(key);
        let value = parse_value(value.trim());
        match &mut parent {
            Some((own, children)) if key.starts_with(' ') => {
                let children = children.get_or_insert_with(|| {
                    let mut obj = Map::new();
                    obj.insert("value".into(), top.get(own.as_str()).cloned().unwrap_or(Value::Null));
                    obj
                });
                children.insert(name, value);
            }
            _ => {
                close(&mut top, parent.take());
                top.insert(name.clone(), value);
                parent = Some((name, None));
            }
        }
    }
    close(&mut top, parent);
    Value::Object(top)
}

/// `user blocks written` → `user_blocks_written`; `roll-forward` → `roll_forward`.
fn snake_case(key: &str) -> String {
    let mut out = String::new();
    for word in key
        .trim()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push('_');
        }
        out.push_str(&word.to_ascii_lowercase());
    }
    out
}

/// A number, as an integer when it has no fraction.
fn number(text: &str) -> Option<Value> {
    if let Ok(n) = text.parse::<u64>() {
        return Some(Value::Number(n.into()));
    }
    if let Ok(n) = text.parse::<i64>() {
        return Some(Value::Number(n.into()));
    }
    let f = text.parse::<f64>().ok()?;
    Number::from_f64(f).map(Value::Number)
}

/// One value by the rules of [`to_json`].
fn parse_value(text: &str) -> Value {
    if let Some(n) = number(text) {
        return n;
    }
    if let Some(n) = text.strip_suffix(" s").and_then(number) {
        return n;
    }
    // Drop a final parenthesis: a restatement (`(0.008 GiB)`) or a setting.
    let bare = match text.rfind(" (") {
        Some(i) if text.ends_with(')') => &text[..i],
        _ => text,
    };
    if let Some(n) = number(bare) {
        return n;
    }
    let mut counts = Map::new();
    for part in bare.split(", ") {
        let Some((count, what)) = part.split_once(' ') else {
            return Value::String(text.to_owned());
        };
        let words_only = what.chars().all(|c| c.is_ascii_alphabetic() || c == ' ' || c == '-');
        match number(count) {
            Some(n) if words_only && !what.is_empty() => {
                counts.insert(snake_case(what), n);
            }
            _ => return Value::String(text.to_owned()),
        }
    }
    Value::Object(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn report_lines_become_fields() {
        let report = "mode:                read-write\n\
                      gc policy:           greedy\n\
                      fsyncs:              3 roll-forward, 4 by checkpoint (fsync_mode=posix)\n\
                      recovered at open:   0 inodes from 0 fsync'd node blocks\n\
                      utilization:         0.5000\n\
                      user blocks written: 2048 (0.008 GiB)\n\
                      waf:                 1.031\n\
                      device blocks:       2112 (0.008 GiB)\n  \
                      user data:         2048\n  \
                      gc data:           0\n\
                      gc calls:            1 foreground, 2 background\n\
                      paced steps:         5 (10 blocks), 1 victims\n\
                      gc time:             0.250 s\n";
        assert_eq!(
            to_json(report),
            json!({
                "mode": "read-write",
                "gc_policy": "greedy",
                "fsyncs": {"roll_forward": 3, "by_checkpoint": 4},
                "recovered_at_open": "0 inodes from 0 fsync'd node blocks",
                "utilization": 0.5,
                "user_blocks_written": 2048,
                "waf": 1.031,
                "device_blocks": {"value": 2112, "user_data": 2048, "gc_data": 0},
                "gc_calls": {"foreground": 1, "background": 2},
                "paced_steps": "5 (10 blocks), 1 victims",
                "gc_time": 0.25,
            })
        );
    }
}
