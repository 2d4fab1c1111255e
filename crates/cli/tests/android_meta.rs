//! `uf2fs extract --fs-config --file-contexts --mount-point`: an AOSP-style system image
//! is built from a small tree, an fs_config (owners, modes, capabilities) and a
//! file_contexts (labels), and what uf2fs writes out must describe exactly that (the
//! entries are compared parsed, not as bytes).
//!
//! The image: `mkfs.f2fs` (default features; `-O extra_attr,inode_checksum,sb_checksum`;
//! `-O ro`), then `sload.f2fs -f TREE -C fs_config -s file_contexts -T TIME -t /system -P`,
//! then `fsck.f2fs`. Debian's sload is built without Android's libcutils, so it accepts
//! `-C` but ignores it (`strings` finds no canned fs_config loader in it); its `-s` works
//! (libselinux). So the fs_config's modes and owners reach the image through the source
//! tree (chmod, and chown when running as root, with sload `-P`), and on the writable
//! variants the capabilities (and, without root, the owners) are set afterwards through
//! uf2fs's core API, followed by `fsck.f2fs -f`. On `-O ro` images nothing can write,
//! so their capabilities stay 0 and, without root, their owners 0:0.

mod common;

use common::{scratch, uf2fs};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use uf2fs_core::{Fs, SetAttr};
use uf2fs_testkit::image::tool;
use uf2fs_testkit::run::{arg, path_arg};
use uf2fs_testkit::tree::is_root;

/// (path under the mount point, uid, gid, mode, capabilities), as an fs_config says.
const CONFIG: &[(&str, u32, u32, u32, u64)] = &[
    ("bin", 0, 2000, 0o751, 0),
    ("bin/sh", 0, 2000, 0o755, 0),
    ("bin/su", 0, 2000, 0o4750, 0x0000_0020_0000_00c0),
    ("bin/ping", 0, 3003, 0o750, 0x2000),
    ("etc", 0, 0, 0o755, 0),
    ("etc/hosts", 1000, 1000, 0o644, 0),
    ("lib", 0, 0, 0o755, 0),
    ("lib/libc++.so", 0, 0, 0o644, 0),
    ("lib/ld.config[1].txt", 0, 0, 0o600, 0),
];

/// The file_contexts given to sload (libselinux: an exact path beats a regex; among
/// regexes the last match wins).
const FILE_CONTEXTS: &str = "/system(/.*)?\tu:object_r:system_file:s0\n\
/system/bin(/.*)?\tu:object_r:system_exec:s0\n\
/system/bin/sh\tu:object_r:shell_exec:s0\n\
/system/lib/libc\\+\\+\\.so\tu:object_r:system_lib_file:s0\n";

fn label_of(path: &str) -> &'static str {
    match path {
        "/system/bin/sh" => "u:object_r:shell_exec:s0",
        "/system/lib/libc++.so" => "u:object_r:system_lib_file:s0",
        p if p == "/system/bin" || p.starts_with("/system/bin/") => "u:object_r:system_exec:s0",
        _ => "u:object_r:system_file:s0",
    }
}

fn run_ok(cmd: &mut Command, allow_exit_1: bool) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let ok = out.status.success() || (allow_exit_1 && out.status.code() == Some(1));
    assert!(ok, "{cmd:?}: {}: {}", out.status, String::from_utf8_lossy(&out.stderr));
}

/// Parsed fs_config: path -> (uid, gid, mode, capabilities), as AOSP's loader reads it.
fn parse_fs_config(text: &str) -> BTreeMap<String, (u32, u32, u32, u64)> {
    let mut map = BTreeMap::new();
    for line in text.lines() {
        let mut f = line.split([' ', '\t']).filter(|t| !t.is_empty());
        let path = f.next().expect("path").to_string();
        let uid = f.next().unwrap().parse().unwrap();
        let gid = f.next().unwrap().parse().unwrap();
        let mode = u32::from_str_radix(f.next().unwrap(), 8).unwrap();
        let caps = f
            .find_map(|t| t.strip_prefix("capabilities="))
            .map(|c| u64::from_str_radix(c.trim_start_matches("0x"), 16).unwrap())
            .unwrap_or(0);
        assert!(
            map.insert(path, (uid, gid, mode, caps)).is_none(),
            "duplicate line: {line}"
        );
    }
    map
}

