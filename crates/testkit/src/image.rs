//! Images built by f2fs-tools from generated trees: `mkfs.f2fs` on a sparse file, then
//! `sload.f2fs` from the tree. Built images are kept under a cache directory keyed by the
//! tree's fingerprint and the variant, so repeated test runs reuse them.

use crate::tree::{current_owner, Geometry, SloadOptions, Tree, FILE_CONTEXTS};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One way of making an image: mkfs.f2fs arguments and sload.f2fs options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// Short name (directory names, messages).
    pub name: &'static str,
    /// Extra mkfs.f2fs arguments.
    pub mkfs_args: &'static [&'static str],
    /// How sload.f2fs is run.
    pub sload: SloadOptions,
    /// Feature names `uf2fs info` must mention.
    pub features: &'static [&'static str],
    /// Data addresses an inode holds on this variant: 923 - extra_isize/4 - 50 inline
    /// xattr slots (sload.f2fs gives every inode the inline_xattr flag). Checked by
    /// experiment with dump.f2fs: default images 873; extra_attr with inode_checksum
    /// gives extra_isize 12, hence 870.
    pub addrs_in_inode: u64,
    /// Largest regular file (in blocks) the tree may hold on this variant.
    ///
    /// sload.f2fs 1.15 with `flexible_inline_xattr` lays out files larger than the inode's
    /// own addresses wrongly: it ignores the 50 inline-xattr slots, writes block
    /// addresses 870..919 into the inline xattr area and starts the first direct node at
    /// file block 920, where F2FS (kernel, and dump.f2fs) expects it at block 870. Such
    /// files read back wrong from any correct reader, so on that variant the tree keeps
    /// files within the inode (the other variants cover direct and indirect nodes).
    pub max_file_blocks: Option<u64>,
}

/// The variants every end-to-end test runs on.
pub const VARIANTS: [Variant; 4] = [
    Variant {
        name: "default",
        mkfs_args: &[],
        sload: SloadOptions {
            preserve_owner: false,
            selinux_labels: false,
        },
        features: &[],
        addrs_in_inode: 873,
        max_file_blocks: None,
    },
    Variant {
        name: "seg4",
        mkfs_args: &["-s", "4"],
        sload: SloadOptions {
            preserve_owner: true,
            selinux_labels: true,
        },
        features: &[],
        addrs_in_inode: 873,
        max_file_blocks: None,
    },
    Variant {
        name: "extra_flex",
        mkfs_args: &["-O", "extra_attr,inode_checksum,flexible_inline_xattr"],
        // No labels: sload.f2fs 1.15 writes them into xattr node blocks while
        // i_inline_xattr_size is still 0; its fsck then sets that to 50, and a reader
        // that follows F2FS (inline area first, node block after it) finds an empty
        // inline area and so no xattrs at all. Labels are tested on seg4.
        sload: SloadOptions {
            preserve_owner: true,
            selinux_labels: false,
        },
        features: &["extra_attr", "inode_checksum", "flexible_inline_xattr"],
        addrs_in_inode: 870,
        max_file_blocks: Some(870),
    },
    Variant {
        name: "extra_csum",
        mkfs_args: &["-O", "extra_attr,inode_checksum"],
        sload: SloadOptions {
            preserve_owner: true,
            selinux_labels: false,
        },
        features: &["extra_attr", "inode_checksum"],
        addrs_in_inode: 870,
        max_file_blocks: None,
    },
];

impl Variant {
    /// The variant called `name`.
    pub fn named(name: &str) -> &'static Variant {
        VARIANTS
            .iter()
            .find(|v| v.name == name)
            .unwrap_or_else(|| panic!("no variant {name}"))
    }

    /// The geometry its full tree is sized for.
    pub fn geometry(&self) -> Geometry {
        Geometry {
            addrs_in_inode: self.addrs_in_inode,
            max_file_blocks: self.max_file_blocks,
        }
    }
}

/// A built image and the tree it was made from.
#[derive(Debug)]
pub struct Image {
    /// The variant.
    pub variant: Variant,
    /// The image file.
    pub path: PathBuf,
    /// The source tree on the host.
    pub tree_dir: PathBuf,
    /// The tree spec.
    pub tree: Tree,
    /// Who ran mkfs.f2fs (owner of the root directory).
    pub root_owner: (u32, u32),
}

/// Fails with a message saying which f2fs-tools program is missing: these tests never
/// skip for want of their oracle.
pub fn require_tools() {
    for tool in ["mkfs.f2fs", "sload.f2fs", "fsck.f2fs", "dump.f2fs"] {
        let found = std::env::var_os("PATH")
            .map(|paths| std::env::split_paths(&paths).any(|d| d.join(tool).is_file()))
            .unwrap_or(false);
        let found = found || ["/sbin", "/usr/sbin"].iter().any(|d| Path::new(d).join(tool).is_file());
        assert!(
            found,
            "{tool} not found: install f2fs-tools (Debian package f2fs-tools); these tests need it as their oracle"
        );
    }
}

/// Path of an f2fs-tools program (they live in /usr/sbin, often not on a user's PATH).
pub fn tool(name: &str) -> PathBuf {
    for d in ["/usr/sbin", "/sbin"] {
        let p = Path::new(d).join(name);
        if p.is_file() {
            return p;
        }
    }
    PathBuf::from(name)
}

/// The version line of an f2fs-tools program (`mkfs.f2fs 1.15.0 (2022-05-13)`).
pub fn tool_version(name: &str) -> String {
    let out = Command::new(tool(name)).arg("-V").output();
    match out {
        Ok(o) => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        Err(e) => panic!("cannot run {name}: {e}"),
    }
}

