//! The round trip of an Android partition (issue 27, items 7 and 8): an AOSP-style image
//! built by mkfs.f2fs + sload.f2fs (an fs_config, file_contexts labels, capabilities,
//! hard links, symlinks, the mount point `/system`), then `uf2fs extract --fs-config
//! --file-contexts`, then `uf2fs mkfs --like ORIGINAL` from the extracted tree with those
//! files, then `uf2fs extract` again: the second extraction must be the first (every
//! file's bytes, modes, owners, times, hard links, symlink targets; the fs_config and
//! file_contexts written out byte for byte), the repack must describe every inode as the
//! original does (read through the library: mode, owner, size, link count, atime,
//! mtime, ctime, xattrs with labels and capabilities, compression settings), carry the
//! original's features, block size and label, and pass `fsck.f2fs -f`.
//!
//! The originals. Debian's sload.f2fs 1.15 is built without Android's libcutils, so it
//! ignores `-C` (fs_config): modes and owners reach the original through the source tree
//! (chmod, chown as root, sload `-P`), and on writable originals the capabilities (and,
//! without root, the owners) are set afterwards through uf2fs's library, then checked by
//! `fsck.f2fs -f` (as `android_meta.rs` does). It exits 1 after its own fsck repaired the
//! link counts of hard links on `inode_checksum` volumes, which AOSP's mkf2fsuserimg.sh
//! accepts too. It has no LZ4 or LZO either: the compressed original needs an
//! f2fs-tools build that has (`UF2FS_SLOAD_F2FS=/path/to/sload.f2fs`, or the sload.f2fs
//! beside `UF2FS_MKFS_F2FS`), and is skipped, saying so, without one. Every test skips,
//! saying so, when sload.f2fs is not installed (the README's test command installs it).

mod common;

use common::data::{noise, text};
use common::{scratch, uf2fs};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use uf2fs_core::{FileKind, Fs, Ino, SetAttr, Stamp};
use uf2fs_testkit::compare::{compare_dirs, report, CompareOptions};
use uf2fs_testkit::image::tool;
use uf2fs_testkit::run::path_arg;
use uf2fs_testkit::tree::is_root;

/// Entries of the partition: (path under the mount point, uid, gid, mode,
/// capabilities). Directories end in `/`; `-> TARGET` makes a symlink, `= PATH` a hard
/// link of PATH. Everything else is a regular file.
const ENTRIES: &[(&str, u32, u32, u32, u64)] = &[
    ("app/", 0, 0, 0o755, 0),
    ("app/Settings.apk", 0, 0, 0o644, 0),
    ("bin/", 0, 2000, 0o751, 0),
    ("bin/cat -> toybox", 0, 2000, 0o777, 0),
    ("bin/ls = bin/toybox", 0, 2000, 0o755, 0),
    ("bin/ping", 0, 3003, 0o750, 0x2000),
    ("bin/sh", 0, 2000, 0o755, 0),
    ("bin/su", 0, 2000, 0o4750, 0x0000_0020_0000_00c0),
    ("bin/toybox", 0, 2000, 0o755, 0),
    ("empty/", 1000, 1000, 0o1777, 0),
    ("etc/", 0, 0, 0o755, 0),
    ("etc/hosts", 1000, 1000, 0o644, 0),
    ("etc/init/", 0, 0, 0o755, 0),
    ("etc/init/hw.rc", 0, 0, 0o600, 0),
    ("etc/ld.config.txt", 0, 0, 0o644, 0),
    ("lib/", 0, 0, 0o755, 0),
    ("lib/libc++.so", 0, 0, 0o644, 0),
    ("lib/libm.so", 0, 0, 0o644, 0),
    ("lib/libtiny.so", 0, 0, 0o644, 0),
];

/// Labels as AOSP's file_contexts gives them (the last matching line wins).
const FILE_CONTEXTS: &str = "/system(/.*)?\tu:object_r:system_file:s0\n\
/system/bin(/.*)?\tu:object_r:system_exec:s0\n\
/system/bin/sh\tu:object_r:shell_exec:s0\n\
/system/lib/libc\\+\\+\\.so\tu:object_r:system_lib_file:s0\n\
/system/etc/init(/.*)?\tu:object_r:init_file:s0\n";

