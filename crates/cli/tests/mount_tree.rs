//! The big-tree oracle on the real FUSE mount: a seeded tree of thousands of files
//! (`Tree::copy_mix`: sizes 0 to 4 MiB, nested directories, a directory of a thousand
//! entries, hard links, symlinks, fifos, setuid/setgid/sticky modes, owners, times,
//! `user.*` and `trusted.*` xattrs, some lists big enough for an xattr node) is copied
//! with `cp -a` onto a fresh read-write mount and onto a host directory, the reference.
//! Then, in that mount and in a second read-write one, hundreds of seeded changes are
//! made to both (renames of files and directories, RENAME_EXCHANGE, unlinks, `rm -r`,
//! overwrites, truncation down and up, appends, writes past the end, new files,
//! directories, links and symlinks, xattrs set, grown and removed, chmod, chown, times
//! with nanoseconds); every change must succeed on both or fail alike. After each mount
//! `fsck.f2fs -f` must find the image clean; a read-only remount must then show exactly
//! the reference: names, contents, modes, owners, mtimes, link counts and which names
//! share an inode, symlink targets, xattrs.
//!
//! Both kinds of image: `uf2fs mkfs`, and mkfs.f2fs + sload.f2fs (extra_attr and
//! inode_checksum, already holding a small tree, which the changes reach too).
//!
//! Needs /dev/fuse, fusermount3, cp and f2fs-tools. Without /dev/fuse the test prints
//! why and passes, unless UF2FS_REQUIRE_FUSE is set (CI sets it), in which case it
//! fails. Run as root (as CI does) it also covers owners and `trusted.*`.

mod common;

use common::fsck;
use common::mount::{fuse_available, Mounted, Volume};
use common::{assert_no_problems, SMALL_SEED};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::time::Instant;
use uf2fs_testkit::compare::{compare_dirs, CompareOptions};
use uf2fs_testkit::mirror::Mirror;
use uf2fs_testkit::tree::{host_path, is_root, Tree};
use uf2fs_testkit::{Rng, Variant};

/// Seed of the copied tree.
const TREE_SEED: u64 = 0x7ee5_c0b1;
/// Regular files in it (about 190 MB of data).
const FILES: usize = 4000;
/// Changes made in each of the two read-write mounts.
const CHANGES: usize = 800;
/// Size of both images (sparse).
const IMAGE_SIZE: u64 = 1 << 30;

/// Where the changes may pick from: the reference tree's entries by kind.
#[derive(Default)]
struct Listing {
    files: Vec<Vec<u8>>,
    /// Directories, the root ("") included.
    dirs: Vec<Vec<u8>>,
    others: Vec<Vec<u8>>,
}

fn list(root: &Path) -> Listing {
    let mut out = Listing::default();
    let mut stack = vec![Vec::new()];
    while let Some(rel) = stack.pop() {
        out.dirs.push(rel.clone());
        for entry in fs::read_dir(host_path(root, &rel)).unwrap() {
            let entry = entry.unwrap();
            let mut child = rel.clone();
            if !child.is_empty() {
                child.push(b'/');
            }
            child.extend_from_slice(entry.file_name().as_bytes());
            let ft = entry.file_type().unwrap();
            if ft.is_dir() {
                stack.push(child);
            } else if ft.is_file() {
                out.files.push(child);
            } else {
                out.others.push(child);
            }
        }
    }
    out.files.sort();
    out.dirs.sort();
    out.others.sort();
    out
}

fn join(dir: &[u8], name: &str) -> Vec<u8> {
    if dir.is_empty() {
        name.as_bytes().to_vec()
    } else {
        [dir, b"/", name.as_bytes()].concat()
    }
}

fn random_bytes(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rng.fill(&mut v);
    v
}

/// `renameat2(from, to, RENAME_EXCHANGE)`.
fn exchange(from: &Path, to: &Path) -> std::io::Result<()> {
    use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
    renameat2(AT_FDCWD, from, AT_FDCWD, to, RenameFlags::RENAME_EXCHANGE).map_err(std::io::Error::from)
}

