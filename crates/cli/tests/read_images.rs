//! End to end: images made by mkfs.f2fs + sload.f2fs from seeded trees, read back with
//! `uf2fs info`, `ls`, `cat` and `extract`, and compared with the source tree (as
//! sload.f2fs stores it: see `uf2fs_testkit::tree::SloadOptions`).
//!
//! Every test runs on every mkfs variant (`uf2fs_testkit::VARIANTS`): default, `-s 4`,
//! `-O extra_attr,inode_checksum,flexible_inline_xattr` and `-O extra_attr,inode_checksum`.

mod common;

use common::{assert_no_problems, full, scratch, uf2fs, Fixture};
use std::collections::BTreeMap;
use uf2fs_testkit::compare::{compare_tree, host_keeps_security_xattrs, CompareOptions};
use uf2fs_testkit::lsfmt::{mode_string, parse_long_line, utc_minute};
use uf2fs_testkit::run::{arg, image_arg, path_arg};
use uf2fs_testkit::tree::{is_root, parent_of, Expected, ExpectedKind};

macro_rules! per_variant {
    ($($variant:ident),*) => {$(
        mod $variant {
            #[test]
            fn info_names_the_features() {
                super::info(stringify!($variant));
            }
            #[test]
            fn ls_recursive_lists_every_name() {
                super::ls_recursive(stringify!($variant));
            }
            #[test]
            fn ls_long_shows_every_attribute() {
                super::ls_long(stringify!($variant));
            }
            #[test]
            fn ls_edge_cases() {
                super::ls_edges(stringify!($variant));
            }
            #[test]
            fn cat_every_file() {
                super::cat_every_file(stringify!($variant));
            }
            #[test]
            fn cat_follows_symlinks_and_fails_cleanly() {
                super::cat_edges(stringify!($variant));
            }
            #[test]
            fn extract_reproduces_the_tree() {
                super::extract_all(stringify!($variant));
            }
            #[test]
            fn boundary_files_use_the_intended_node_kinds() {
                super::boundary_layout(stringify!($variant));
            }
            #[test]
            fn extract_subtree_counts_links_inside_it() {
                super::extract_subtree(stringify!($variant));
            }
        }
    )*};
}

per_variant!(default, seg4, extra_flex, extra_csum);

/// The last component of a relative path.
fn base(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&c| c == b'/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

/// Directory path -> sorted names of its children.
fn children(expected: &BTreeMap<Vec<u8>, Expected>) -> BTreeMap<Vec<u8>, Vec<Vec<u8>>> {
    let mut out: BTreeMap<Vec<u8>, Vec<Vec<u8>>> = BTreeMap::new();
    for (p, x) in expected {
        if x.kind == ExpectedKind::Dir {
            out.entry(p.clone()).or_default();
        }
        if !p.is_empty() {
            out.entry(parent_of(p).to_vec()).or_default().push(base(p).to_vec());
        }
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

/// Splits `ls -R` output into (directory header without the trailing ':', lines).
fn sections(out: &[u8]) -> Vec<(Vec<u8>, Vec<Vec<u8>>)> {
    let mut result = Vec::new();
    let text = out.strip_suffix(b"\n").unwrap_or(out);
    for block in split_subslice(text, b"\n\n") {
        let mut lines = block.split(|&c| c == b'\n');
        let header = lines.next().unwrap_or_default();
        let header = header
            .strip_suffix(b":")
            .unwrap_or_else(|| panic!("bad ls -R header {:?}", String::from_utf8_lossy(header)));
        result.push((header.to_vec(), lines.map(<[u8]>::to_vec).collect()));
    }
    result
}

fn split_subslice<'a>(s: &'a [u8], sep: &[u8]) -> Vec<&'a [u8]> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i + sep.len() <= s.len() {
        if &s[i..i + sep.len()] == sep {
            parts.push(&s[start..i]);
            i += sep.len();
            start = i;
        } else {
            i += 1;
        }
    }
    parts.push(&s[start..]);
    parts
}

/// `ls -R` header for a relative path: the CLI shows in-image absolute paths.
fn header_to_rel(h: &[u8]) -> Vec<u8> {
    let h = h.strip_prefix(b"/").unwrap_or(h);
    h.to_vec()
}

