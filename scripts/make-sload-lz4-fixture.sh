#!/bin/sh
# Remakes crates/cli/tests/fixtures/sload-lz4/system.img.gz, the compressed image that
# crates/cli/tests/repack.rs (an_sload_lz4_fixture_reads_and_repacks_like_itself) reads
# and repacks: the test's own tree (make_fixture_tree) loaded by f2fs-tools 1.16's
# mkfs.f2fs + sload.f2fs with LZ4 (Debian's 1.15 has no compressor), checked by its
# fsck.f2fs, gzip'd.
# usage: scripts/make-sload-lz4-fixture.sh [F2FS_TOOLS_SBIN]
#   F2FS_TOOLS_SBIN: where mkfs.f2fs, sload.f2fs and fsck.f2fs 1.16 are (default
#   /tmp/packro-tools/sbin). Build them from Debian trixie's f2fs-tools_1.16.0.orig.tar.xz:
#   apt-get install uuid-dev liblz4-dev liblzo2-dev pkg-config autoconf automake libtool
#   tar xf f2fs-tools_1.16.0.orig.tar.xz && cd f2fs-tools-1.16.0 &&
#   ./autogen.sh && ./configure --prefix=/tmp/packro-tools && make -j2 && make install
set -e
sbin=${1:-/tmp/packro-tools/sbin}
"$sbin/sload.f2fs" -V
cd "$(dirname "$0")/.."
UF2FS_SLOAD_F2FS="$sbin/sload.f2fs" cargo test --release -p uf2fs --test repack \
    remake_the_sload_lz4_fixture -- --ignored --exact --nocapture
ls -l crates/cli/tests/fixtures/sload-lz4/system.img.gz
