//! The lab against Linux near a full volume: greedy's WAF on the kernel comparisons'
//! smaller geometry (40 MiB conventional + 64 zones of 8 MiB, `--io-size 64M`) at
//! three fills, against the median of Linux 6.1's runs of the same setup with
//! `scripts/kernel/waf-compare.sh` (docs/waf-lab.md, the fidelity table), and with
//! Linux 6.12's GC loop against Linux 6.12's runs where the two kernels part most.
//! The lab must accept every file size Linux accepts (to its largest file, 99.9% of
//! df, and not one block more) and stay within 10% of Linux's WAF with one seed (the
//! table's five-seed medians are within 8.1%, but at 410 MiB where Linux 6.1's own
//! runs spread by 40%).

use uf2fs_core::{GcPolicy, KernelGcLoop};
use uf2fs_lab::{Preset, Setup, Workload};

/// The 64-zone geometry with a file of `file_mib` MiB.
fn kernel_64_zones(file_mib: u64) -> Setup {
    Setup {
        conv_bytes: 40 << 20,
        zone_bytes: 8 << 20,
        zones: 64,
        file_bytes: file_mib << 20,
        io_bytes: 64 << 20,
        seed: 1,
        ..Preset::Small.setup()
    }
}

fn check(file_mib: u64, linux_median: f64) {
    check_with(file_mib, KernelGcLoop::Linux61, linux_median);
}

/// The lab with `kernel`'s GC loop against that kernel's median.
fn check_with(file_mib: u64, kernel: KernelGcLoop, linux_median: f64) {
    let setup = Setup {
        kernel,
        ..kernel_64_zones(file_mib)
    };
    let r = uf2fs_lab::run::run(&setup, GcPolicy::Greedy, Workload::Uniform, &|_| {})
        .unwrap_or_else(|e| panic!("{file_mib} MiB, which Linux accepts: {e}"));
    let off = r.waf / linux_median - 1.0;
    assert!(
        off.abs() <= 0.10,
        "{file_mib} MiB: lab WAF {:.2} with Linux {kernel}'s GC loop, Linux {kernel} {linux_median:.2} ({:+.1}%)",
        r.waf,
        off * 100.0
    );
}

#[test]
fn at_88_percent_of_df_each_kernel_s_gc_loop_meets_that_kernel() {
    // Linux 6.12's runs are 88% above 6.1's here (39.79 against 21.20): its
    // `f2fs_gc` checkpoints at the top of every round and takes a victim after it.
    check_with(401, KernelGcLoop::Linux612, 39.79);
    check_with(401, KernelGcLoop::Linux61, 21.20);
}

#[test]
fn at_83_percent_of_df_linux_6_12_s_loop_meets_linux_6_12() {
    check_with(379, KernelGcLoop::Linux612, 6.67);
}

#[test]
fn at_93_percent_of_df_greedy_is_within_ten_percent_of_linux() {
    check(415, 85.52);
}

#[test]
fn at_99_8_percent_of_df_the_lab_runs_and_is_within_ten_percent_of_linux() {
    check(445, 84.39);
}

#[test]
fn linux_s_largest_file_runs_and_one_block_more_is_refused() {
    // Linux 6.1 on this volume: df 114174 blocks free, the largest file 114060 data
    // blocks (`waf-compare.sh probe`, docs/waf-lab.md "Near full: Linux's limit").
    let mut setup = kernel_64_zones(0);
    setup.file_bytes = 114060 * 4096;
    let r = uf2fs_lab::run::run(&setup, GcPolicy::Greedy, Workload::Uniform, &|_| {})
        .unwrap_or_else(|e| panic!("Linux's largest file: {e}"));
    assert!(r.waf > 1.0);
    setup.file_bytes += 4096;
    let e = uf2fs_lab::run::run(&setup, GcPolicy::Greedy, Workload::Uniform, &|_| {})
        .expect_err("one block more than Linux takes");
    assert!(e.contains("does not fit"), "{e}");
}
