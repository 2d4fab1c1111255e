//! The roll-forward recovery target: damage an image Linux left after fsyncs and a power
//! cut (a checkpoint without the unmount flag and a chain of ~620 fsync-marked nodes in
//! the warm node log after it), then open it read-only (recovery replayed on an in-memory
//! overlay) and read-write (recovery replayed on the device, then an unmount and a
//! read-only reopen), walking the tree after each open as the `image` target does.
//! Errors are the expected outcome; a panic, a hang or a huge allocation is a bug.
//!
//! The base images (`fuzz/base/powercut*.sparse.gz`) are
//! `crates/cli/tests/fixtures/kernel/powercut{,-extra-attr}.img.gz` in the form
//! `seed_cut.py --sparse` writes (non-zero blocks only). The input:
//!
//! ```text
//! byte 0          bit 0: base image (0 powercut, 1 powercut-extra-attr: extra_attr +
//!                 inode_checksum); bit 1: after patching, recompute checksums of
//!                 patched checkpoint, superblock and inode blocks (as `image`);
//!                 bit 2: the whole chain (else it ends after [`SHORT_CHAIN`] blocks:
//!                 the next block's footer version is changed before any op)
//! then ops        tag byte, operands (little-endian; missing bytes read as 0), tag % 11:
//!   0..=5         the `image` target's ops (hot blocks: below the main area, the
//!                 chain's node blocks and the blocks they point at)
//!   6 footer      chain:u16 field:u8 value:u32   field % 10: nid = v % 1024, ino =
//!                 v % 1024, flag = v, flag ^= 1 << (v % 32), cp_ver low half = v,
//!                 cp_ver high half = v, next_blkaddr = v, next_blkaddr =
//!                 chain[v], nid = v, ino = v
//!   7 address     chain:u16 slot:u16 mode:u8 value:u32   a data address of the node
//!                 (inode: i_addr[slot % 923], else slot % 1018) := mode % 7: NULL,
//!                 NEW_ADDR, COMPRESS_ADDR, chain[v], data[v], main start + v % main
//!                 blocks, v
//!   8 inode field chain:u16 field:u8 value:u32   (see `inode_field`)
//!   9 copy node   from:u16 to:u16 keep:u8   chain[to] := chain[from]; keep bit 0: keep
//!                 chain[to]'s next_blkaddr and cp_ver, so the chain goes on
//!  10 cut         chain:u16   chain[chain] := zeros (the chain ends there)
//! ```
//!
//! `chain` indexes (modulo its length) the chain of node blocks (short or whole), `data` the
//! non-zero main-area blocks those nodes point at. At most [`MAX_OPS`] ops are applied.

use crate::image::{apply_op, fix_checksums, walk, Base, Input, Patched, MAX_OPS};
use std::collections::HashSet;
use std::sync::{Arc, OnceLock};
use uf2fs_core::device::OverlayDevice;
use uf2fs_core::{Fs, OpenOptions};
use uf2fs_format::consts::{ADDRS_PER_BLOCK, DEF_ADDRS_PER_INODE, I_ADDR_OFFSET, I_NID_OFFSET, NODE_FOOTER_OFFSET};
use uf2fs_format::le::{put_u32, u32_at};

/// A base image and its roll-forward chain.
pub struct RecoveryBase {
    base: Base,
    /// The chain's node blocks, in chain order.
    chain: Vec<u64>,
    /// Non-zero main-area blocks the chain's nodes point at.
    data: Vec<u64>,
    main: (u64, u64),
}

/// Chain blocks kept unless the input asks for the whole chain: the files the fixture
/// fsync'd (new, appended, overwritten, shrunk, with holes, large, inline, with xattrs,
/// fsync'd twice) and the first of its ~600 small new files. Replaying the whole chain
/// costs ~20 times as much (each new name is looked up in one big directory).
const SHORT_CHAIN: usize = 32;

