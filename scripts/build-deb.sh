#!/usr/bin/env bash
# Builds the Debian package: target/debian/uf2fs_VERSION-1_ARCH.deb, holding the uf2fs
# binary, the mount helper mount.fuse.uf2fs (a link to it, so `mount -t fuse.uf2fs` and
# fstab lines work), a man page per subcommand and bash, zsh and fish completions, the
# pages and completions made from the CLI's own definition (`uf2fs generate-assets`).
# Built by dpkg-buildpackage (Debian's dpkg-dev: dpkg-shlibdeps works out the libc
# dependency, dpkg-gencontrol the control file, dpkg-deb the archive) from debian/;
# what goes where: debian/rules, docs/debian-package.md.
#
#   scripts/build-deb.sh          prints the path of the .deb it made
#
# UF2FS_DEB_PROFILE (default release): the cargo profile whose binary is packaged. CI
# packages the ci-debug binary its tests ran (the same code with debug assertions on),
# so that it builds the workspace once (docs/ci.md); packages for users are release.
set -euo pipefail

cd "$(dirname "$0")/.."

if ! command -v dpkg-buildpackage >/dev/null 2>&1; then
    echo "scripts/build-deb.sh: dpkg-buildpackage is missing: apt-get install dpkg-dev" >&2
    exit 1
fi

meta=$(cargo metadata --format-version 1 --no-deps)
target=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' <<<"$meta")
version=$(python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "uf2fs"))' <<<"$meta")
# The package's version is debian/changelog's: its upstream part must be the crate's.
deb_version=$(dpkg-parsechangelog -S Version)
if [ "${deb_version%-*}" != "$version" ]; then
    echo "scripts/build-deb.sh: debian/changelog is at $deb_version, the uf2fs crate at $version: add a changelog entry (dch -v $version-1)" >&2
    exit 1
fi

profile=${UF2FS_DEB_PROFILE:-release}
cargo build --profile "$profile" -p uf2fs >&2
assets="$target/$profile/deb-assets"
rm -rf "$assets"
"$target/$profile/uf2fs" generate-assets "$assets"
gzip -9n "$assets"/man/*.1
out="$target/debian"
mkdir -p "$out"
# Binary package only, unsigned; the .buildinfo and .changes go beside the .deb (not to
# the parent directory); no `debian/rules clean` first (it would not touch cargo's
# target directory anyway).
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
name="uf2fs_${deb_version}_${arch}"
UF2FS_TARGET="$target" UF2FS_PROFILE="$profile" UF2FS_DEB_DIR="$out" dpkg-buildpackage --build=binary --no-sign --no-pre-clean \
    --buildinfo-option=-u"$out" --buildinfo-file="$out/$name.buildinfo" \
    --changes-option=-u"$out" --changes-file="$out/$name.changes" >&2
debian/rules clean >&2
echo "$out/$name.deb"
