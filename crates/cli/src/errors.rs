//! How failures leave the program: one `uf2fs: <message>` line on stderr and an exit code.
//!
//! Exit codes: 0 success (also when stdout is a closed pipe, as with `| head`), 1 for a
//! failed operation, 2 for bad usage.

use std::io::{self, Write};
use std::process::ExitCode;

/// Exit code of a failed operation.
pub const EXIT_FAILURE: u8 = 1;
/// Exit code of a usage error (bad arguments or options), as clap uses.
pub const EXIT_USAGE: u8 = 2;

/// A usage error: reported like any error, but exits with [`EXIT_USAGE`].
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// The message was already written to stderr (e.g. relayed from a child process);
/// just exit with this code.
#[derive(Debug)]
pub struct AlreadyReported(pub u8);

impl std::fmt::Display for AlreadyReported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "failed with exit code {}", self.0)
    }
}

impl std::error::Error for AlreadyReported {}

/// Writes `uf2fs: <message>` to stderr as a single line. Never panics, even when stderr
/// is closed.
pub fn print_error_line(message: &str) {
    let line = one_line(message);
    let _ = writeln!(io::stderr().lock(), "uf2fs: {line}");
}

/// Writes `uf2fs: warning: <message>` to stderr as a single line.
pub fn print_warning(message: &str) {
    print_error_line(&format!("warning: {message}"));
}

/// Turns the outcome of a command into the process exit code, reporting any error.
pub fn finish(result: anyhow::Result<()>) -> ExitCode {
    let Err(err) = result else {
        return ExitCode::SUCCESS;
    };
    if is_broken_pipe(&err) {
        return ExitCode::SUCCESS;
    }
    if let Some(AlreadyReported(code)) = err.downcast_ref::<AlreadyReported>() {
        return ExitCode::from(*code);
    }
    print_error_line(&chain_message(&err));
    if err.downcast_ref::<UsageError>().is_some() {
        ExitCode::from(EXIT_USAGE)
    } else {
        ExitCode::from(EXIT_FAILURE)
    }
}

/// Reports a command-line parsing error from clap as one line (help and version go to
/// stdout as usual) and returns the exit code.
pub fn finish_clap_error(err: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // Prints to stdout; a closed stdout is not worth a second error.
            let _ = err.print();
            ExitCode::SUCCESS
        }
        _ => {
            let rendered = err.render().to_string();
            print_error_line(&format!("{} (see 'uf2fs --help')", clap_message(&rendered)));
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// The gist of clap's rendered error: without the `error: ` prefix, the usage block and
/// the tips, folded onto one line.
fn clap_message(rendered: &str) -> String {
    let body = rendered
        .trim_start()
        .strip_prefix("error:")
        .unwrap_or(rendered)
        .trim_start();
    let gist = body.split("\n\n").next().unwrap_or(body);
    gist.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The error and its causes joined with ": ", leaving out a cause whose text the message
/// already holds (errors that print their source in their own `Display`, as the core's
/// I/O error does, would otherwise say it twice).
fn chain_message(err: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if message.contains(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}

/// Folds a message onto one line (a multi-line message would break "one line on stderr").
fn one_line(message: &str) -> String {
    if message.contains(['\n', '\r']) {
        message
            .split(['\n', '\r'])
            .filter(|s| !s.trim().is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        message.to_string()
    }
}

/// True when the error comes from writing to a pipe whose reader went away.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .any(|io_err| io_err.kind() == io::ErrorKind::BrokenPipe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn clap_errors_become_one_line() {
        let rendered = "error: the following required arguments were not provided:\n  <IMAGE>\n\n\
                        Usage: uf2fs info <IMAGE>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            clap_message(rendered),
            "the following required arguments were not provided: <IMAGE>"
        );
        let rendered = "error: unexpected argument '--foo' found\n\n  tip: to pass '--foo' as a value, \
                        use '-- --foo'\n\nUsage: uf2fs ls\n";
        assert_eq!(clap_message(rendered), "unexpected argument '--foo' found");
    }

    #[test]
    fn broken_pipe_is_found_under_context() {
        let err = anyhow::Error::from(io::Error::from(io::ErrorKind::BrokenPipe)).context("writing");
        assert!(is_broken_pipe(&err));
        let err: anyhow::Result<()> = Err(io::Error::from(io::ErrorKind::NotFound)).context("x");
        assert!(!is_broken_pipe(&err.unwrap_err()));
    }

    #[test]
    fn repeated_causes_are_said_once() {
        #[derive(Debug)]
        struct SaysItsSource(io::Error);
        impl std::fmt::Display for SaysItsSource {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "cannot open x: {}", self.0)
            }
        }
        impl std::error::Error for SaysItsSource {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let err = anyhow::Error::from(SaysItsSource(io::Error::other("gone"))).context("img");
        assert_eq!(chain_message(&err), "img: cannot open x: gone");
    }

    #[test]
    fn messages_are_folded() {
        assert_eq!(one_line("a\nb\r\n\nc"), "a b c");
        assert_eq!(one_line("plain"), "plain");
    }
}