const FOOTER_NID: usize = NODE_FOOTER_OFFSET;
const FOOTER_INO: usize = NODE_FOOTER_OFFSET + 4;
const FOOTER_FLAG: usize = NODE_FOOTER_OFFSET + 8;
const FOOTER_CP_VER: usize = NODE_FOOTER_OFFSET + 12;
const FOOTER_NEXT: usize = NODE_FOOTER_OFFSET + 20;

impl RecoveryBase {
    fn load(gz: &[u8]) -> RecoveryBase {
        let mut base = Base::inflate(gz);
        let sb = &base.sb;
        let bps = 1u64 << u32_at(sb, 20);
        let cp_start = u32_at(sb, 76) as u64;
        let main_start = u32_at(sb, 92) as u64;
        let main_end = main_start + u32_at(sb, 68) as u64 * bps;
        // The newer checkpoint pack (the base images are consistent).
        let head = [cp_start, cp_start + bps]
            .into_iter()
            .map(|a| base.block(a))
            .max_by_key(|b| u64::from_le_bytes(b[..8].try_into().unwrap()))
            .unwrap();
        let ver = u32_at(head, 0);
        let mut addr = main_start + u32_at(head, 36 + 4) as u64 * bps + u16::from_le_bytes([head[70], head[71]]) as u64;
        let mut chain = Vec::new();
        let mut seen = HashSet::new();
        while (main_start..main_end).contains(&addr) && seen.insert(addr) {
            let b = base.block(addr);
            if u32_at(b, FOOTER_CP_VER) != ver {
                break;
            }
            chain.push(addr);
            addr = u32_at(b, FOOTER_NEXT) as u64;
        }
        assert!(
            chain.len() > 100,
            "base image's roll-forward chain: {} blocks",
            chain.len()
        );
        let mut data = HashSet::new();
        for &a in &chain {
            let b = base.block(a);
            let slots = if u32_at(b, FOOTER_NID) == u32_at(b, FOOTER_INO) {
                I_ADDR_OFFSET..I_NID_OFFSET
            } else {
                0..ADDRS_PER_BLOCK * 4
            };
            for off in slots.step_by(4) {
                let d = u32_at(b, off) as u64;
                if (main_start..main_end).contains(&d) && base.map.contains_key(&d) && !seen.contains(&d) {
                    data.insert(d);
                }
            }
        }
        let mut data: Vec<u64> = data.into_iter().collect();
        data.sort_unstable();
        let mut hot: Vec<u64> = base.map.keys().copied().filter(|&a| a < main_start).collect();
        hot.extend(&chain);
        hot.extend(&data);
        hot.sort_unstable();
        base.hot = hot;
        RecoveryBase {
            base,
            chain,
            data,
            main: (main_start, main_end),
        }
    }
}

/// The two base images, inflated on first use.
pub fn bases() -> &'static [RecoveryBase; 2] {
    static BASES: OnceLock<[RecoveryBase; 2]> = OnceLock::new();
    BASES.get_or_init(|| {
        [
            RecoveryBase::load(include_bytes!("../base/powercut.sparse.gz")),
            RecoveryBase::load(include_bytes!("../base/powercut-extra-attr.sparse.gz")),
        ]
    })
}

/// Writes `v` at `off` of block `addr`.
fn put(img: &mut Patched, addr: u64, off: usize, v: u32) {
    put_u32(img.block_mut(addr), off, v);
}

