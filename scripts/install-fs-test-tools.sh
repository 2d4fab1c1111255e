#!/usr/bin/env bash
# Installs what scripts/fs-conformance.sh and scripts/bench-fio.sh need on a fresh Debian
# machine. Run as root (or with sudo available). Idempotent: a second run changes nothing
# and finishes in seconds.
#
#   apt:      fuse2fs (the FUSE baseline: ext4 over FUSE), fuse3 (fusermount3),
#             fio, e2fsprogs (mkfs.ext4), util-linux (mountpoint, timeout's friends),
#             gcc + libc6-dev + pkg-config + ca-certificates (to build the crates below)
#   cargo:    pjdfstest (the Rust rewrite of the POSIX conformance suite) and fsx (the
#             Rust File System eXerciser), versions pinned below, `--locked`
#   accounts: the users 'tests' (group 'tests') and 'nobody' (group 'nogroup' on
#             Debian) that pjdfstest switches to in its permission tests
#   /dev/fuse: loads the fuse module if the device is missing (where the machine allows)
#
# usage: scripts/install-fs-test-tools.sh
# env:   PJDFSTEST_VERSION (default 0.2.2), FSX_VERSION (default 0.3.2)
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
export PATH="$PATH:/usr/sbin:/sbin:${CARGO_HOME:-$HOME/.cargo}/bin"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

pjdfstest_version="${PJDFSTEST_VERSION:-0.2.2}"
fsx_version="${FSX_VERSION:-0.3.2}"

log() { printf 'install-fs-test-tools: %s\n' "$*" >&2; }

# ---- apt packages ---------------------------------------------------------------------
packages=(fuse2fs fuse3 fio e2fsprogs util-linux ca-certificates gcc libc6-dev pkg-config)
missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    log "apt-get install ${missing[*]}"
    $SUDO apt-get update
    $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
else
    log "apt packages already installed: ${packages[*]}"
fi

# ---- /dev/fuse --------------------------------------------------------------------------
if [ ! -e /dev/fuse ]; then
    log "no /dev/fuse: trying modprobe fuse"
    $SUDO modprobe fuse || log "modprobe fuse failed: FUSE mounts will not work here"
fi

# ---- cargo tools ------------------------------------------------------------------------
if ! command -v cargo >/dev/null; then
    log "cargo not found: install Rust (rustup, stable) first"
    exit 1
fi
installed_version() { # CRATE -> version installed by cargo install, or nothing
    cargo install --list | awk -v c="$1" '$1 == c { sub(/^v/, "", $2); sub(/:$/, "", $2); print $2 }'
}
for spec in "pjdfstest@$pjdfstest_version" "fsx@$fsx_version"; do
    crate="${spec%@*}"
    want="${spec#*@}"
    have="$(installed_version "$crate")"
    if [ "$have" = "$want" ] && command -v "$crate" >/dev/null; then
        log "$crate $have already installed"
    else
        log "cargo install $spec --locked (have: ${have:-none})"
        cargo install "$spec" --locked
    fi
done

# ---- accounts for pjdfstest -----------------------------------------------------------
# pjdfstest's default [dummy_auth] is nobody + tests, each with its primary group.
if ! getent group tests >/dev/null; then
    log "groupadd tests"
    $SUDO groupadd tests
fi
if ! getent passwd tests >/dev/null; then
    log "useradd tests"
    $SUDO useradd --no-create-home --home-dir / --shell /usr/sbin/nologin \
        --gid tests --comment "Dummy user for pjdfstest" tests
fi
if ! getent passwd nobody >/dev/null; then
    # Debian always has nobody:nogroup; other systems may not.
    group=nogroup
    if ! getent group nogroup >/dev/null; then
        group=nobody
        getent group nobody >/dev/null || $SUDO groupadd nobody
    fi
    log "useradd nobody (group $group)"
    $SUDO useradd --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
        --gid "$group" nobody
fi

# ---- report -----------------------------------------------------------------------------
log "pjdfstest: $(command -v pjdfstest) ($(pjdfstest --version))"
log "fsx:       $(command -v fsx) ($(fsx --version))"
log "fio:       $(fio --version)"
log "fuse2fs:   $(command -v fuse2fs)"
log "users:     $(id tests) / $(id nobody)"
