//! Mount an F2FS image read-only: `cargo run -p uf2fs-fuse --example mount_image -- IMAGE MOUNTPOINT`.
//! Blocks until `fusermount3 -u MOUNTPOINT`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [image, mountpoint] = args.as_slice() else {
        eprintln!("usage: mount_image IMAGE MOUNTPOINT");
        return ExitCode::from(2);
    };
    let fs = match uf2fs_core::Fs::open(image, &[]) {
        Ok(fs) => fs,
        Err(err) => {
            eprintln!("{}: {err}", image.display());
            return ExitCode::FAILURE;
        }
    };
    let opts = uf2fs_fuse::MountOptions {
        read_only: true,
        allow_other: false,
        fsname: image.display().to_string(),
        ..Default::default()
    };
    match uf2fs_fuse::mount(fs, mountpoint, &opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mount {}: {err}", mountpoint.display());
            ExitCode::FAILURE
        }
    }
}