/// Op 8: field % 18 of the inode at chain block `addr` := from `v`.
fn inode_field(img: &mut Patched, addr: u64, field: u8, v: u32) {
    let b = img.block_mut(addr);
    match field % 18 {
        0 => b[16..24].copy_from_slice(&(v as u64).to_le_bytes()), // i_size
        1 => b[16..24].copy_from_slice(&((v as u64) << 24).to_le_bytes()),
        2 => b[16..24].copy_from_slice(&u64::MAX.wrapping_sub(v as u64).to_le_bytes()),
        3 => put_u32(b, 84, v % 1024), // i_pino
        4 => put_u32(b, 84, v),
        5 => put_u32(b, 88, v % 300), // i_namelen
        6 => put_u32(b, 88, v),
        7 => b[92 + (v >> 8) as usize % 255] = v as u8, // i_name
        8 => b[3] = v as u8,                            // i_inline
        9 => put_u32(b, 76, v % 1024),                  // i_xattr_nid
        10 => put_u32(b, 76, v),
        11 => put_u32(b, I_NID_OFFSET + 4 * (v as usize % 5), (v >> 8) % 1024), // i_nid[]
        12 => b[0..2].copy_from_slice(&(v as u16).to_le_bytes()),               // i_mode
        13 => put_u32(b, 12, v),                                                // i_links
        14 => put_u32(b, 80, v),                                                // i_flags
        15 => b[24..32].copy_from_slice(&(v as u64).to_le_bytes()),             // i_blocks
        16 => b[I_ADDR_OFFSET..I_ADDR_OFFSET + 2].copy_from_slice(&(v as u16).to_le_bytes()), // i_extra_isize
        _ => b[I_ADDR_OFFSET + 2..I_ADDR_OFFSET + 4].copy_from_slice(&(v as u16).to_le_bytes()), // i_inline_xattr_size
    }
}

/// Applies a recovery op (6..=10, see the module notes).
fn apply_recovery_op(img: &mut Patched, rb: &RecoveryBase, chain: &[u64], inp: &mut Input, op: u8) {
    let pick = |list: &[u64], i: u32| list[i as usize % list.len()];
    match op {
        6 => {
            let (addr, field, v) = (pick(chain, inp.u16() as u32), inp.u8(), inp.u32());
            match field % 10 {
                0 => put(img, addr, FOOTER_NID, v % 1024),
                1 => put(img, addr, FOOTER_INO, v % 1024),
                2 => put(img, addr, FOOTER_FLAG, v),
                3 => {
                    let f = u32_at(img.block(addr), FOOTER_FLAG) ^ (1 << (v % 32));
                    put(img, addr, FOOTER_FLAG, f);
                }
                4 => put(img, addr, FOOTER_CP_VER, v),
                5 => put(img, addr, FOOTER_CP_VER + 4, v),
                6 => put(img, addr, FOOTER_NEXT, v),
                7 => put(img, addr, FOOTER_NEXT, pick(chain, v) as u32),
                8 => put(img, addr, FOOTER_NID, v),
                _ => put(img, addr, FOOTER_INO, v),
            }
        }
        7 => {
            let (addr, slot, mode, v) = (pick(chain, inp.u16() as u32), inp.u16() as usize, inp.u8(), inp.u32());
            let b = img.block(addr);
            let off = if u32_at(b, FOOTER_NID) == u32_at(b, FOOTER_INO) {
                I_ADDR_OFFSET + 4 * (slot % DEF_ADDRS_PER_INODE)
            } else {
                4 * (slot % ADDRS_PER_BLOCK)
            };
            let value = match mode % 7 {
                0 => 0,
                1 => u32::MAX,
                2 => u32::MAX - 1,
                3 => pick(chain, v) as u32,
                4 if !rb.data.is_empty() => pick(&rb.data, v) as u32,
                4 | 5 => (rb.main.0 + v as u64 % (rb.main.1 - rb.main.0)) as u32,
                _ => v,
            };
            put(img, addr, off, value);
        }
        8 => {
            let (addr, field, v) = (pick(chain, inp.u16() as u32), inp.u8(), inp.u32());
            inode_field(img, addr, field, v);
        }
        9 => {
            let (from, to, keep) = (pick(chain, inp.u16() as u32), pick(chain, inp.u16() as u32), inp.u8());
            let src = img.block(from).to_vec();
            let dst = img.block_mut(to);
            let tail = dst[FOOTER_CP_VER..].to_vec();
            dst.copy_from_slice(&src);
            if keep & 1 != 0 {
                dst[FOOTER_CP_VER..].copy_from_slice(&tail);
            }
        }
        _ => {
            let addr = pick(chain, inp.u16() as u32);
            img.block_mut(addr).fill(0);
        }
    }
}