/// `count` seeded changes through `m`; new names carry `tag` so that sessions do not
/// collide. `Err` when the mount and the reference disagree on one.
fn change(m: &mut Mirror, rng: &mut Rng, tag: &str, count: usize) -> Result<(), String> {
    let root = is_root();
    let mut l = list(m.reference());
    for i in 0..count {
        if i % 20 == 0 {
            l = list(m.reference());
        }
        let fresh = format!("{tag}{i:04}");
        if l.files.is_empty() {
            return Err("no regular file left to change".into());
        }
        let file = rng.pick(&l.files).clone();
        let dir = rng.pick(&l.dirs).clone();
        // A symlink or fifo (a file when none is left).
        let other = if l.others.is_empty() {
            file.clone()
        } else {
            rng.pick(&l.others).clone()
        };
        let size = fs::metadata(host_path(m.reference(), &file)).map_or(0, |md| md.size());
        match rng.below(100) {
            // Overwrites: small and unaligned, or whole blocks.
            0..=11 => {
                let len = rng.range(1, 20_000) as usize;
                let at = rng.below(size + 1);
                m.write_at(&file, at, &random_bytes(rng, len))?;
            }
            12..=17 => {
                let blocks = rng.range(1, 64) as usize;
                let at = rng.below(size / 4096 + 1) * 4096;
                m.write_at(&file, at, &random_bytes(rng, blocks * 4096))?;
            }
            // Truncation down (often to nothing or to what fits inline) and up (a hole).
            18..=23 => {
                let len = match rng.below(4) {
                    0 => 0,
                    1 => rng.below(3400),
                    _ => rng.below(size + 1),
                };
                m.set_len(&file, len)?;
            }
            24..=27 => {
                m.set_len(&file, size + rng.range(1, 3 << 20))?;
            }
            // Extension: appends, and a write past the end.
            28..=32 => {
                let len = rng.range(1, 150_000) as usize;
                m.append(&file, &random_bytes(rng, len))?;
            }
            33..=35 => {
                let len = rng.range(1, 9000) as usize;
                m.write_at(&file, size + rng.range(1, 2 << 20), &random_bytes(rng, len))?;
            }
            // Renames: a file within or across directories, over another file, a
            // directory elsewhere (not below itself), an exchange.
            36..=43 => {
                m.rename(&file, &join(&dir, &fresh))?;
            }
            44..=46 => {
                let victim = rng.pick(&l.files).clone();
                m.rename(&file, &victim)?;
            }
            47..=49 => {
                let from = rng.pick(&l.dirs).clone();
                let inside = dir == from || dir.starts_with(&[from.as_slice(), b"/"].concat());
                if !from.is_empty() && !inside {
                    m.rename(&from, &join(&dir, &fresh))?;
                }
            }
            50..=51 => {
                let other = if rng.chance(1, 2) {
                    rng.pick(&l.files).clone()
                } else {
                    other
                };
                m.rename_with(&file, &other, true, exchange)?;
            }
            // Removals: a name of a file, a symlink or fifo, now and then a subtree.
            52..=59 => {
                m.remove_file(&file)?;
            }
            60..=62 => {
                m.remove_file(&other)?;
            }
            63 => {
                // Only small subtrees (deep ones): the rest of the tree stays to be read.
                if dir.iter().filter(|&&c| c == b'/').count() >= 3 {
                    m.remove_tree(&dir)?;
                }
            }
            // New entries.
            64..=69 => {
                let len = match rng.below(3) {
                    0 => rng.below(3500),
                    1 => rng.below(70_000),
                    _ => rng.below(600_000),
                } as usize;
                let perm = *rng.pick(&[0o644, 0o600, 0o755, 0o4755, 0o1600]);
                m.create(&join(&dir, &fresh), &random_bytes(rng, len), perm)?;
            }
            70..=71 => {
                m.mkdir(&join(&dir, &fresh))?;
            }
            72..=75 => {
                m.hard_link(&file, &join(&dir, &fresh))?;
            }
            76..=77 => {
                let len = rng.range(1, 4096) as usize;
                let target: Vec<u8> = b"t/".iter().copied().cycle().take(len).collect();
                m.symlink(&target, &join(&dir, &fresh))?;
            }
            // Xattrs: small ones, lists grown past the inode into an xattr node,
            // replaced and removed ones, and what Linux refuses (user.* on a symlink).
            78..=83 => {
                let target = if rng.chance(1, 3) { dir.clone() } else { file.clone() };
                let name = format!("user.m{}", rng.below(6));
                let len = rng.below(60) as usize;
                m.set_xattr(&target, name.as_bytes(), &random_bytes(rng, len))?;
            }
            84..=85 => {
                for k in 0..rng.range(3, 8) {
                    let len = rng.range(200, 420) as usize;
                    let name = format!("user.grow{k}");
                    m.set_xattr(&file, name.as_bytes(), &random_bytes(rng, len))?;
                }
            }
            86..=88 => {
                let target = if rng.chance(1, 3) { dir.clone() } else { file.clone() };
                let names = xattr::list(host_path(m.reference(), &target))
                    .map(|n| n.map(|n| n.as_bytes().to_vec()).collect::<Vec<_>>())
                    .unwrap_or_default();
                if let Some(name) = names.first() {
                    m.remove_xattr(&target, name)?;
                }
            }
            89 => {
                let link = other;
                let len = rng.below(50) as usize;
                let name: &[u8] = if root { b"trusted.m" } else { b"user.m" };
                m.set_xattr(&link, name, &random_bytes(rng, len))?;
            }
            // Attributes.
            90..=94 => {
                let target = if rng.chance(1, 4) { dir.clone() } else { file.clone() };
                let perm = *rng.pick(&[0o644, 0o600, 0o000, 0o4755, 0o2755, 0o1777, 0o755, 0o444]);
                m.chmod(&target, perm)?;
            }
            95..=97 if root => {
                let target = rng.pick(&[file.clone(), dir.clone(), other]).clone();
                let (uid, gid) = *rng.pick(&[(0, 0), (1000, 1000), (70_000, 5), (4_000_000_000, 12)]);
                m.chown(&target, uid, gid)?;
            }
            _ => {
                m.stamp(&file)?;
                // fsync through the mount (the reference needs none).
                if let Ok(f) = fs::File::open(host_path(m.mount(), &file)) {
                    f.sync_all()
                        .map_err(|e| format!("fsync of {}: {e}", String::from_utf8_lossy(&file)))?;
                }
            }
        }
    }
    Ok(())
}