fn info(variant: &str) {
    let fx = full(variant);
    let out = uf2fs().run([arg(b"info"), path_arg(fx.img())]);
    let text = String::from_utf8_lossy(out.assert_ok()).into_owned();
    assert!(!text.trim().is_empty(), "info printed nothing");
    for feature in fx.variant().features {
        assert!(
            text.contains(feature),
            "info on {variant} should mention feature {feature}:\n{text}"
        );
    }
    assert!(out.stderr.is_empty(), "info wrote to stderr: {}", out.err());
}

fn ls_recursive(variant: &str) {
    let fx = full(variant);
    let out = uf2fs().run([arg(b"ls"), arg(b"-R"), path_arg(fx.img())]);
    let got: BTreeMap<Vec<u8>, Vec<Vec<u8>>> = sections(out.assert_ok())
        .into_iter()
        .map(|(h, mut names)| {
            names.sort();
            (header_to_rel(&h), names)
        })
        .collect();
    let want = children(&fx.expected);
    let mut problems = Vec::new();
    for (dir, names) in &want {
        match got.get(dir) {
            None => problems.push(format!("directory /{} not listed", String::from_utf8_lossy(dir))),
            Some(g) if g != names => {
                let missing: Vec<_> = names
                    .iter()
                    .filter(|n| !g.contains(n))
                    .map(|n| String::from_utf8_lossy(n))
                    .take(5)
                    .collect();
                let extra: Vec<_> = g
                    .iter()
                    .filter(|n| !names.contains(n))
                    .map(|n| String::from_utf8_lossy(n))
                    .take(5)
                    .collect();
                problems.push(format!(
                    "/{}: {} names expected, {} listed; missing {missing:?}, unexpected {extra:?}",
                    String::from_utf8_lossy(dir),
                    names.len(),
                    g.len()
                ));
            }
            Some(_) => {}
        }
    }
    for dir in got.keys() {
        if !want.contains_key(dir) {
            problems.push(format!("unexpected section /{}", String::from_utf8_lossy(dir)));
        }
    }
    assert_no_problems(&format!("ls -R on {variant}"), &problems);
}