/// Builds the damaged image an input describes.
pub fn damaged_image(data: &[u8]) -> Patched {
    let flags = data.first().copied().unwrap_or(0);
    let rb = &bases()[(flags & 1) as usize];
    let mut img = Patched::new(&rb.base);
    let chain = if flags & 4 != 0 || rb.chain.len() <= SHORT_CHAIN {
        &rb.chain[..]
    } else {
        // The chain ends after SHORT_CHAIN blocks: the next one gets another version.
        let end = rb.chain[SHORT_CHAIN];
        let v = u32_at(img.block(end), FOOTER_CP_VER) ^ 1;
        put(&mut img, end, FOOTER_CP_VER, v);
        &rb.chain[..SHORT_CHAIN]
    };
    let mut inp = Input { data, pos: 1 };
    for _ in 0..MAX_OPS {
        if inp.done() {
            break;
        }
        match inp.u8() % 11 {
            op @ 0..=5 => apply_op(&mut img, &mut inp, op),
            op => apply_recovery_op(&mut img, rb, chain, &mut inp, op),
        }
    }
    if flags & 2 != 0 {
        fix_checksums(&mut img);
    }
    img
}

fn verbose() -> bool {
    static V: OnceLock<bool> = OnceLock::new();
    *V.get_or_init(|| std::env::var_os("UF2FS_FUZZ_VERBOSE").is_some())
}

fn note(what: &str, r: &uf2fs_core::Result<Fs>) {
    if let Err(e) = r {
        let msg = e.to_string();
        assert!(!msg.is_empty());
        if verbose() {
            eprintln!("{what}: {msg}");
        }
    }
}

/// The fuzz target: damage a base image as `data` says, open it read-only and walk it,
/// open it read-write (on an in-memory overlay), walk it, unmount it, reopen it
/// read-only and walk it again. Every open that succeeds must show the same tree: the
/// read-only open replays what the read-write one does (or, with no fsync'd node in
/// the chain, neither replays anything), and what recovery and the unmount wrote reads
/// back as the read-write open showed it.
pub fn run(data: &[u8]) {
    let img = damaged_image(data);
    let ro = Fs::open_device(Box::new(img.clone()), "fuzz.img");
    note("read-only open", &ro);
    let ro_walk = ro.as_ref().ok().map(|fs| {
        let w = walk(fs);
        if verbose() {
            eprintln!("read-only (replayed: {}): {w:?}", fs.replayed_in_memory());
        }
        w
    });
    drop(ro);
    let overlay = OverlayDevice::new(Arc::new(img));
    let rw = Fs::open_device_with(Box::new(overlay.clone()), "fuzz.img", OpenOptions { read_write: true });
    note("read-write open", &rw);
    let Ok(fs) = rw else { return };
    let w = walk(&fs);
    if verbose() {
        eprintln!("read-write: {w:?}");
    }
    if let Some(ro_walk) = &ro_walk {
        assert_eq!(
            ro_walk, &w,
            "the read-only and the read-write open show different trees"
        );
    }
    if let Err(e) = fs.unmount() {
        assert!(!e.to_string().is_empty());
        if verbose() {
            eprintln!("unmount: {e}");
        }
        return;
    }
    let again = Fs::open_device(Box::new(overlay), "fuzz.img");
    note("reopen", &again);
    let again = again.expect("the image recovery and unmount wrote opens");
    let w2 = walk(&again);
    if verbose() {
        eprintln!("reopened: {w2:?}");
    }
    assert_eq!(
        w, w2,
        "the reopened image shows a tree other than the read-write open's"
    );
}
