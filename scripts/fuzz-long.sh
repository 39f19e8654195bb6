#!/usr/bin/env bash
# Long fuzzing: every libFuzzer target (scripts/fuzz-lib.sh) for hours under ASan + UBSan, in
# parallel, with a corpus that is kept between runs and merged (minimized) at the end.
#
#   bash scripts/fuzz-long.sh                   # 4 hours per target, all targets at once
#   EDL_FUZZ_HOURS=0.5 bash scripts/fuzz-long.sh chunk gzip
#
#   EDL_FUZZ_HOURS    hours per target (default 4)
#   EDL_FUZZ_CORPUS   where the corpus lives (default fuzz-corpus/ in the repository, git-ignored):
#                     <dir>/<target>/ grows run after run; crashes go to <dir>/crashes/
#   EDL_FUZZ_MAX_LEN  largest input in bytes (default 4096)
#   EDL_GOLDEN_DIR    golden files for seeds (default packages/recordio/test/golden)
#   EDL_JOBS          build parallelism (default 2)
# Prints each target's executions/s and coverage at the end; exits non-zero if any target found
# a crash (the input is in <corpus>/crashes/, reproduce with build-asan/native/fuzz/fuzz_<t> FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
EDL_FUZZ_ROOT=$root
# shellcheck source=scripts/fuzz-lib.sh
source "$root/scripts/fuzz-lib.sh"
hours=${EDL_FUZZ_HOURS:-4}
seconds=$(python3 -c "import sys; print(max(1, int(float(sys.argv[1]) * 3600)))" "$hours")
corpus=${EDL_FUZZ_CORPUS:-$root/fuzz-corpus}
golden=${EDL_GOLDEN_DIR:-$root/packages/recordio/test/golden}
jobs=${EDL_JOBS:-2}
build=$root/build-asan
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${EDL_FUZZ_TARGETS[@]}")

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DEDL_BUILD_TESTS=ON -DEDL_SANITIZE=ON -DEDL_FUZZ=ON -DEDL_GOLDEN_DIR="$golden" >/dev/null
cmake --build "$build" -j"$jobs" >"$build/build.log" 2>&1 || {
  tail -n 60 "$build/build.log"
  exit 1
}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

fuzz_seed "$build" "$golden" "$build/fuzz-seed"
mkdir -p "$corpus/crashes"
echo "fuzz-long: ${targets[*]} for ${seconds}s each; corpus in $corpus"
pids=()
for t in "${targets[@]}"; do
  # -artifact_prefix keeps crashes with the corpus; the run goes on after one (-fork would too,
  # but one process per target keeps the statistics readable).
  fuzz_run "$build" "$t" "$seconds" "$corpus/$t" "$build/fuzz-seed/$t" "$corpus/fuzz_$t.log" \
    -artifact_prefix="$corpus/crashes/$t-" &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { status=1; echo "fuzz-long: fuzz_${targets[$i]} FAILED (log: $corpus/fuzz_${targets[$i]}.log)"; }
done
for t in "${targets[@]}"; do
  # Keep the corpus small: only inputs that add coverage survive the merge.
  merged=$corpus/$t.merged
  rm -rf "$merged" && mkdir -p "$merged"
  "$build/native/fuzz/fuzz_$t" -merge=1 -max_len="$EDL_FUZZ_MAX_LEN" "$merged" "$corpus/$t" \
    >"$corpus/merge_$t.log" 2>&1 && rm -rf "$corpus/$t" && mv "$merged" "$corpus/$t"
  echo "fuzz-long: fuzz_$t: $(fuzz_summary "$corpus/fuzz_$t.log"); corpus $(ls "$corpus/$t" | wc -l) files"
done
exit $status