/// The `ls -l` problems of one line against what is expected at `path`.
fn check_long_line(fx: &Fixture, path: &[u8], line: &[u8], problems: &mut Vec<String>) {
    let want = &fx.expected[path];
    let dir = parent_of(path).to_vec();
    let is_symlink = |name: &[u8]| {
        let mut p = dir.clone();
        if !p.is_empty() {
            p.push(b'/');
        }
        p.extend_from_slice(name);
        matches!(fx.expected.get(&p).map(|x| &x.kind), Some(ExpectedKind::Symlink(_)))
    };
    let Some(l) = parse_long_line(line, is_symlink) else {
        problems.push(format!("unparsable ls -l line {:?}", String::from_utf8_lossy(line)));
        return;
    };
    let name = String::from_utf8_lossy(path).into_owned();
    let mut differ = |what: &str, w: String, g: &str| {
        if w != g {
            problems.push(format!("/{name}: ls -l {what}: expected {w:?}, got {g:?}"));
        }
    };
    differ("mode", mode_string(want.mode()), &l.mode);
    differ("links", want.nlink.to_string(), &l.nlink);
    differ("uid", want.uid.to_string(), &l.uid);
    differ("gid", want.gid.to_string(), &l.gid);
    if let Some(size) = want.size() {
        differ("size", size.to_string(), &l.size);
    }
    if let Some(t) = want.mtime {
        differ("mtime", utc_minute(t), &l.mtime);
    }
    let want_target = match &want.kind {
        ExpectedKind::Symlink(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    };
    let got_target = l.target.as_ref().map(|t| String::from_utf8_lossy(t).into_owned());
    if want_target != got_target {
        problems.push(format!(
            "/{name}: ls -l target: expected {want_target:?}, got {got_target:?}"
        ));
    }
}

fn ls_long(variant: &str) {
    let fx = full(variant);
    let out = uf2fs().run([arg(b"ls"), arg(b"-l"), arg(b"-R"), path_arg(fx.img())]);
    let mut problems = Vec::new();
    let mut seen = 0usize;
    for (header, lines) in sections(out.assert_ok()) {
        let dir = header_to_rel(&header);
        for line in lines {
            // The name is whatever follows the 7th column; find the entry whose name it is.
            let Some(l) = parse_long_line(&line, |_| true) else {
                problems.push(format!("unparsable ls -l line {:?}", String::from_utf8_lossy(&line)));
                continue;
            };
            let mut candidates = vec![l.name.clone()];
            if let Some(t) = &l.target {
                // A name containing " -> " splits wrongly; retry with the whole rest.
                let mut whole = l.name.clone();
                whole.extend_from_slice(b" -> ");
                whole.extend_from_slice(t);
                candidates.push(whole);
            }
            let path = candidates
                .into_iter()
                .map(|n| {
                    if dir.is_empty() {
                        n
                    } else {
                        [&dir[..], b"/", &n[..]].concat()
                    }
                })
                .find(|p| fx.expected.contains_key(p));
            match path {
                Some(p) => {
                    seen += 1;
                    check_long_line(fx, &p, &line, &mut problems);
                }
                None => problems.push(format!(
                    "ls -l line for an unexpected name: {:?}",
                    String::from_utf8_lossy(&line)
                )),
            }
        }
    }
    let want = fx.expected.len() - 1; // every entry but the root
    if seen != want {
        problems.push(format!("ls -lR showed {seen} entries, expected {want}"));
    }
    assert_no_problems(&format!("ls -lR on {variant}"), &problems);
}

fn ls_edges(variant: &str) {
    let fx = full(variant);
    let img = path_arg(fx.img());
    let bin = uf2fs();
    // Plain ls of the root: the top-level names, one per line.
    let out = bin.run([arg(b"ls"), img.clone()]);
    let mut names: Vec<&[u8]> = out
        .assert_ok()
        .strip_suffix(b"\n")
        .unwrap_or_default()
        .split(|&c| c == b'\n')
        .collect();
    names.sort();
    let want = &children(&fx.expected)[&Vec::new()];
    assert_eq!(
        names,
        want.iter().map(Vec::as_slice).collect::<Vec<_>>(),
        "ls of / on {variant}"
    );
    // -a on an empty directory: just "." and "..".
    let out = bin.run([arg(b"ls"), arg(b"-a"), img.clone(), arg(b"/empty_dir")]);
    assert_eq!(out.assert_ok(), b".\n..\n", "ls -a /empty_dir on {variant}");
    // Raw, non-UTF-8 names reach stdout unchanged.
    let out = bin.run([arg(b"ls"), img.clone(), arg(b"/names")]);
    assert!(
        out.assert_ok()
            .split(|&c| c == b'\n')
            .any(|l| l == b"not-utf8-\xff\xfe-\x80\xc3("),
        "ls /names on {variant} lacks the raw non-UTF-8 name: {:?}",
        out.out()
    );
    // A symlink named on the command line is listed as itself with -l.
    let out = bin.run([arg(b"ls"), arg(b"-l"), img.clone(), arg(b"/links/rel")]);
    let line = out.assert_ok().strip_suffix(b"\n").unwrap_or_default().to_vec();
    let l = parse_long_line(&line, |_| true).expect("parsable ls -l line");
    assert_eq!(
        (l.mode.as_str(), l.target.as_deref()),
        ("lrwxrwxrwx", Some(&b"../one_byte"[..])),
        "ls -l /links/rel on {variant}"
    );
    // ls -l of a subdirectory matches the same expectations.
    let out = bin.run([arg(b"ls"), arg(b"-l"), img.clone(), arg(b"/modes")]);
    let mut problems = Vec::new();
    for line in out
        .assert_ok()
        .strip_suffix(b"\n")
        .unwrap_or_default()
        .split(|&c| c == b'\n')
    {
        let l = parse_long_line(line, |_| false).expect("parsable ls -l line");
        check_long_line(fx, &[&b"modes/"[..], &l.name].concat(), line, &mut problems);
    }
    assert_no_problems(&format!("ls -l /modes on {variant}"), &problems);
    // Missing paths fail with one line.
    bin.run([arg(b"ls"), img.clone(), arg(b"/no/such/dir")])
        .assert_clean_failure();
}

fn cat_every_file(variant: &str) {
    let fx = full(variant);
    let img = path_arg(fx.img());
    let bin = uf2fs();
    let mut problems = Vec::new();
    for (path, want) in &fx.expected {
        let ExpectedKind::File(data) = &want.kind else { continue };
        let out = bin.run([arg(b"cat"), img.clone(), image_arg(path)]);
        if !out.success() {
            problems.push(out.describe());
        } else if let Err(e) = data.check_bytes(&out.stdout) {
            problems.push(format!("/{}: {e}", String::from_utf8_lossy(path)));
        }
    }
    assert_no_problems(&format!("cat on {variant}"), &problems);
}

fn cat_edges(variant: &str) {
    let fx = full(variant);
    let img = path_arg(fx.img());
    let bin = uf2fs();
    let file = |p: &[u8]| match &fx.expected[p].kind {
        ExpectedKind::File(d) => d.bytes(),
        _ => panic!("not a file"),
    };
    for (link, target) in [
        (&b"/links/rel"[..], &b"one_byte"[..]),
        (b"/links/chain1", b"inline/s00100"),
        (b"/links/abs_image", b"one_byte"),
        (b"/links/rel_dir/level00_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx/level01_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx/../../../one_byte", b"one_byte"),
        (b"/hard/sub/b", b"hard/a"),
    ] {
        let out = bin.run([arg(b"cat"), img.clone(), arg(link)]);
        assert_eq!(out.assert_ok(), &file(target)[..], "cat {} on {variant}", String::from_utf8_lossy(link));
    }
    // Absolute targets resolve inside the image, never on the host.
    for bad in [
        &b"/links/abs_host"[..],
        b"/links/dangling",
        b"/links/loop",
        b"/deep",
        b"/no/such/file",
        b"/one_byte/below_a_file",
    ] {
        let out = bin.run([arg(b"cat"), img.clone(), arg(bad)]);
        out.assert_clean_failure();
        assert!(
            out.stdout.is_empty(),
            "cat {} wrote to stdout",
            String::from_utf8_lossy(bad)
        );
    }
}

/// Whether extract can be held to keeping sload's security.selinux labels here.
fn xattr_check(fx: &Fixture, dest_parent: &std::path::Path) -> bool {
    if !fx.variant().sload.selinux_labels {
        return false;
    }
    let keeps = host_keeps_security_xattrs(dest_parent);
    if !keeps {
        eprintln!("note: this file system does not keep security.* xattrs; extract's xattrs are not compared");
    }
    keeps
}

fn extract_all(variant: &str) {
    let fx = full(variant);
    let tmp = scratch("extract-");
    let dest = tmp.path().join("out");
    let bin = uf2fs();
    bin.run([arg(b"extract"), path_arg(fx.img()), path_arg(&dest)])
        .assert_ok();
    let opts = CompareOptions {
        owners: is_root(),
        root: false,
        atime: true,
        ctime: false,
        xattrs: xattr_check(fx, tmp.path()),
        contents: true,
    };
    assert_no_problems(
        &format!("extract on {variant}"),
        &compare_tree(&dest, &fx.expected, opts),
    );
    // Again into the same place: refused without --force, identical with it.
    let again = bin.run([arg(b"extract"), path_arg(fx.img()), path_arg(&dest)]);
    again.assert_clean_failure();
    bin.run([arg(b"extract"), arg(b"--force"), path_arg(fx.img()), path_arg(&dest)])
        .assert_ok();
    let opts = CompareOptions {
        contents: false,
        ..opts
    };
    assert_no_problems(
        &format!("extract --force over itself on {variant}"),
        &compare_tree(&dest, &fx.expected, opts),
    );
}

/// The part of `expected` under `prefix`, re-rooted; file link counts become the number
/// of names inside the subtree (only those are extracted).
fn subtree(expected: &BTreeMap<Vec<u8>, Expected>, prefix: &[u8]) -> BTreeMap<Vec<u8>, Expected> {
    let mut out = BTreeMap::new();
    for (p, x) in expected {
        let rel = if p == prefix {
            Vec::new()
        } else if p.starts_with(prefix) && p.get(prefix.len()) == Some(&b'/') {
            p[prefix.len() + 1..].to_vec()
        } else {
            continue;
        };
        out.insert(rel, x.clone());
    }
    let mut counts: BTreeMap<usize, u32> = BTreeMap::new();
    for x in out.values() {
        if let Some(g) = x.link_group {
            *counts.entry(g).or_default() += 1;
        }
    }
    for x in out.values_mut() {
        if let Some(g) = x.link_group {
            x.nlink = counts[&g];
        }
    }
    out
}

fn extract_subtree(variant: &str) {
    let fx = full(variant);
    let tmp = scratch("extract-sub-");
    let bin = uf2fs();
    for prefix in [
        &b"hard"[..],
        b"names",
        b"deep/level00_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    ] {
        let dest = tmp.path().join(String::from_utf8_lossy(&prefix[..4]).as_ref());
        bin.run([arg(b"extract"), path_arg(fx.img()), image_arg(prefix), path_arg(&dest)])
            .assert_ok();
        let opts = CompareOptions {
            owners: is_root(),
            root: false,
            atime: true,
            ctime: false,
            xattrs: xattr_check(fx, tmp.path()),
            contents: true,
        };
        let want = subtree(&fx.expected, prefix);
        assert_no_problems(
            &format!("extract /{} on {variant}", String::from_utf8_lossy(prefix)),
            &compare_tree(&dest, &want, opts),
        );
    }
}

/// `dump.f2fs -i INO` fields of an inode: (i_inline, [i_nid[0..5]]).
fn dump_inode(img: &std::path::Path, ino: u64, work: &std::path::Path) -> (u64, [u64; 5]) {
    let out = std::process::Command::new(uf2fs_testkit::image::tool("dump.f2fs"))
        .arg("-i")
        .arg(format!("{ino:#x}"))
        .arg(img)
        .current_dir(work)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("dump.f2fs");
    let text = String::from_utf8_lossy(&out.stdout);
    // Lines look like: `i_nid[0]                      \t\t[0x       0 : 0]`.
    let value = |name: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing"));
        line.rsplit(':')
            .next()
            .and_then(|v| v.trim().trim_end_matches(']').trim().parse().ok())
            .expect("number")
    };
    let nids = [0, 1, 2, 3, 4].map(|i| value(&format!("i_nid[{i}]")));
    (value("i_inline"), nids)
}