/// Parsed file_contexts: unescaped path -> label.
fn parse_file_contexts(text: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for line in text.lines() {
        let (regex, label) = line.split_once('\t').expect("tab-separated");
        let mut path = String::new();
        let mut chars = regex.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => path.push(chars.next().expect("escape")),
                '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' | '^' | '$' => {
                    panic!("unescaped metacharacter in {regex}")
                }
                c => path.push(c),
            }
        }
        map.insert(path, label.to_string());
    }
    map
}

fn capability_xattr(permitted: u64) -> Vec<u8> {
    // Revision 2, effective bit set, as Android's build tools write it.
    [0x0200_0001u32, permitted as u32, 0, (permitted >> 32) as u32, 0]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect()
}

fn check_variant(name: &str, mkfs_args: &[&str], writable: bool) {
    let tmp = scratch("android-");
    let tree = tmp.path().join("tree");
    // Top-level entries are directories, the others files.
    for (path, uid, gid, _, _) in CONFIG {
        let p = tree.join(path);
        if path.contains('/') {
            std::fs::write(&p, format!("contents of {path}\n")).unwrap();
        } else {
            std::fs::create_dir_all(&p).unwrap();
        }
        if is_root() {
            std::os::unix::fs::lchown(&p, Some(*uid), Some(*gid)).unwrap();
        }
    }
    // Modes last (chown clears set-ID bits), deepest first.
    for (path, _, _, mode, _) in CONFIG.iter().rev() {
        std::fs::set_permissions(tree.join(path), std::fs::Permissions::from_mode(*mode)).unwrap();
    }
    let fs_config = tmp.path().join("fs_config");
    let mut text = String::from("system 0 0 755 capabilities=0x0\n");
    for (path, uid, gid, mode, caps) in CONFIG {
        text.push_str(&format!("system/{path} {uid} {gid} {mode:o} capabilities={caps:#x}\n"));
    }
    std::fs::write(&fs_config, &text).unwrap();
    let contexts = tmp.path().join("file_contexts");
    std::fs::write(&contexts, FILE_CONTEXTS).unwrap();

    let img = tmp.path().join("system.img");
    std::fs::File::create(&img).unwrap().set_len(64 << 20).unwrap();
    run_ok(
        Command::new(tool("mkfs.f2fs")).arg("-f").args(mkfs_args).arg(&img),
        false,
    );
    // sload 1.15 exits 1 after repairing its own work on inode_checksum images.
    run_ok(
        Command::new(tool("sload.f2fs"))
            .arg("-f")
            .arg(&tree)
            .arg("-C")
            .arg(&fs_config)
            .arg("-s")
            .arg(&contexts)
            .args(["-T", "1700000000", "-t", "/system", "-P"])
            .arg(&img),
        true,
    );
    let fsck = |img: &Path| {
        run_ok(
            Command::new(tool("fsck.f2fs"))
                .args(["--dry-run", "-f"])
                .arg(img)
                .stdin(std::process::Stdio::null()),
            false,
        )
    };
    fsck(&img);
    if writable {
        let fs = Fs::open_rw(&img, &[]).unwrap();
        for (path, uid, gid, _, caps) in CONFIG {
            let ino = fs.resolve(format!("/{path}").as_bytes(), false).unwrap();
            let attrs = SetAttr {
                uid: Some(*uid),
                gid: Some(*gid),
                ..SetAttr::default()
            };
            fs.setattr(ino, &attrs).unwrap();
            if *caps != 0 {
                fs.set_xattr(ino, b"security.capability", &capability_xattr(*caps), 0)
                    .unwrap();
            }
        }
        // chown clears set-ID bits in the core as in Linux: set the modes again.
        for (path, _, _, mode, _) in CONFIG {
            let ino = fs.resolve(format!("/{path}").as_bytes(), false).unwrap();
            fs.setattr(
                ino,
                &SetAttr {
                    mode: Some(*mode),
                    ..SetAttr::default()
                },
            )
            .unwrap();
        }
        fs.unmount().unwrap();
        fsck(&img);
    }

    let out_fs_config = tmp.path().join("out.fs_config");
    let out_contexts = tmp.path().join("out.file_contexts");
    uf2fs()
        .run([
            arg(b"extract"),
            arg(b"--fs-config"),
            path_arg(&out_fs_config),
            arg(b"--file-contexts"),
            path_arg(&out_contexts),
            arg(b"--mount-point"),
            arg(b"/system"),
            path_arg(&img),
            path_arg(&tmp.path().join("out")),
        ])
        .assert_ok();
    let got = parse_fs_config(&std::fs::read_to_string(&out_fs_config).unwrap());
    let mut want = parse_fs_config(&text);
    let (euid, egid) = (nix::unistd::geteuid().as_raw(), nix::unistd::getegid().as_raw());
    // The root is mkfs.f2fs's: 755, owned by whoever ran it.
    want.insert("system".to_string(), (euid, egid, 0o755, 0));
    for (path, entry) in want.iter_mut() {
        if path == "system" {
            continue;
        }
        if !writable {
            entry.3 = 0;
            if !is_root() {
                (entry.0, entry.1) = (0, 0);
            }
        }
    }
    assert_eq!(got, want, "{name}: fs_config");

    let got = parse_file_contexts(&std::fs::read_to_string(&out_contexts).unwrap());
    let want: BTreeMap<String, String> = std::iter::once("/system".to_string())
        .chain(CONFIG.iter().map(|c| format!("/system/{}", c.0)))
        .map(|p| {
            let label = label_of(&p).to_string();
            (p, label)
        })
        .collect();
    assert_eq!(got, want, "{name}: file_contexts");
}