/// Builds (or reuses from `cache_dir`) the image of `tree` for `variant`. `label` tells
/// images of different trees apart in the cache.
pub fn build(cache_dir: &Path, label: &str, variant: &Variant, tree: Tree) -> Image {
    require_tools();
    let key = format!(
        "{label}-{}-{:016x}",
        variant.name,
        crate::rng::fnv1a(
            tree.fingerprint(),
            format!("{variant:?}{}", tool_version("sload.f2fs")).as_bytes()
        )
    );
    let dir = cache_dir.join("uf2fs-images").join(&key);
    let root_owner = current_owner();
    let image = |dir: &Path| Image {
        variant: *variant,
        path: dir.join("image.f2fs"),
        tree_dir: dir.join("tree"),
        tree: tree.clone(),
        root_owner,
    };
    if dir.join("done").is_file() {
        return image(&dir);
    }
    remove_stale(
        &cache_dir.join("uf2fs-images"),
        &format!("{label}-{}-", variant.name),
        &key,
    );
    let tmp = cache_dir
        .join("uf2fs-images")
        .join(format!("{key}.tmp{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(tmp.join("tree")).expect("create image build directory");
    let img = tmp.join("image.f2fs");
    let made = tree
        .write(&tmp.join("tree"))
        .map_err(|e| format!("writing the source tree: {e}"))
        .and_then(|()| {
            make_image(&img, image_size(&tree), variant, &tmp.join("tree"), &tmp).map_err(|e| e.to_string())
        });
    if let Err(e) = made {
        let _ = fs::remove_dir_all(&tmp);
        panic!("building image {key}: {e}");
    }
    fs::write(
        tmp.join("done"),
        format!("{}\n{}\n", tool_version("mkfs.f2fs"), tool_version("sload.f2fs")),
    )
    .unwrap();
    match fs::rename(&tmp, &dir) {
        Ok(()) => {}
        // Another process finished the same image first: use theirs.
        Err(_) if dir.join("done").is_file() => {
            let _ = fs::remove_dir_all(&tmp);
        }
        Err(e) => panic!("publishing image {key}: {e}"),
    }
    image(&dir)
}

/// Removes cached images of older trees for the same label and variant, and build
/// directories left by processes that are gone.
fn remove_stale(images: &Path, prefix: &str, key: &str) {
    let Ok(entries) = fs::read_dir(images) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with(prefix) || name == key {
            continue;
        }
        let stale = match name.split_once(".tmp") {
            Some((_, pid)) => !Path::new("/proc").join(pid).exists(),
            None => true,
        };
        if stale {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// Image size (sparse): three times the data plus 256 MiB, so that even `-s 4` images
/// with their larger reserved space, one node block per inode and the dentry blocks of
/// the big directory have room.
fn image_size(tree: &Tree) -> u64 {
    let want = 3 * tree.data_bytes() + (256 << 20);
    want.div_ceil(1 << 20) << 20
}

/// mkfs.f2fs + sload.f2fs + fsck.f2fs on `img` (created sparse, `size` bytes).
pub fn make_image(img: &Path, size: u64, variant: &Variant, tree_dir: &Path, work: &Path) -> io::Result<()> {
    let f = fs::File::create(img)?;
    f.set_len(size)?;
    drop(f);
    let mut mkfs = Command::new(tool("mkfs.f2fs"));
    mkfs.arg("-f").args(variant.mkfs_args).arg(img);
    run_checked(&mut mkfs)?;
    let mut sload = Command::new(tool("sload.f2fs"));
    sload.arg("-f").arg(tree_dir).arg("-t").arg("/");
    if variant.sload.preserve_owner {
        sload.arg("-P");
    }
    if variant.sload.selinux_labels {
        let fc = work.join("file_contexts");
        fs::write(&fc, FILE_CONTEXTS)?;
        sload.arg("-s").arg(fc);
    }
    sload.arg(img);
    if variant
        .mkfs_args
        .iter()
        .any(|a| a.contains("flexible_inline_xattr") || a.contains("inode_checksum"))
    {
        // sload.f2fs 1.15 runs its own fsck at the end and exits 1 when that repaired
        // something. On these features it always does: with flexible_inline_xattr it
        // leaves i_inline_xattr_size at 0 (see `Variant::max_file_blocks`), and with
        // inode_checksum it does not update the checksum of an inode it gives a second
        // hard link. Both repairs leave file data alone; the separate fsck below and the
        // tests' comparisons judge the result. On other variants a repair means sload
        // wrote something it did not mean to, so exit 1 fails the build there.
        let out = sload.output()?;
        if !matches!(out.status.code(), Some(0 | 1)) {
            return Err(io::Error::other(format!("{sload:?} exited with {}", out.status)));
        }
    } else {
        run_checked(&mut sload)?;
    }
    // The oracle checks its own work: fsck.f2fs must find the image clean.
    let mut fsck = Command::new(tool("fsck.f2fs"));
    fsck.arg("--dry-run")
        .arg("-f")
        .arg(img)
        .current_dir(work)
        .stdin(std::process::Stdio::null());
    run_checked(&mut fsck)?;
    Ok(())
}

fn run_checked(cmd: &mut Command) -> io::Result<()> {
    let out = cmd.output().map_err(|e| io::Error::other(format!("{cmd:?}: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let tail = |b: &[u8]| {
        let s = String::from_utf8_lossy(b);
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    };
    Err(io::Error::other(format!(
        "{cmd:?} exited with {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        tail(&out.stdout),
        tail(&out.stderr)
    )))
}