/// The label [`FILE_CONTEXTS`] gives `path` (absolute, under `/system`).
fn label_of(path: &str) -> &'static str {
    match path {
        "/system/bin/sh" => "u:object_r:shell_exec:s0",
        "/system/lib/libc++.so" => "u:object_r:system_lib_file:s0",
        p if p == "/system/bin" || p.starts_with("/system/bin/") => "u:object_r:system_exec:s0",
        p if p == "/system/etc/init" || p.starts_with("/system/etc/init/") => "u:object_r:init_file:s0",
        _ => "u:object_r:system_file:s0",
    }
}

/// Contents of the regular files.
fn contents(path: &str) -> Vec<u8> {
    match path {
        "app/Settings.apk" => noise(90_000, 1),
        "bin/toybox" => text(70_000, 2),
        "bin/sh" => text(30_000, 3),
        "bin/su" | "bin/ping" => noise(9_000, 4),
        "lib/libc++.so" => text(200_000, 5),
        "lib/libm.so" => text(40_000, 6),
        "lib/libtiny.so" => b"tiny\n".to_vec(),
        p => format!("contents of {p}\n").into_bytes(),
    }
}

/// The source tree, modes and (as root) owners as [`ENTRIES`] says.
fn make_tree(root: &Path) {
    std::fs::create_dir_all(root).unwrap();
    for (spec, uid, gid, _, _) in ENTRIES {
        let (path, link) = match spec.split_once(" -> ") {
            Some((p, t)) => (p, Some(t)),
            None => (*spec, None),
        };
        let (path, hard) = match path.split_once(" = ") {
            Some((p, of)) => (p, Some(of)),
            None => (path, None),
        };
        let p = root.join(path.trim_end_matches('/'));
        if path.ends_with('/') {
            std::fs::create_dir_all(&p).unwrap();
        } else if let Some(t) = link {
            std::os::unix::fs::symlink(t, &p).unwrap();
        } else if let Some(of) = hard {
            // Made after its target, which sorts later: write the target first.
            let target = root.join(of);
            if !target.exists() {
                std::fs::write(&target, contents(of)).unwrap();
            }
            std::fs::hard_link(&target, &p).unwrap();
        } else if !p.exists() {
            std::fs::write(&p, contents(path)).unwrap();
        }
        if is_root() {
            std::os::unix::fs::lchown(&p, Some(*uid), Some(*gid)).unwrap();
        }
    }
    // Modes last (chown clears set-ID bits), deepest first.
    for (spec, _, _, mode, _) in ENTRIES.iter().rev() {
        if !spec.contains(" -> ") {
            let path = spec.split(" = ").next().unwrap().trim_end_matches('/');
            std::fs::set_permissions(root.join(path), std::fs::Permissions::from_mode(*mode)).unwrap();
        }
    }
}

/// The fs_config AOSP would pass (`-C`), keyed under `system/`.
fn fs_config_text() -> String {
    let mut text = String::from("system 0 0 755 capabilities=0x0\n");
    for (spec, uid, gid, mode, caps) in ENTRIES {
        let path = spec.split([' ']).next().unwrap().trim_end_matches('/');
        text.push_str(&format!("system/{path} {uid} {gid} {mode:o} capabilities={caps:#x}\n"));
    }
    text
}

fn capability_xattr(permitted: u64) -> Vec<u8> {
    // Revision 2 with the effective flag, as AOSP's build tools write it.
    [0x0200_0001u32, permitted as u32, 0, (permitted >> 32) as u32, 0]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect()
}

fn run_ok(cmd: &mut Command, allow_exit_1: bool) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let ok = out.status.success() || (allow_exit_1 && out.status.code() == Some(1));
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(ok, "{cmd:?}: {}:\n{text}", out.status);
    text
}

/// `fsck.f2fs -f` finds `img` (a raw image) clean.
fn fsck_clean(img: &Path) {
    let text = run_ok(
        Command::new(tool("fsck.f2fs"))
            .args(["-f", "--dry-run"])
            .arg(img)
            .stdin(std::process::Stdio::null()),
        false,
    );
    let bad = text
        .lines()
        .any(|l| l.contains("[Fail]") || l.contains("[FIX") || l.contains("ASSERT"));
    assert!(!bad, "fsck.f2fs -f {}:\n{text}", img.display());
}