/// The test's premise, checked with f2fs-tools itself: each file in /blocks uses exactly
/// the node kinds its size was chosen for (inode only, first or second direct node,
/// first indirect node), and /inline has files stored inline and files that are not.
fn boundary_layout(variant: &str) {
    let fx = full(variant);
    let tmp = scratch("layout-");
    let listing = std::process::Command::new(uf2fs_testkit::image::tool("fsck.f2fs"))
        .arg("-t")
        .arg(fx.img())
        .current_dir(tmp.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("fsck.f2fs -t");
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    let ino_of = |name: &str| -> u64 {
        let needle = format!("-- {name} <ino = 0x");
        let line = listing
            .lines()
            .find(|l| l.contains(&needle))
            .unwrap_or_else(|| panic!("{name} not in fsck.f2fs -t"));
        let hex: String = line[line.find(&needle).unwrap() + needle.len()..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect();
        u64::from_str_radix(&hex, 16).unwrap()
    };
    let a = fx.variant().addrs_in_inode;
    let d = uf2fs_testkit::tree::ADDRS_PER_BLOCK;
    let mut problems = Vec::new();
    let mut kinds = std::collections::BTreeSet::new();
    for (path, want) in &fx.expected {
        let (Some(name), ExpectedKind::File(data)) = (path.strip_prefix(b"blocks/"), &want.kind) else {
            continue;
        };
        let name = String::from_utf8_lossy(name).into_owned();
        let blocks = data.len.div_ceil(4096);
        let (_, nids) = dump_inode(fx.img(), ino_of(&name), tmp.path());
        let used = nids.iter().take_while(|&&n| n != 0).count();
        let want_used = if blocks <= a {
            0
        } else if blocks <= a + d {
            1
        } else if blocks <= a + 2 * d {
            2
        } else {
            3
        };
        kinds.insert(want_used);
        if used != want_used {
            problems.push(format!(
                "/blocks/{name} ({blocks} blocks): {used} node ids in the inode, expected {want_used}"
            ));
        }
    }
    let want_kinds = if fx.variant().max_file_blocks.is_some() {
        vec![0]
    } else {
        vec![0, 1, 2, 3]
    };
    if kinds.into_iter().collect::<Vec<_>>() != want_kinds {
        problems.push(format!("/blocks does not cover node kinds {want_kinds:?}"));
    }
    let inline: Vec<bool> = ["s03300", "s03344", "s03345", "s04097"]
        .iter()
        .map(|n| dump_inode(fx.img(), ino_of(n), tmp.path()).0 & 0x2 != 0)
        .collect();
    if !inline.contains(&true) || !inline.contains(&false) {
        problems.push(format!(
            "/inline should hold inline and non-inline files: inline flags {inline:?}"
        ));
    }
    assert_no_problems(&format!("layout of the boundary files on {variant}"), &problems);
}
