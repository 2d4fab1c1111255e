//! Property tests for the xattr and POSIX ACL encoders: what they write parses back to
//! what they were given, in the byte layout the kernel uses; ACL checks accept exactly
//! the well-formed ACLs; no input makes a parser panic.

use proptest::collection::vec;
use proptest::prelude::*;
use uf2fs_format::xattr::*;

fn entry() -> impl Strategy<Value = RawXattr> {
    (
        1u8..=255,
        vec(any::<u8>(), 0..=XATTR_NAME_MAX),
        vec(any::<u8>(), 0..=600),
    )
        .prop_map(|(index, name, value)| RawXattr { index, name, value })
}

/// A valid ACL: owner, named users, owning group, named groups, a mask (required with
/// named entries, optional without), other.
fn acl() -> impl Strategy<Value = Vec<AclEntry>> {
    let perm = || 0u16..8;
    (
        perm(),
        vec((perm(), 0u32..u32::MAX), 0..5),
        perm(),
        vec((perm(), 0u32..u32::MAX), 0..5),
        proptest::option::of(perm()),
        perm(),
    )
        .prop_map(|(owner, users, group, groups, mask, other)| {
            let e = |tag, perm, id| AclEntry { tag, perm, id };
            let mut out = vec![e(ACL_USER_OBJ, owner, ACL_UNDEFINED_ID)];
            out.extend(users.iter().map(|&(p, id)| e(ACL_USER, p, id)));
            out.push(e(ACL_GROUP_OBJ, group, ACL_UNDEFINED_ID));
            out.extend(groups.iter().map(|&(p, id)| e(ACL_GROUP, p, id)));
            let named = !users.is_empty() || !groups.is_empty();
            if let Some(m) = mask.or(named.then_some(7)) {
                out.push(e(ACL_MASK, m, ACL_UNDEFINED_ID));
            }
            out.push(e(ACL_OTHER, other, ACL_UNDEFINED_ID));
            out
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A header without the magic is one never written (Linux's `read_all_xattrs`
    /// and fsck.f2fs give it a fresh header and read the entries after it): whatever
    /// its first 24 bytes hold, the entries read as with the magic.
    #[test]
    fn a_header_never_written_is_not_damage(entries in vec(entry(), 0..4), header in vec(any::<u8>(), XATTR_HEADER_SIZE)) {
        let mut bytes = encode_xattrs(&entries).unwrap();
        bytes[..XATTR_HEADER_SIZE].copy_from_slice(&header);
        bytes.resize(bytes.len() + 4, 0);
        prop_assert_eq!(&parse_xattrs(&bytes).unwrap(), &entries);
    }

    #[test]
    fn xattrs_encode_then_parse(entries in vec(entry(), 0..12), pad in 0usize..64) {
        let bytes = encode_xattrs(&entries).unwrap();
        prop_assert_eq!(bytes.len(), xattrs_len(&entries));
        prop_assert_eq!(bytes.len() % 4, 0);
        prop_assert_eq!(u32::from_le_bytes(bytes[0..4].try_into().unwrap()), F2FS_XATTR_MAGIC);
        prop_assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), 1);
        // Filled to the last byte (no end marker), or followed by zeros.
        prop_assert_eq!(&parse_xattrs(&bytes).unwrap(), &entries);
        let mut padded = bytes.clone();
        padded.resize(bytes.len() + pad, 0);
        prop_assert_eq!(&parse_xattrs(&padded).unwrap(), &entries);
    }

    #[test]
    fn entries_are_aligned_and_laid_out_in_order(entries in vec(entry(), 1..8)) {
        let bytes = encode_xattrs(&entries).unwrap();
        let mut at = XATTR_HEADER_SIZE;
        for x in &entries {
            prop_assert_eq!(bytes[at], x.index);
            prop_assert_eq!(bytes[at + 1] as usize, x.name.len());
            prop_assert_eq!(u16::from_le_bytes([bytes[at + 2], bytes[at + 3]]) as usize, x.value.len());
            let name_at = at + XATTR_ENTRY_HEADER_SIZE;
            prop_assert_eq!(&bytes[name_at..name_at + x.name.len()], &x.name[..]);
            let end = name_at + x.name.len() + x.value.len();
            prop_assert_eq!(&bytes[name_at + x.name.len()..end], &x.value[..]);
            let next = at + xattr_entry_size(x.name.len(), x.value.len());
            prop_assert!(bytes[end..next].iter().all(|&b| b == 0), "padding is zero");
            prop_assert_eq!(next % 4, 0);
            at = next;
        }
        prop_assert_eq!(at, bytes.len());
    }

    #[test]
    fn acl_xattr_to_f2fs_and_back(entries in acl()) {
        let linux = encode_acl_xattr(&entries);
        prop_assert_eq!(&parse_acl_xattr(&linux).unwrap(), &entries);
        let compact = xattr_to_acl(&linux).unwrap();
        prop_assert_eq!(&compact, &encode_acl(&entries));
        prop_assert_eq!(&parse_acl(&compact).unwrap(), &entries);
        prop_assert_eq!(acl_to_xattr(&compact).unwrap(), linux);
        // 4 bytes of version, 8 per named entry, 4 per other entry.
        let named = entries.iter().filter(|e| e.tag == ACL_USER || e.tag == ACL_GROUP).count();
        prop_assert_eq!(compact.len(), 4 + 8 * named + 4 * (entries.len() - named));
    }

    #[test]
    fn ids_of_unnamed_entries_are_ignored(entries in acl(), junk in any::<u32>()) {
        let mut linux = encode_acl_xattr(&entries);
        for (i, e) in entries.iter().enumerate() {
            if e.tag != ACL_USER && e.tag != ACL_GROUP {
                linux[4 + 8 * i + 4..4 + 8 * i + 8].copy_from_slice(&junk.to_le_bytes());
            }
        }
        prop_assert_eq!(acl_to_xattr(&xattr_to_acl(&linux).unwrap()).unwrap(), encode_acl_xattr(&entries));
    }

    #[test]
    fn broken_acls_are_refused(entries in acl(), pick in any::<prop::sample::Index>(), how in 0..4u8) {
        let mut bad = entries.clone();
        let i = pick.index(bad.len());
        match how {
            0 => { bad.remove(i); }
            1 => { let e = bad[i]; bad.insert(i, e); }
            2 => bad[i].perm |= 8,
            _ => {
                let last = bad.len() - 1;
                bad.swap(0, last)
            }
        }
        // Removing a named entry or its duplicate can leave a valid ACL; all else fails.
        let still_valid = match how {
            0 | 1 => matches!(entries[i].tag, ACL_USER | ACL_GROUP)
                || (how == 0 && entries[i].tag == ACL_MASK
                    && !entries.iter().any(|e| e.tag == ACL_USER || e.tag == ACL_GROUP)),
            _ => false,
        };
        prop_assert_eq!(validate_acl(&bad).is_ok(), still_valid, "{:?}", bad);
        prop_assert_eq!(xattr_to_acl(&encode_acl_xattr(&bad)).is_ok(), still_valid);
    }

    #[test]
    fn chmod_then_mode_gives_the_mode(entries in acl(), mode in 0u32..0o1000) {
        let changed = acl_chmod(&entries, mode);
        prop_assert!(validate_acl(&changed).is_ok());
        prop_assert_eq!(acl_mode(&changed).0, mode);
        let plain = !entries.iter().any(|e| matches!(e.tag, ACL_USER | ACL_GROUP | ACL_MASK));
        prop_assert_eq!(acl_mode(&entries).1, plain);
    }

    #[test]
    fn create_masq_gives_the_mode_and_a_valid_acl(entries in acl(), mode in 0u32..0o1000) {
        let (made, bits, equivalent) = acl_create_masq(&entries, mode);
        prop_assert!(validate_acl(&made).is_ok());
        // The new mode is what the new ACL grants, never more than was asked.
        prop_assert_eq!(acl_mode(&made).0, bits);
        prop_assert_eq!(bits & !mode, 0);
        prop_assert_eq!(equivalent, acl_mode(&entries).1);
        // Named entries are kept as they are.
        for (a, b) in entries.iter().zip(&made) {
            if matches!(a.tag, ACL_USER | ACL_GROUP) {
                prop_assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn parsers_never_panic(bytes in vec(any::<u8>(), 0..400)) {
        let _ = parse_xattrs(&bytes);
        let _ = parse_acl_xattr(&bytes);
        let _ = parse_acl(&bytes);
        let _ = xattr_to_acl(&bytes);
        let _ = acl_to_xattr(&bytes);
    }
}

#[test]
fn create_masq_as_linux() {
    let e = |tag, perm, id| AclEntry { tag, perm, id };
    let u = ACL_UNDEFINED_ID;
    // A default ACL u::r-x,g::r--,o::--- and open(0666): r--r----- (the case).
    let plain = [e(ACL_USER_OBJ, 5, u), e(ACL_GROUP_OBJ, 4, u), e(ACL_OTHER, 0, u)];
    let (made, bits, equivalent) = acl_create_masq(&plain, 0o666);
    assert_eq!((bits, equivalent), (0o440, true));
    assert_eq!(
        made,
        [e(ACL_USER_OBJ, 4, u), e(ACL_GROUP_OBJ, 4, u), e(ACL_OTHER, 0, u)]
    );
    // With a named user and a mask, the mask (not the owning group) limits the group
    // class: u::rwx,u:101:rwx,g::r-x,m::rwx,o::r-x and mkdir(0750) gives rwxr-x---
    // with m::r-x and the owning group untouched.
    let named = [
        e(ACL_USER_OBJ, 7, u),
        e(ACL_USER, 7, 101),
        e(ACL_GROUP_OBJ, 5, u),
        e(ACL_MASK, 7, u),
        e(ACL_OTHER, 5, u),
    ];
    let (made, bits, equivalent) = acl_create_masq(&named, 0o750);
    assert_eq!((bits, equivalent), (0o750, false));
    assert_eq!(
        made,
        [
            e(ACL_USER_OBJ, 7, u),
            e(ACL_USER, 7, 101),
            e(ACL_GROUP_OBJ, 5, u),
            e(ACL_MASK, 5, u),
            e(ACL_OTHER, 0, u)
        ]
    );
}

#[test]
fn one_entry_in_the_kernels_layout() {
    let x = RawXattr {
        index: INDEX_USER,
        name: b"foo".to_vec(),
        value: b"hello".to_vec(),
    };
    let mut want = vec![0x11, 0x20, 0xF5, 0xF2, 1, 0, 0, 0];
    want.extend([0u8; 16]);
    want.extend([1, 3, 5, 0]);
    want.extend(b"foohello");
    assert_eq!(encode_xattrs(std::slice::from_ref(&x)).unwrap(), want);
    let mut two = want.clone();
    let y = RawXattr {
        index: INDEX_TRUSTED,
        name: b"ab".to_vec(),
        value: Vec::new(),
    };
    two.extend([4, 2, 0, 0, b'a', b'b', 0, 0]);
    assert_eq!(encode_xattrs(&[x, y]).unwrap(), two);
    assert_eq!(XATTR_NODE_OFFSET << 3, 0xFFFF_FFF8);
}

#[test]
fn an_acl_in_both_formats() {
    // user::rw-, user:1000:r--, group::r--, mask::r--, other::---
    let linux: Vec<u8> = [
        vec![2, 0, 0, 0],
        vec![1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff],
        vec![2, 0, 4, 0, 0xe8, 0x03, 0, 0],
        vec![4, 0, 4, 0, 0xff, 0xff, 0xff, 0xff],
        vec![0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff],
        vec![0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
    ]
    .concat();
    let compact: Vec<u8> = [
        vec![1, 0, 0, 0],
        vec![1, 0, 6, 0],
        vec![2, 0, 4, 0, 0xe8, 0x03, 0, 0],
        vec![4, 0, 4, 0],
        vec![0x10, 0, 4, 0],
        vec![0x20, 0, 0, 0],
    ]
    .concat();
    assert_eq!(xattr_to_acl(&linux).unwrap(), compact);
    assert_eq!(acl_to_xattr(&compact).unwrap(), linux);
    let entries = parse_acl_xattr(&linux).unwrap();
    assert_eq!(acl_mode(&entries), (0o640, false));
}

#[test]
fn bad_acl_headers_and_entries() {
    assert!(matches!(
        parse_acl_xattr(&[1, 0, 0, 0]),
        Err(uf2fs_format::FormatError::BadMagic { .. })
    ));
    assert!(parse_acl_xattr(&[2, 0, 0]).is_err());
    assert!(parse_acl_xattr(&[2, 0, 0, 0, 1, 0, 6, 0]).is_err());
    assert_eq!(parse_acl_xattr(&[2, 0, 0, 0]).unwrap(), vec![]);
    assert!(xattr_to_acl(&[2, 0, 0, 0]).is_err(), "an empty ACL is not stored");
    let e = |tag, perm, id| AclEntry { tag, perm, id };
    let u = ACL_UNDEFINED_ID;
    // A named user needs a mask; an unknown tag is refused; a named user needs an id.
    let no_mask = [
        e(ACL_USER_OBJ, 6, u),
        e(ACL_USER, 4, 7),
        e(ACL_GROUP_OBJ, 4, u),
        e(ACL_OTHER, 0, u),
    ];
    assert!(validate_acl(&no_mask).is_err());
    let unknown = [
        e(ACL_USER_OBJ, 6, u),
        e(ACL_GROUP_OBJ, 4, u),
        e(0x40, 0, u),
        e(ACL_OTHER, 0, u),
    ];
    assert!(validate_acl(&unknown).is_err());
    let no_id = [
        e(ACL_USER_OBJ, 6, u),
        e(ACL_USER, 4, u),
        e(ACL_GROUP_OBJ, 4, u),
        e(ACL_MASK, 4, u),
        e(ACL_OTHER, 0, u),
    ];
    assert!(validate_acl(&no_id).is_err());
    let minimal = [e(ACL_USER_OBJ, 6, u), e(ACL_GROUP_OBJ, 4, u), e(ACL_OTHER, 4, u)];
    assert!(validate_acl(&minimal).is_ok());
    assert_eq!(acl_mode(&minimal), (0o644, true));
}

#[test]
fn bad_entries_are_not_encoded() {
    let x = |index, name: usize, value: usize| RawXattr {
        index,
        name: vec![b'n'; name],
        value: vec![0; value],
    };
    assert!(encode_xattrs(&[x(0, 1, 1)]).is_err());
    assert!(encode_xattrs(&[x(1, 256, 1)]).is_err());
    assert!(encode_xattrs(&[x(1, 1, 65536)]).is_err());
    assert!(encode_xattrs(&[x(1, 255, 65535)]).is_ok());
}
