//! Android sparse images read in place: the full tree's image (the `seg4` variant,
//! labelled by sload -s) converted by img2simg with 4 KiB, 1 KiB and 8 KiB sparse blocks,
//! plus a copy whose zero fills are rewritten as don't-care chunks (img2simg writes
//! zeros as fill chunks; simg2img must still give back the raw image). `ls -lRa` and
//! `extract` of each must be identical to the raw image's. A read-write mount and
//! damaged chunk tables fail cleanly.
//!
//! Needs img2simg and simg2img (Debian package android-sdk-libsparse-utils): without
//! them the tests print why and pass, unless UF2FS_REQUIRE_LIBSPARSE is set (CI sets
//! it), in which case they fail.

mod common;

use common::{assert_no_problems, full, scratch, uf2fs};
use std::path::Path;
use std::process::Command;
use uf2fs_testkit::compare::{compare_dirs, host_keeps_security_xattrs, CompareOptions};
use uf2fs_testkit::run::{arg, path_arg};
use uf2fs_testkit::tree::is_root;

const MAGIC: u32 = 0xED26_FF3A;
const CHUNK_FILL: u16 = 0xCAC2;
const CHUNK_DONT_CARE: u16 = 0xCAC3;

/// Whether img2simg and simg2img can be run; `false` (after saying why) only when the
/// tests may be skipped.
fn libsparse_available() -> bool {
    let missing = ["img2simg", "simg2img"]
        .into_iter()
        .find(|tool| Command::new(tool).output().map_or(true, |o| o.status.code().is_none()));
    match missing {
        None => true,
        Some(tool) if std::env::var_os("UF2FS_REQUIRE_LIBSPARSE").is_some() => {
            panic!("UF2FS_REQUIRE_LIBSPARSE is set but {tool} is not installed (Debian package android-sdk-libsparse-utils)")
        }
        Some(tool) => {
            eprintln!(
                "skipping sparse image test: {tool} is not installed (Debian package \
                 android-sdk-libsparse-utils; set UF2FS_REQUIRE_LIBSPARSE=1 to make this a failure)"
            );
            false
        }
    }
}

fn run_tool(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The chunk types of a sparse image, in file order, with fill patterns.
fn chunks(bytes: &[u8]) -> Vec<(u16, u32, usize)> {
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    assert_eq!(u32_at(0), MAGIC, "not a sparse image");
    let mut pos = u16_at(8) as usize;
    let chunk_hdr = u16_at(10) as usize;
    let mut out = Vec::new();
    for _ in 0..u32_at(20) {
        let total = u32_at(pos + 8) as usize;
        out.push((u16_at(pos), u32_at(pos + 4), pos));
        pos += total;
    }
    assert_eq!(pos, bytes.len());
    assert_eq!(chunk_hdr, 12);
    out
}

/// The same image with every zero fill chunk written as a don't-care chunk; returns it
/// and how many chunks changed.
fn zero_fills_to_dont_care(bytes: &[u8]) -> (Vec<u8>, usize) {
    let mut out = bytes[..28].to_vec();
    let mut changed = 0;
    for (kind, blocks, pos) in chunks(bytes) {
        let total = u32::from_le_bytes(bytes[pos + 8..pos + 12].try_into().unwrap()) as usize;
        if kind == CHUNK_FILL && bytes[pos + 12..pos + 16] == [0; 4] {
            out.extend_from_slice(&CHUNK_DONT_CARE.to_le_bytes());
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&blocks.to_le_bytes());
            out.extend_from_slice(&12u32.to_le_bytes());
            changed += 1;
        } else {
            out.extend_from_slice(&bytes[pos..pos + total]);
        }
    }
    (out, changed)
}