/// Debian's f2fs-tools, or `None` (and why) when sload.f2fs is not installed.
fn sload_installed() -> Option<PathBuf> {
    let sload = tool("sload.f2fs");
    if Command::new(&sload).arg("-V").output().is_err() {
        eprintln!("skipped: sload.f2fs is not installed (Debian package f2fs-tools)");
        return None;
    }
    Some(sload)
}

/// An sload.f2fs that writes LZ4-compressed files: `UF2FS_SLOAD_F2FS`, the one beside
/// `UF2FS_MKFS_F2FS`, or the installed one, tried on a small image.
fn compressing_sload() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("UF2FS_SLOAD_F2FS") {
        candidates.push(p.into());
    }
    if let Some(m) = std::env::var_os("UF2FS_MKFS_F2FS") {
        candidates.push(PathBuf::from(m).with_file_name("sload.f2fs"));
    }
    candidates.push(tool("sload.f2fs"));
    let tmp = scratch("repack-probe-");
    let tree = tmp.path().join("t");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("a.so"), text(40_000, 9)).unwrap();
    for sload in candidates {
        let img = tmp.path().join("probe.img");
        std::fs::File::create(&img).unwrap().set_len(64 << 20).unwrap();
        run_ok(
            Command::new(tool("mkfs.f2fs"))
                .args(["-q", "-f", "-O", "extra_attr,compression"])
                .arg(&img),
            false,
        );
        let ran = Command::new(&sload)
            .arg("-f")
            .arg(&tree)
            .args(["-c", "-a", "lz4"])
            .arg(&img)
            .output();
        if ran.is_err() {
            continue;
        }
        let Ok(fs) = Fs::open(&img, &[]) else { continue };
        let compressed = fs
            .resolve(b"/a.so", false)
            .ok()
            .and_then(|ino| fs.stored_compression(ino).ok().flatten())
            .is_some();
        if compressed {
            return Some(sload);
        }
    }
    eprintln!(
        "skipped: no sload.f2fs here writes LZ4 (Debian's 1.15 has no compressor); set UF2FS_SLOAD_F2FS to an \
         f2fs-tools 1.16 sload.f2fs built with liblz4"
    );
    None
}

/// How one original is made.
struct Original<'a> {
    name: &'a str,
    sload: PathBuf,
    /// mkfs.f2fs options.
    mkfs: &'a [&'a str],
    /// sload.f2fs options besides `-f -C -s -t -T -P`.
    sload_extra: &'a [&'a str],
    /// Whether the original is writable afterwards (not `ro`), so that owners and
    /// capabilities can be set through the library as AOSP's sload would have written
    /// them.
    writable: bool,
    /// Whether sload sets the labels (its build has libselinux); else they are set
    /// afterwards too.
    sload_labels: bool,
    /// Whether the original is turned into an Android sparse image (img2simg).
    sparse: bool,
    /// What `uf2fs info` must find in the repack's options.
    repack_args: &'a [&'a str],
    /// A file the original stores compressed (its settings are compared too).
    compressed: Option<&'a str>,
}

