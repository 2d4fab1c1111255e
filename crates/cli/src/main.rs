//! `uf2fs`: the command-line front end of uf2fs. Argument parsing and output only; the
//! file system itself lives in `uf2fs-core`.

mod args;
mod bench;
mod bench_latency;
mod bench_output;
mod bench_writeback;
mod cat;
mod errors;
mod extract;
mod format_mode;
mod format_time;
mod generate;
mod info;
mod json;
mod ls;
mod ls_json;
mod mkfs;
mod mkfs_like;
mod mount;
mod mount_helper;
mod mount_options;
mod names;
mod output;
mod pack;
mod progress;
mod status;
mod sweep;

use anyhow::Context;
use args::{Cli, Command};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use uf2fs_core::Fs;

fn main() -> ExitCode {
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_default();
    if mount_helper::invoked_as_helper(Path::new(&argv0)) {
        let rest: Vec<_> = args.collect();
        return errors::finish(mount_helper::run(&rest));
    }
    let rest: Vec<_> = args.collect();
    if let Some(dir) = generate::requested(&rest) {
        return errors::finish(generate::run(dir));
    }
    match Cli::try_parse() {
        Ok(cli) => errors::finish(run(cli)),
        Err(err) => errors::finish_clap_error(err),
    }
}

/// Runs one subcommand.
fn run(cli: Cli) -> anyhow::Result<()> {
    let devices = cli.all_devices();
    match cli.command {
        Command::Status { mountpoint, json } => status::run(&mountpoint, json),
        Command::Info { image, json, .. } => {
            let fs = open_fs(&image, &devices)?;
            let paths: Vec<PathBuf> = std::iter::once(image).chain(devices).collect();
            info::run(&fs, &paths, json)
        }
        Command::Ls {
            long,
            recursive,
            all,
            json,
            image,
            path,
            ..
        } => {
            let fs = open_fs(&image, &devices)?;
            let opts = ls::LsOptions { long, recursive, all };
            if json {
                ls_json::run(&fs, path.as_deref(), &opts)
            } else {
                ls::run(&fs, path.as_deref(), &opts)
            }
        }
        Command::Cat { image, path, .. } => cat::run(&open_fs(&image, &devices)?, &path),
        Command::Extract {
            force,
            fs_config,
            file_contexts,
            mount_point,
            image,
            paths,
            ..
        } => {
            let (path, dest) = match paths.as_slice() {
                [dest] => (std::ffi::OsStr::new("/"), dest),
                [path, dest] => (path.as_os_str(), dest),
                _ => return Err(errors::UsageError("extract takes [PATH] DEST".into()).into()),
            };
            let fs = open_fs(&image, &devices)?;
            let android = extract::AndroidOptions {
                fs_config,
                file_contexts,
                mount_point: mount_point.map(|m| m.into_encoded_bytes()),
            };
            extract::run(&fs, path, Path::new(dest), &extract::ExtractOptions { force, android })
        }
        Command::Mount {
            options,
            foreground,
            image,
            mountpoint,
            ..
        } => {
            let request = mount::MountRequest {
                options,
                foreground,
                image,
                mountpoint,
                devices,
            };
            mount::run(&request)
        }
        Command::Mkfs {
            size,
            segs_per_sec,
            overprovision,
            zoned,
            features,
            casefold,
            label,
            block_size,
            force,
            quiet,
            image,
            source,
            pack,
        } => {
            if !devices.is_empty() {
                return Err(
                    errors::UsageError("mkfs makes single-device volumes; --device is not accepted".into()).into(),
                );
            }
            let given = mkfs_like::Given {
                segs_per_sec,
                label,
                block_size,
            };
            let mut request = mkfs::MkfsRequest {
                size,
                segs_per_sec: segs_per_sec.unwrap_or(1),
                overprovision,
                zoned,
                features,
                casefold,
                label: given.label.clone().unwrap_or_default(),
                block_size: block_size.unwrap_or(4096),
                force,
                quiet,
                image,
                source,
                pack,
            };
            mkfs_like::apply(&mut request, &given)?;
            mkfs::check_block_size(request.block_size)?;
            mkfs::run(&request)
        }
        Command::Bench { what } => {
            if !devices.is_empty() {
                return Err(errors::UsageError("bench makes its own devices; --device is not accepted".into()).into());
            }
            bench::run(what)
        }
    }
}

/// Opens an image (and the extra devices of a multi-device F2FS) read-only.
pub fn open_fs(image: &Path, devices: &[PathBuf]) -> anyhow::Result<Fs> {
    let more: Vec<&Path> = devices.iter().map(PathBuf::as_path).collect();
    let shown = names::escape_os(image);
    match Fs::open(image, &more) {
        Ok(fs) => Ok(fs),
        // Name the image unless the core's message already does.
        Err(err) if err.to_string().contains(&shown) => Err(err.into()),
        Err(err) => Err(err).with_context(|| shown),
    }
}