fn cp_a(from: &Path, to: &Path) {
    let out = Command::new("cp").arg("-a").arg(from).arg(to).output().expect("run cp");
    assert!(
        out.status.success(),
        "cp -a {} {} failed ({}): {}",
        from.display(),
        to.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn options(contents: bool) -> CompareOptions {
    CompareOptions {
        owners: is_root(),
        root: false,
        atime: false,
        ctime: false,
        xattrs: true,
        contents,
    }
}

fn unmount(m: &mut Mounted, when: &str) {
    let (ok, log) = m.unmount();
    assert!(
        ok,
        "{when}: uf2fs mount -f did not exit 0 after fusermount3 -u; log: {log}"
    );
}

/// How the image is made.
#[derive(Clone, Copy, PartialEq)]
enum Maker {
    /// `uf2fs mkfs`, empty.
    Uf2fs,
    /// mkfs.f2fs -O extra_attr,inode_checksum + sload.f2fs of the small tree.
    Sload,
}

fn run(maker: Maker) {
    if !fuse_available(&[("fsck.f2fs", "f2fs-tools"), ("cp", "coreutils")]) {
        return;
    }
    let started = Instant::now();
    let volume = Volume::empty("mount-tree-");
    let (reference, src) = (volume.tmp.path().join("ref"), volume.tmp.path().join("src"));
    for d in [&reference, &src] {
        fs::create_dir(d).unwrap();
    }
    let tree = Tree::copy_mix(TREE_SEED, FILES, is_root());
    tree.write(&src).unwrap();
    match maker {
        Maker::Uf2fs => volume.mkfs(IMAGE_SIZE, &[]),
        Maker::Sload => {
            let small = volume.tmp.path().join("small");
            fs::create_dir(&small).unwrap();
            Tree::small(SMALL_SEED).write(&small).unwrap();
            let (variant, work) = (Variant::named("extra_csum"), volume.tmp.path());
            uf2fs_testkit::image::make_image(&volume.img, IMAGE_SIZE, variant, &small, work)
                .unwrap_or_else(|e| panic!("mkfs.f2fs + sload.f2fs: {e}"));
        }
    }
    let Volume { tmp, img, mnt } = volume;
    let made = started.elapsed();

    // First mount: cp -a, checked as it stands, then the first half of the changes.
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount1.log"), &[]);
    if maker == Maker::Sload {
        // What sload put there is the starting point of the reference too.
        let out = Command::new("cp")
            .arg("-a")
            .arg(mnt.join("."))
            .arg(&reference)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let t = Instant::now();
    cp_a(&src, &mnt.join("tree"));
    let copy_time = t.elapsed();
    cp_a(&src, &reference.join("tree"));
    assert_no_problems(
        "after cp -a (metadata, on the mount)",
        &compare_dirs(&reference, &mnt, options(false)),
    );
    let mut mirror = Mirror::new(&reference, &mnt, TREE_SEED ^ 0x5eed);
    let mut rng = Rng::new(TREE_SEED ^ 0xc4a9);
    let t = Instant::now();
    change(&mut mirror, &mut rng, "a", CHANGES).unwrap_or_else(|e| panic!("first mount: {e}"));
    unmount(&mut m, "first mount");
    fsck::unmounted(&img, tmp.path(), "after the copy and the first changes");

    // Second mount: more changes on what was read back from the image.
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount2.log"), &[]);
    change(&mut mirror, &mut rng, "b", CHANGES).unwrap_or_else(|e| panic!("second mount: {e}"));
    mirror.settle_times().unwrap_or_else(|e| panic!("second mount: {e}"));
    let change_time = t.elapsed();
    unmount(&mut m, "second mount");
    fsck::unmounted(&img, tmp.path(), "after the second changes");

    // Read-only: everything as the reference has it.
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("mount3.log"), &["-o", "ro"]);
    let t = Instant::now();
    let problems = compare_dirs(&reference, &mnt, options(true));
    let compare_time = t.elapsed();
    unmount(&mut m, "read-only mount");
    assert_no_problems("read-only remount against the reference", &problems);
    let entries = list(&reference);
    assert!(
        mirror.succeeded > CHANGES,
        "only {} changes succeeded ({} failed on both sides)",
        mirror.succeeded,
        mirror.failed_alike
    );
    eprintln!(
        "mount_tree ({}): {} entries ({} files, {} dirs) at the end, {} operations agreed, {} failed alike; \
         image {:.1?}, cp -a {:.1?} ({:.1} MB), changes {:.1?}, compare {:.1?}, total {:.1?}",
        if maker == Maker::Uf2fs {
            "uf2fs mkfs"
        } else {
            "mkfs.f2fs + sload.f2fs"
        },
        entries.files.len() + entries.dirs.len() + entries.others.len(),
        entries.files.len(),
        entries.dirs.len(),
        mirror.succeeded,
        mirror.failed_alike,
        made,
        copy_time,
        tree.data_bytes() as f64 / 1e6,
        change_time,
        compare_time,
        started.elapsed()
    );
}

#[test]
fn copied_tree_survives_changes_on_a_uf2fs_mkfs_image() {
    run(Maker::Uf2fs);
}

#[test]
fn copied_tree_survives_changes_on_a_sload_image() {
    run(Maker::Sload);
}
