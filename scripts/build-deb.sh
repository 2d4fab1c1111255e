#!/usr/bin/env bash
# Builds the Debian package: target/debian/uf2fs_VERSION-1_ARCH.deb, holding the uf2fs
# binary, the mount helper mount.fuse.uf2fs (a link to it, so `mount -t fuse.uf2fs` and
# fstab lines work), a man page per subcommand and bash, zsh and fish completions, the
# pages and completions made from the CLI's own definition (`uf2fs generate-assets`).
# Needs cargo-deb (`cargo install cargo-deb --locked`) and dpkg-dev (dpkg-shlibdeps works
# out the libc dependency); what goes where:
# crates/cli/Cargo.toml's [package.metadata.deb], docs/debian-package.md.
#
#   scripts/build-deb.sh          prints the path of the .deb it made
set -euo pipefail

cd "$(dirname "$0")/.."

if ! cargo deb --version >/dev/null 2>&1; then
    echo "scripts/build-deb.sh: cargo-deb is missing: cargo install cargo-deb --locked" >&2
    exit 1
fi

target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
cargo build --release -p uf2fs
assets="$target/release/deb-assets"
rm -rf "$assets"
"$target/release/uf2fs" generate-assets "$assets"
gzip -9n "$assets"/man/*.1
# --no-build: the binary is the one just built (and whose pages were just made).
# --strip: the release profile keeps line tables (debug = 1) for backtraces; the package
# does not need them.
deb=$(cargo deb -p uf2fs --no-build --strip --output "$target/debian/")
echo "$deb"