/// Builds the original as AOSP would (see the module notes); returns its path.
fn build_original(o: &Original, dir: &Path) -> PathBuf {
    let tree = dir.join("tree");
    make_tree(&tree);
    let fs_config = dir.join("fs_config");
    std::fs::write(&fs_config, fs_config_text()).unwrap();
    let contexts = dir.join("file_contexts");
    std::fs::write(&contexts, FILE_CONTEXTS).unwrap();
    let img = dir.join("system.img");
    std::fs::File::create(&img).unwrap().set_len(96 << 20).unwrap();
    run_ok(
        Command::new(tool("mkfs.f2fs"))
            .args(["-q", "-f"])
            .args(o.mkfs)
            .arg(&img),
        false,
    );
    let mut sload = Command::new(&o.sload);
    sload.arg("-f").arg(&tree).arg("-C").arg(&fs_config);
    if o.sload_labels {
        sload.arg("-s").arg(&contexts);
    }
    sload
        .args(["-t", "/system", "-T", "1700000000", "-P"])
        .args(o.sload_extra)
        .arg(&img);
    run_ok(&mut sload, true);
    fsck_clean(&img);
    if o.writable {
        let fs = Fs::open_rw(&img, &[]).unwrap();
        // What sload would have written at once leaves the times as sload set them.
        let mut stamps: Vec<(Ino, Stamp)> = Vec::new();
        let mut keep_times = |ino: Ino| {
            let st = fs.stat(ino).unwrap();
            stamps.push((
                ino,
                Stamp {
                    atime: st.atime,
                    mtime: st.mtime,
                    ctime: st.ctime,
                    crtime: st.crtime.unwrap_or(st.ctime),
                    generation: st.generation,
                },
            ));
        };
        keep_times(fs.root());
        for (spec, ..) in ENTRIES {
            let path = spec.split(' ').next().unwrap().trim_end_matches('/');
            keep_times(fs.resolve(format!("/{path}").as_bytes(), false).unwrap());
        }
        let set_label = |ino: Ino, path: &str| {
            if !o.sload_labels {
                fs.set_xattr(ino, b"security.selinux", label_of(path).as_bytes(), 0)
                    .unwrap();
            }
        };
        set_label(fs.root(), "/system");
        for (spec, uid, gid, mode, caps) in ENTRIES {
            let path = spec.split(' ').next().unwrap().trim_end_matches('/');
            let ino = fs.resolve(format!("/{path}").as_bytes(), false).unwrap();
            set_label(ino, &format!("/system/{path}"));
            if spec.contains(" -> ") {
                continue;
            }
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
            // chown clears set-ID bits: the mode again.
            fs.setattr(
                ino,
                &SetAttr {
                    mode: Some(*mode),
                    ..SetAttr::default()
                },
            )
            .unwrap();
        }
        for (ino, stamp) in &stamps {
            fs.set_stamp(*ino, stamp).unwrap();
        }
        fs.unmount().unwrap();
        fsck_clean(&img);
    }
    if o.sparse {
        let sparse = dir.join("system.simg");
        run_ok(Command::new("img2simg").arg(&img).arg(&sparse), false);
        return sparse;
    }
    img
}

/// `uf2fs extract IMAGE OUT --fs-config OUT.fs_config --file-contexts OUT.file_contexts
/// --mount-point /system`; returns the two files.
fn extract(img: &Path, out: &Path) -> (PathBuf, PathBuf) {
    let cfg = out.with_extension("fs_config");
    let fc = out.with_extension("file_contexts");
    uf2fs()
        .run([
            "extract".into(),
            path_arg(img),
            path_arg(out),
            "--fs-config".into(),
            path_arg(&cfg),
            "--file-contexts".into(),
            path_arg(&fc),
            "--mount-point".into(),
            "/system".into(),
        ])
        .assert_ok();
    (cfg, fc)
}

