//! Writes a seeded test tree into a directory (for scripts/demo.sh and
//! scripts/bench-read.sh).
//!
//! usage: `uf2fs-gen-tree PROFILE DIR [SEED]`
//!   PROFILE: `small | full | many:COUNT:MAX_BYTES | mix:COUNT | big:BYTES`
//!   (mix: Tree::copy_mix, with trusted.* xattrs when run as root)

use std::path::PathBuf;
use std::process::ExitCode;
use uf2fs_testkit::tree::{Geometry, Tree};
use uf2fs_testkit::FileData;

fn usage() -> ExitCode {
    eprintln!("usage: uf2fs-gen-tree small|full|many:COUNT:MAX_BYTES|mix:COUNT|big:BYTES DIR [SEED]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(profile), Some(dir)) = (args.first(), args.get(1)) else {
        return usage();
    };
    let seed = match args.get(2).map(|s| s.parse::<u64>()) {
        None => 1,
        Some(Ok(s)) => s,
        Some(Err(_)) => return usage(),
    };
    let parts: Vec<&str> = profile.split(':').collect();
    let tree = match parts.as_slice() {
        ["small"] => Tree::small(seed),
        ["full"] => Tree::full(
            seed,
            Geometry {
                addrs_in_inode: 873,
                max_file_blocks: None,
            },
        ),
        ["many", count, max] => match (count.parse(), max.parse()) {
            (Ok(c), Ok(m)) => Tree::many_files(seed, c, m),
            _ => return usage(),
        },
        ["mix", count] => match count.parse() {
            Ok(c) => Tree::copy_mix(seed, c, uf2fs_testkit::tree::is_root()),
            Err(_) => return usage(),
        },
        ["big", bytes] => match bytes.parse() {
            Ok(len) => Tree::single_file(b"big", FileData::noise(len, seed)),
            Err(_) => return usage(),
        },
        _ => return usage(),
    };
    let dir = PathBuf::from(dir);
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| tree.write(&dir)) {
        eprintln!("uf2fs-gen-tree: {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    println!(
        "{} entries, {} bytes of file data in {}",
        tree.entries.len(),
        tree.data_bytes(),
        dir.display()
    );
    ExitCode::SUCCESS
}
