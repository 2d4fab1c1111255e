//! Running an outside tool (f2fs_io, python3, setpriv) from a test.

use std::process::Command;

/// Runs `argv`; its success and what it printed (stdout then stderr).
pub fn run(argv: &[&str]) -> (bool, String) {
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .output()
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Runs `argv`, which must succeed; what it printed.
pub fn ok(argv: &[&str]) -> String {
    let (success, text) = run(argv);
    assert!(success, "{argv:?} failed: {text}");
    text
}
