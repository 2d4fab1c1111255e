//! The lab against Linux near a full volume: greedy's WAF on the kernel comparisons'
//! geometries (40 MiB conventional + 64 zones of 8 MiB with `--io-size 64M`, and 128
//! zones with 512 MiB) against the median of each kernel's runs of the same setup
//! with `scripts/kernel/waf-compare.sh` (docs/waf-lab.md, the fidelity table), the
//! lab running that kernel's GC loop. The lab must accept every file size Linux
//! accepts (to its largest file, 99.9% of df, and not one block more) and stay within
//! 10% of Linux's WAF with one seed; where Linux's WAF climbs by more than 5% a MiB
//! of fill, it must reach Linux's WAF within 0.5% of df ("Near full: what 5% means
//! at the cliff").

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

/// Greedy's WAF on `setup` with `kernel`'s GC loop.
fn waf(setup: Setup, kernel: KernelGcLoop) -> f64 {
    let file_mib = setup.file_bytes >> 20;
    let setup = Setup { kernel, ..setup };
    uf2fs_lab::run::run(&setup, GcPolicy::Greedy, Workload::Uniform, &|_| {})
        .unwrap_or_else(|e| panic!("{file_mib} MiB, which Linux accepts: {e}"))
        .waf
}

/// The lab with `kernel`'s GC loop against that kernel's median.
fn check_with(file_mib: u64, kernel: KernelGcLoop, linux_median: f64) {
    check_setup(kernel_64_zones(file_mib), kernel, linux_median);
}

/// [`check_with`] on any setup.
fn check_setup(setup: Setup, kernel: KernelGcLoop, linux_median: f64) {
    let file_mib = setup.file_bytes >> 20;
    let r = waf(setup, kernel);
    let off = r / linux_median - 1.0;
    assert!(
        off.abs() <= 0.10,
        "{file_mib} MiB: lab WAF {r:.2} with Linux {kernel}'s GC loop, Linux {kernel} {linux_median:.2} ({:+.1}%)",
        off * 100.0
    );
}

#[test]
fn at_88_percent_of_df_each_kernel_s_gc_loop_meets_that_kernel() {
    // Linux 6.12's runs are 88% above 6.1's here (39.79 against 21.20): its
    // `f2fs_gc` checkpoints at the top of every round and takes a victim after it.
    check_with(401, KernelGcLoop::Linux612, 39.79);
    // Linux 6.1 climbs 8.5% a MiB here (8.28 at 390 MiB, 21.20 at 401, 45.53 at
    // 405): the lab reaches its 21.20 within 2 MiB (0.45% of the 446 MiB of df).
    let (below, above) = (
        waf(kernel_64_zones(399), KernelGcLoop::Linux61),
        waf(kernel_64_zones(403), KernelGcLoop::Linux61),
    );
    assert!(
        below < 21.20 && 21.20 < above,
        "Linux 6.1's 21.20 at 401 MiB not reached between 399 and 403 MiB: {below:.2}, {above:.2}"
    );
}

#[test]
fn at_97_percent_of_df_on_128_zones_each_kernel_s_gc_loop_meets_that_kernel() {
    // 900 MiB and 512 MiB of writes on 128 zones (932 MiB of df): Linux 6.12's
    // flusher writes its round on while the writer's passes move victims, where the
    // lab's waited for the writer (twice Linux's WAF before).
    let setup = Setup {
        zones: 128,
        file_bytes: 900 << 20,
        io_bytes: 512 << 20,
        ..kernel_64_zones(0)
    };
    check_setup(setup.clone(), KernelGcLoop::Linux612, 38.40);
    check_setup(setup, KernelGcLoop::Linux61, 31.13);
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
fn on_the_plateau_at_linux_s_dirty_level_the_lab_meets_each_traced_run() {
    // Near full almost every victim is taken by the flusher right after one of its
    // pages, and cleans the dirty pages whose old blocks it holds: the WAF follows
    // the dirty level, which on Linux depends on how fast the guest's flusher runs
    // against fio (docs/waf-lab.md, "Near full: the plateau follows the dirty level").
    // Each run: its kernel, the file, the dirty data pages when its victims were taken
    // (mean, kprobe) and its WAF; the first two traced on the lab's second host,
    // 2026-11-30, the others on its first (the default hold, 960, is those).
    let runs = [
        (KernelGcLoop::Linux61, 432, 622, 116.61),
        (KernelGcLoop::Linux612, 432, 705, 105.93),
        (KernelGcLoop::Linux612, 415, 937, 83.12),
        (KernelGcLoop::Linux61, 415, 988, 80.83),
    ];
    for (kernel, file_mib, dirty, linux) in runs {
        let mut wafs: Vec<f64> = (1..=3)
            .map(|seed| {
                let setup = Setup {
                    seed,
                    writer_hold: Some(dirty),
                    ..kernel_64_zones(file_mib)
                };
                waf(setup, kernel)
            })
            .collect();
        wafs.sort_by(f64::total_cmp);
        let off = wafs[1] / linux - 1.0;
        assert!(
            off.abs() <= 0.05,
            "{file_mib} MiB, writer held at {dirty}: lab {wafs:.2?} (median {:+.1}%) against Linux {kernel}'s {linux:.2}",
            off * 100.0
        );
    }
    // At the default hold the lab is far below the run of the second host.
    let held_default = waf(kernel_64_zones(432), KernelGcLoop::Linux61);
    assert!(
        held_default < 116.61 * 0.8,
        "432 MiB at the default hold: {held_default:.2}"
    );
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
