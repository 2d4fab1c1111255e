#!/usr/bin/env bash
# Runs every cargo-fuzz target (or the ones named) for SECONDS each; fails if any finds a
# crash, a timeout or an out-of-memory input, or if a saved regression crashes again.
#
#   fuzz/run-all.sh SECONDS [TARGET...]
#
# Uses `cargo +nightly fuzz` when a nightly toolchain is installed, else stable cargo with
# RUSTC_BOOTSTRAP=1 (cargo-fuzz needs -Z flags; FUZZ_TOOLCHAIN=stable forces that path).
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`) and a C++ compiler (libFuzzer).
# Targets run FUZZ_JOBS at a time (default: CPUs, at most 4), each starting from its
# committed seeds in fuzz/corpus/<target>/ (read only; new inputs go to a scratch
# directory). Crashing inputs land in fuzz/artifacts/<target>/. Before fuzzing, saved
# regressions (fuzz/regressions/<target>/*) must not crash; known unfixed crashes
# (fuzz/known-crashes/<target>/*) are replayed and reported without failing.
# FUZZ_LOG_DIR=DIR keeps each target's libFuzzer log there (the scratch copy is removed).
# FUZZ_TIMEOUT=SECONDS: libFuzzer's per-input limit (wall time; default 5). On a loaded
# machine at nice 19 the recovery target's inputs (a 128 MiB image, ~620 nodes replayed,
# under AddressSanitizer) take over 5 s of wall time without hanging: give it more there.
set -euo pipefail

secs="${1:?usage: fuzz/run-all.sh SECONDS [TARGET...]}"
shift
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "run-all.sh: cargo-fuzz is not installed (cargo install cargo-fuzz --locked)" >&2
    exit 2
fi
if [[ "${FUZZ_TOOLCHAIN:-}" != stable ]] && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    fuzz=(cargo +nightly fuzz)
else
    fuzz=(env RUSTC_BOOTSTRAP=1 cargo fuzz)
fi

if (($# > 0)); then
    targets=("$@")
else
    mapfile -t targets < <("${fuzz[@]}" list)
fi
jobs="${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}"
((jobs > 4)) && jobs=4
((jobs < 1)) && jobs=1

# Debug assertions on: an overflow the fuzzer provokes is a bug even where release
# builds would wrap silently.
build_flags=(--debug-assertions)
if (($# > 0)); then
    for t in "${targets[@]}"; do "${fuzz[@]}" build "${build_flags[@]}" "$t" >/dev/null; done
else
    "${fuzz[@]}" build "${build_flags[@]}"
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failed=()

# Saved regressions must pass before any new fuzzing.
for t in "${targets[@]}"; do
    dir="fuzz/regressions/$t"
    if [[ -d "$dir" ]] && [[ -n "$(ls -A "$dir")" ]]; then
        if ! "${fuzz[@]}" run "${build_flags[@]}" "$t" "$dir"/* -- -runs=1 >"$scratch/$t.regress.log" 2>&1; then
            echo "FAIL $t: a saved regression in $dir crashes again" >&2
            tail -n 30 "$scratch/$t.regress.log" >&2
            failed+=("$t (regression)")
        fi
    fi
done

# Known, not yet fixed crashes: say which still crash and which can become regressions.
for t in "${targets[@]}"; do
    dir="fuzz/known-crashes/$t"
    [[ -d "$dir" ]] || continue
    for f in "$dir"/*; do
        [[ -f "$f" ]] || continue
        if "${fuzz[@]}" run "${build_flags[@]}" "$t" "$f" -- -runs=1 >/dev/null 2>&1; then
            echo "note $t: $f no longer crashes: move it to fuzz/regressions/$t/"
        else
            echo "note $t: $f still crashes (known bug, see fuzz/known-crashes/README.md)"
        fi
    done
done

run_one() {
    local t="$1"
    mkdir -p "$scratch/corpus/$t"
    local seeds=()
    [[ -d "fuzz/corpus/$t" ]] && seeds=("fuzz/corpus/$t")
    "${fuzz[@]}" run "${build_flags[@]}" "$t" "$scratch/corpus/$t" "${seeds[@]}" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout="${FUZZ_TIMEOUT:-5}" \
        -print_final_stats=1 >"$scratch/$t.log" 2>&1
}

declare -A pids=()
report() { # report TARGET STATUS
    local t="$1" status="$2" log="$scratch/$1.log"
    local runs execs cov
    runs="$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | tail -n 1 || true)"
    execs="$(grep -o 'exec/s: [0-9]*' "$log" | tail -n 1 || true)"
    # libFuzzer's last status line: edges covered, features, corpus entries/bytes.
    cov="$(grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -n 1 || true)"
    [[ -n "${FUZZ_LOG_DIR:-}" ]] && cp "$log" "$FUZZ_LOG_DIR/"
    if [[ "$status" == 0 ]]; then
        printf 'ok   %-11s %s, %s, %s\n' "$t" "${runs:-?}" "${execs:-?}" "${cov:-?}"
    else
        printf 'FAIL %-11s exit %s\n' "$t" "$status" >&2
        if ! grep -E 'panicked at|ERROR: libFuzzer|SUMMARY|Test unit written|==[0-9]+==ERROR' "$log" | head -n 20 >&2; then
            tail -n 20 "$log" >&2 # no libFuzzer report: a build or setup failure
        fi
        failed+=("$t")
    fi
}
for t in "${targets[@]}"; do
    while ((${#pids[@]} >= jobs)); do
        if wait -n -p done_pid; then status=0; else status=$?; fi
        for k in "${!pids[@]}"; do
            [[ "${pids[$k]}" == "$done_pid" ]] && { report "$k" "$status"; unset "pids[$k]"; }
        done
    done
    run_one "$t" &
    pids[$t]=$!
done
for k in "${!pids[@]}"; do
    if wait "${pids[$k]}"; then report "$k" 0; else report "$k" $?; fi
done

if ((${#failed[@]} > 0)); then
    echo "fuzzing found problems in: ${failed[*]} (inputs under fuzz/artifacts/)" >&2
    exit 1
fi
echo "all ${#targets[@]} fuzz targets ran ${secs}s each without a crash"