/// `ls -lRa` and `extract` of `sparse` must be those of `raw`.
fn assert_reads_as(raw: &Path, sparse: &Path, raw_out: &Path, work: &Path) {
    let bin = uf2fs();
    let ls = |img: &Path| bin.run([arg(b"ls"), arg(b"-lRa"), path_arg(img)]).assert_ok().to_vec();
    let want = ls(raw);
    assert!(want.len() > 1000, "the raw image lists almost nothing");
    assert!(ls(sparse) == want, "ls -lRa differs on {}", sparse.display());
    let out = work.join("out");
    bin.run([arg(b"extract"), path_arg(sparse), path_arg(&out)]).assert_ok();
    let opts = CompareOptions {
        owners: is_root(),
        root: false,
        // Reading the reference tree's files (each comparison does) moves their atimes.
        atime: false,
        ctime: false,
        xattrs: host_keeps_security_xattrs(work),
        contents: true,
    };
    assert_no_problems(
        &format!("extract of {} against the raw image's", sparse.display()),
        &compare_dirs(raw_out, &out, opts),
    );
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn sparse_images_read_as_the_raw_image() {
    if !libsparse_available() {
        return;
    }
    let fx = full("seg4");
    let tmp = scratch("sparse-");
    let bin = uf2fs();
    let raw_out = tmp.path().join("raw-out");
    bin.run([arg(b"extract"), path_arg(fx.img()), path_arg(&raw_out)])
        .assert_ok();
    for blk in [4096u32, 1024, 8192] {
        let sparse = tmp.path().join(format!("img-{blk}.simg"));
        run_tool(Command::new("img2simg").arg(fx.img()).arg(&sparse).arg(blk.to_string()));
        let bytes = std::fs::read(&sparse).unwrap();
        assert_eq!(u32::from_le_bytes(bytes[12..16].try_into().unwrap()), blk);
        let kinds: Vec<u16> = chunks(&bytes).iter().map(|c| c.0).collect();
        assert!(kinds.contains(&0xCAC1) && kinds.contains(&CHUNK_FILL), "{kinds:x?}");
        assert_reads_as(fx.img(), &sparse, &raw_out, tmp.path());
        if blk != 4096 {
            continue;
        }
        // Don't-care chunks: the same image, checked by simg2img first.
        let (dc, changed) = zero_fills_to_dont_care(&bytes);
        assert!(changed > 0, "img2simg wrote no zero fill chunk");
        let dc_path = tmp.path().join("dont-care.simg");
        std::fs::write(&dc_path, &dc).unwrap();
        let back = tmp.path().join("back.img");
        run_tool(Command::new("simg2img").arg(&dc_path).arg(&back));
        assert!(
            std::fs::read(&back).unwrap() == std::fs::read(fx.img()).unwrap(),
            "simg2img does not give the raw image back from the rewritten one"
        );
        std::fs::remove_file(&back).unwrap();
        assert_reads_as(fx.img(), &dc_path, &raw_out, tmp.path());

        // Read-write: refused with the way out, before anything is mounted.
        let mnt = tmp.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let rw = bin.run([arg(b"mount"), path_arg(&sparse), path_arg(&mnt)]);
        rw.assert_clean_failure();
        assert!(
            rw.err().contains("sparse") && rw.err().contains("simg2img"),
            "{}",
            rw.describe()
        );
        assert_eq!(
            std::fs::read(&sparse).unwrap(),
            bytes,
            "the refused mount changed the image"
        );

        // Damaged tables: one clean failure naming the sparse image each.
        let n = bytes.len();
        let mut cut_count = bytes.clone();
        cut_count[20] ^= 1;
        for (what, damaged) in [
            ("truncated", bytes[..n - 100].to_vec()),
            ("chunk count", cut_count),
            ("trailing bytes", [&bytes[..], &[0u8; 12][..]].concat()),
        ] {
            let p = tmp.path().join("damaged.simg");
            std::fs::write(&p, damaged).unwrap();
            let out = bin.run([arg(b"ls"), arg(b"-R"), path_arg(&p)]);
            out.assert_clean_failure();
            assert!(out.err().contains("sparse image"), "{what}: {}", out.describe());
        }
    }
}