/// What the library reads of every inode of `img`, by path: attributes, times, xattrs,
/// contents, link target, hard-link group, and for compressed files their settings.
fn describe(img: &Path) -> BTreeMap<String, String> {
    let fs = Fs::open(img, &[]).unwrap();
    let mut out = BTreeMap::new();
    let mut first_name: BTreeMap<Ino, String> = BTreeMap::new();
    let mut stack: Vec<(Ino, String)> = vec![(fs.root(), String::new())];
    while let Some((ino, path)) = stack.pop() {
        let st = fs.stat(ino).unwrap();
        let shown = if path.is_empty() { "/".to_string() } else { path.clone() };
        let mut d = format!(
            "{:?} mode {:o} owner {}:{} nlink {} atime {:?} mtime {:?} ctime {:?}",
            st.kind, st.mode, st.uid, st.gid, st.nlink, st.atime, st.mtime, st.ctime
        );
        if st.kind != FileKind::Dir {
            d.push_str(&format!(" size {}", st.size));
        }
        if let Some(first) = first_name.get(&ino) {
            out.insert(shown, format!("hard link of {first}"));
            continue;
        }
        first_name.insert(ino, shown.clone());
        // By name: the order of an inode's xattr entries carries nothing.
        let mut xattrs = fs.list_xattrs(ino).unwrap();
        xattrs.sort_by(|a, b| a.name.cmp(&b.name));
        for x in xattrs {
            d.push_str(&format!(" xattr {}={:02x?}", String::from_utf8_lossy(&x.name), x.value));
        }
        match st.kind {
            FileKind::Dir => {
                for e in fs.read_dir(ino).unwrap() {
                    stack.push((e.ino, format!("{path}/{}", String::from_utf8_lossy(&e.name))));
                }
            }
            FileKind::Symlink => d.push_str(&format!(" -> {:?}", fs.read_link(ino).unwrap())),
            FileKind::File => {
                let mut buf = vec![0u8; st.size as usize];
                let n = fs.read(ino, 0, &mut buf).unwrap();
                assert_eq!(n, buf.len(), "{shown}: short read");
                d.push_str(&format!(" data {:016x}", fnv(&buf)));
                if let Some(c) = fs.stored_compression(ino).unwrap() {
                    // Files under one cluster are stored plainly by uf2fs, whatever
                    // the original did with them.
                    if st.size >= 4096u64 << c.log_cluster_size {
                        d.push_str(&format!(" compressed {c:?}"));
                    }
                }
            }
            _ => {}
        }
        out.insert(shown, d);
    }
    out
}

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The round trip of original `o` (see the module notes).
fn round_trip(o: &Original) {
    let tmp = scratch("repack-");
    let orig = build_original(o, tmp.path());
    let what = o.name;
    let (out1, out2) = (tmp.path().join("out1"), tmp.path().join("out2"));
    let (cfg1, fc1) = extract(&orig, &out1);

    // What info says a repack takes, and the same through --json.
    let info = uf2fs().run([path_arg(Path::new("info")), path_arg(&orig)]);
    let line = info
        .out()
        .lines()
        .find_map(|l| l.strip_prefix("repack with:").map(|r| r.trim().to_string()))
        .unwrap_or_else(|| panic!("{what}: no repack line in\n{}", info.out()));
    let json = uf2fs().run([
        path_arg(Path::new("info")),
        path_arg(Path::new("--json")),
        path_arg(&orig),
    ]);
    let doc: serde_json::Value = serde_json::from_slice(json.assert_ok()).unwrap();
    assert_eq!(doc["repack"]["command"].as_str(), Some(line.as_str()), "{what}");
    for want in o.repack_args {
        assert!(line.contains(want), "{what}: no '{want}' in: {line}");
    }

    let repack = tmp.path().join(if o.sparse { "repack.simg" } else { "repack.img" });
    let made = uf2fs().run([
        "mkfs".into(),
        path_arg(&repack),
        path_arg(&out1),
        "--like".into(),
        path_arg(&orig),
        "--fs-config".into(),
        path_arg(&cfg1),
        "--file-contexts".into(),
        path_arg(&fc1),
        "--mount-point".into(),
        "/system".into(),
    ]);
    made.assert_ok();
    assert!(made.err().is_empty(), "{what}: mkfs --like warned: {}", made.err());
    let raw = if o.sparse {
        let raw = tmp.path().join("repack.raw");
        run_ok(Command::new("simg2img").arg(&repack).arg(&raw), false);
        raw
    } else {
        repack.clone()
    };
    fsck_clean(&raw);
    let (cfg2, fc2) = extract(&repack, &out2);

    // The two extractions are one.
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    assert_eq!(read(&cfg1), read(&cfg2), "{what}: fs_config");
    assert_eq!(read(&fc1), read(&fc2), "{what}: file_contexts");
    // Not atime: packing read the first extraction's files, and the host moved their
    // atimes (the images' atimes are compared below).
    let opts = CompareOptions {
        owners: true,
        root: true,
        atime: false,
        ctime: false,
        xattrs: false,
        contents: true,
    };
    let problems = compare_dirs(&out1, &out2, opts);
    assert!(problems.is_empty(), "{}", report(what, &problems));
    // The extraction holds what the original was given: capabilities, labels, links.
    let cfg = read(&cfg1);
    if o.writable {
        assert!(
            cfg.contains("system/bin/su 0 2000 4750 capabilities=0x20000000c0"),
            "{what}:\n{cfg}"
        );
    }
    assert!(cfg.contains("system/etc/hosts"), "{what}:\n{cfg}");
    assert!(read(&fc1).contains("u:object_r:shell_exec:s0"), "{what}");

    // Every inode as the original has it, and the volume's settings.
    let (a, b) = (describe(&orig), describe(&repack));
    for (path, d) in &a {
        assert_eq!(Some(d), b.get(path), "{what}: {path}");
    }
    assert_eq!(a.len(), b.len(), "{what}: entries {:?}", b.keys().collect::<Vec<_>>());
    assert!(a["/bin/ls"].starts_with("hard link of") || a["/bin/toybox"].starts_with("hard link of"));
    if let Some(path) = o.compressed {
        assert!(a[path].contains("compressed"), "{what}: {}", a[path]);
    }
    let (fa, fb) = (Fs::open(&orig, &[]).unwrap(), Fs::open(&repack, &[]).unwrap());
    let (sa, sb) = (fa.superblock(), fb.superblock());
    assert_eq!(sa.feature_names(), sb.feature_names(), "{what}: features");
    assert_eq!(
        (sa.block_size(), &sa.volume_name),
        (sb.block_size(), &sb.volume_name),
        "{what}"
    );
    if sa.feature_names().iter().any(|f| f == "ro") {
        assert!(sb.block_count <= sa.block_count, "{what}: ro repacks are shrunk to fit");
    } else {
        assert_eq!(sa.block_count, sb.block_count, "{what}: the original's size");
    }
    assert_eq!(is_sparse(&orig), is_sparse(&repack), "{what}: sparse");
}

