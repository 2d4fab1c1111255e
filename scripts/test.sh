#!/usr/bin/env bash
# The test command: sets up a fresh Debian machine that has only Rust, then runs the
# whole test suite (the same command CI runs, from .ci/run).
#
#   scripts/test.sh [CARGO TEST ARGS...]   install what is missing (as root), run the suite
#   scripts/test.sh --install-only         only install the Debian packages (as root)
#   scripts/test.sh --list-packages        print the Debian packages the tests need
#
# As root it installs the Debian packages the tests need that are missing (apt-get update,
# then apt-get install), and loads the fuse module when /dev/fuse is missing. As another
# user, with packages missing, it stops at once and names the one command that installs
# them (`sudo scripts/test.sh --install-only`). With everything in place it touches
# nothing and runs
#
#   UF2FS_REQUIRE_FUSE=1 UF2FS_REQUIRE_LIBSPARSE=1 cargo test --workspace --profile ci-debug
#
# with TMPDIR, unless already set, pointing at a fresh directory on the tmpfs /dev/shm
# when it has room (see below), removed afterwards
# (arguments replace --workspace: `scripts/test.sh -p uf2fs --test mkfs` runs one file;
# `--release` or `--profile NAME` among them replaces `--profile ci-debug`). ci-debug is
# the release build with debug assertions and overflow checks on (Cargo.toml): every
# test runs on optimised code with the `debug_assert!`s, the lock-order checker and the
# inode locks' owner check live, in one build of the workspace (docs/ci.md).
# How it was checked on a fresh Debian: docs/fresh-machine.md.
set -euo pipefail

cd "$(dirname "$0")/.."

# What the tests run, by package:
# f2fs-tools: mkfs.f2fs, sload.f2fs, fsck.f2fs, dump.f2fs, the tests' oracle.
# fuse3: fusermount3, for every mount test. attr: getfattr, setfattr.
# util-linux: prlimit (memory limit on the bad-input runs), setpriv, losetup, blkid, script.
# gcc, libc6-dev, pkg-config: linking (Rust's linker is cc; zstd's C code is compiled).
# ca-certificates: cargo fetching crates over https.
# android-sdk-libsparse-utils: img2simg and simg2img, the oracle of the Android sparse
# image tests (crates/cli/tests/sparse_images.rs; they fail, not skip, without them
# because UF2FS_REQUIRE_LIBSPARSE is set below).
# xfsprogs (xfs_io), e2fsprogs (chattr, lsattr): the inode flag and label tests
# (crates/cli/tests/mount_extras.rs), with the commands fstests uses.
# fio: the GC run on the mount (crates/cli/tests/mount_gc.rs). python3: file handles
# (open_by_handle_at) in mount_extras.rs.
# kmod: modprobe, to load fuse where /dev/fuse is missing.
PACKAGES=(
    f2fs-tools fuse3 attr util-linux ca-certificates gcc libc6-dev pkg-config
    fio python3 android-sdk-libsparse-utils xfsprogs e2fsprogs kmod
)

# Packages of PACKAGES not installed, one per line.
missing_packages() {
    local pkg status
    for pkg in "${PACKAGES[@]}"; do
        status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
        if [ "$status" != installed ]; then echo "$pkg"; fi
    done
}

install_packages() {
    local missing
    missing=$(missing_packages)
    if [ -z "$missing" ]; then return 0; fi
    if [ "$(id -u)" != 0 ]; then
        # shellcheck disable=SC2086
        echo "scripts/test.sh: the tests need Debian packages that are missing:" $missing >&2
        echo "scripts/test.sh: install them with:  sudo $0 --install-only" >&2
        exit 1
    fi
    echo "scripts/test.sh: installing" $missing
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    # shellcheck disable=SC2086
    apt-get install -y --no-install-recommends $missing
}

# /dev/fuse: load the module where the machine allows it; the mount tests fail (not
# skip) without it because UF2FS_REQUIRE_FUSE is set below.
load_fuse() {
    if [ -e /dev/fuse ]; then return 0; fi
    if [ "$(id -u)" = 0 ]; then modprobe fuse || true; fi
    if [ ! -e /dev/fuse ]; then
        echo "scripts/test.sh: /dev/fuse is missing (the mount tests need it): run 'sudo modprobe fuse'" >&2
        exit 1
    fi
}

case "${1:-}" in
    --list-packages)
        printf '%s\n' "${PACKAGES[@]}"
        exit 0
        ;;
    --install-only)
        install_packages
        load_fuse
        exit 0
        ;;
esac

install_packages
load_fuse
if ! command -v cargo >/dev/null 2>&1; then
    echo "scripts/test.sh: cargo is not on PATH (install Rust with rustup first)" >&2
    exit 1
fi

# Scratch space: the tests write images and fsync them many thousand times; on a disk
# most of their time is spent waiting for those flushes (docs/ci.md, "Fifth pass").
# Unless TMPDIR is already set, they get a directory on the tmpfs /dev/shm when it has
# room, removed afterwards. Mode 1777 as /tmp: some mount tests run commands as nobody.
SCRATCH_MIN_GIB=${SCRATCH_MIN_GIB:-6}
scratch=
if [ -z "${TMPDIR:-}" ] && [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] &&
    [ "$(df -P -k /dev/shm | awk 'NR == 2 { print $4 }')" -ge $((SCRATCH_MIN_GIB * 1024 * 1024)) ]; then
    scratch=$(mktemp -d /dev/shm/uf2fs-tests.XXXXXX)
    chmod 1777 "$scratch"
    export TMPDIR=$scratch
    trap 'rm -rf --one-file-system "$scratch"' EXIT
fi

export UF2FS_REQUIRE_FUSE=1 UF2FS_REQUIRE_LIBSPARSE=1
if [ $# = 0 ]; then set -- --workspace; fi
profile=(--profile ci-debug)
for arg in "$@"; do
    case "$arg" in
        --) break ;;
        --release | -r | --profile | --profile=*) profile=() ;;
    esac
done
set -x
cargo test "${profile[@]}" "$@"
