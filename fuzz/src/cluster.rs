//! The compressed-cluster decoder as a fuzz target (`cluster`): it needs the core, so
//! it lives apart from [`crate::parsers`], which `crates/format`'s tests include.

/// A compressed cluster: the first byte picks the algorithm, checksum flag and cluster
/// size; the rest is the cluster's compressed blocks (header and data). Decoding never
/// panics, and a success fills exactly the cluster. The LZO decoder also runs on the
/// raw bytes, and never writes past its output.
pub fn run(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let c = uf2fs_format::node::Compression {
        compr_blocks: 0,
        algorithm: sel & 3,
        log_cluster_size: 2 + ((sel >> 2) & 3),
        flag: ((sel >> 4) & 1) as u16,
    };
    let mut out = vec![0u8; 4096 << c.log_cluster_size];
    if let Err(e) = uf2fs_core::compress::decompress_cluster(1, 0, 0, &c, rest, &mut out) {
        let _ = e.to_string();
    }
    let mut small = vec![0u8; 1 + (sel as usize) * 64];
    if let Ok(n) = uf2fs_core::compress::lzo::decompress(rest, &mut small) {
        assert!(n <= small.len());
    }
}