/// Whether `p` starts with the Android sparse image magic.
fn is_sparse(p: &Path) -> bool {
    std::fs::read(p).unwrap()[..4] == 0xed26_ff3au32.to_le_bytes()
}

#[test]
fn an_android_image_repacked_like_itself_extracts_the_same() {
    let Some(sload) = sload_installed() else { return };
    round_trip(&Original {
        name: "extra_attr,inode_checksum,sb_checksum,inode_crtime, label",
        sload,
        mkfs: &[
            "-O",
            "extra_attr,inode_checksum,sb_checksum,inode_crtime",
            "-l",
            "system",
        ],
        sload_extra: &[],
        writable: true,
        sload_labels: true,
        sparse: false,
        repack_args: &["-O extra_attr,inode_checksum,inode_crtime,sb_checksum -b 4096 -l system --size 100663296"],
        compressed: None,
    });
}

#[test]
fn an_ro_sparse_android_image_repacked_like_itself_extracts_the_same() {
    let Some(sload) = sload_installed() else { return };
    round_trip(&Original {
        name: "ro,extra_attr,inode_checksum,sb_checksum, sparse",
        sload,
        mkfs: &["-O", "ro,extra_attr,inode_checksum,sb_checksum"],
        sload_extra: &[],
        writable: false,
        sload_labels: true,
        sparse: true,
        // Shrunk to fit: no --size.
        repack_args: &["-O extra_attr,inode_checksum,sb_checksum,ro -b 4096 --sparse"],
        compressed: None,
    });
}

#[test]
fn a_compressed_android_image_repacked_like_itself_extracts_the_same() {
    if sload_installed().is_none() {
        return;
    }
    let Some(sload) = compressing_sload() else { return };
    round_trip(&Original {
        name: "compression lz4, clusters of 8, .so only, released",
        sload,
        mkfs: &["-O", "extra_attr,inode_checksum,sb_checksum,compression"],
        sload_extra: &["-c", "-a", "lz4", "-L", "3", "-i", "so", "-r"],
        writable: true,
        sload_labels: false,
        sparse: false,
        repack_args: &[
            "--compress lz4 --compress-log-size 3 --compress-extension so --release-blocks",
            "compression -b 4096 --size 100663296",
        ],
        compressed: Some("/lib/libc++.so"),
    });
}