#[test]
fn fs_config_and_file_contexts_describe_what_the_image_was_built_from() {
    uf2fs_testkit::image::require_tools();
    check_variant("default", &[], true);
    check_variant(
        "extra_attr,inode_checksum,sb_checksum",
        &["-O", "extra_attr,inode_checksum,sb_checksum"],
        true,
    );
    check_variant("ro", &["-O", "ro"], false);
}

#[test]
fn mount_point_slash_writes_the_root_as_slash() {
    uf2fs_testkit::image::require_tools();
    let tmp = scratch("android-root-");
    let tree = tmp.path().join("tree");
    std::fs::create_dir_all(tree.join("a b")).unwrap();
    std::fs::write(tree.join("f"), "x").unwrap();
    let img = tmp.path().join("img");
    std::fs::File::create(&img).unwrap().set_len(64 << 20).unwrap();
    run_ok(Command::new(tool("mkfs.f2fs")).arg("-f").arg(&img), false);
    run_ok(Command::new(tool("sload.f2fs")).arg("-f").arg(&tree).arg(&img), false);
    let out = tmp.path().join("fs_config");
    let run = uf2fs().run([
        arg(b"extract"),
        arg(b"--fs-config"),
        path_arg(&out),
        path_arg(&img),
        path_arg(&tmp.path().join("x")),
    ]);
    run.assert_ok();
    let text = std::fs::read_to_string(&out).unwrap();
    let keys: Vec<&str> = text.lines().map(|l| l.split(' ').next().unwrap()).collect();
    // "a b" cannot be written (the format splits on spaces): left out, with a warning.
    assert_eq!(keys, ["/", "f"], "{text}");
    assert!(run.err().contains("whitespace"), "{}", run.describe());
    // A single file is not a tree.
    uf2fs()
        .run([
            arg(b"extract"),
            arg(b"--fs-config"),
            path_arg(&out),
            path_arg(&img),
            arg(b"/f"),
            path_arg(&tmp.path().join("y")),
        ])
        .assert_clean_failure();
}
