//! `uf2fs generate-assets DIR` (for packagers): the man pages and shell completions,
//! made from the command line's own definition ([`crate::args::Cli`]) so that they never
//! drift from `--help`. An entry point outside that definition, like the mount helper's
//! name, so that neither the pages nor the completions offer it to users.
//!
//! Writes `DIR/man/uf2fs.1` and one page per subcommand (`uf2fs-info.1`,
//! `uf2fs-bench-waf.1`, ...) with clap_mangen, and `DIR/completions/uf2fs.bash`,
//! `DIR/completions/_uf2fs` (zsh) and `DIR/completions/uf2fs.fish` with clap_complete.
//! `scripts/build-deb.sh` runs it before cargo-deb packs the files.

use crate::args::Cli;
use anyhow::Context;
use clap::CommandFactory;
use clap_complete::Shell;
use std::ffi::OsString;
use std::path::Path;

/// The word that asks for the assets, as the first and only argument before DIR.
const WORD: &str = "generate-assets";

/// DIR when the arguments (after the program name) are exactly `generate-assets DIR`.
pub fn requested(args: &[OsString]) -> Option<&Path> {
    match args {
        [word, dir] if word == WORD => Some(Path::new(dir)),
        _ => None,
    }
}

/// Writes the man pages and the bash, zsh and fish completions under `dir`.
pub fn run(dir: &Path) -> anyhow::Result<()> {
    let shown = crate::names::escape_os(dir);
    let man = dir.join("man");
    let completions = dir.join("completions");
    for sub in [&man, &completions] {
        std::fs::create_dir_all(sub).with_context(|| format!("{shown}: creating {}", sub.display()))?;
    }
    clap_mangen::generate_to(Cli::command(), &man).with_context(|| format!("{shown}: writing the man pages"))?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let mut cmd = Cli::command();
        clap_complete::generate_to(shell, &mut cmd, "uf2fs", &completions)
            .with_context(|| format!("{shown}: writing the {shell} completions"))?;
    }
    Ok(())
}
