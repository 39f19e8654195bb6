#!/usr/bin/env bash
# C++ unit tests (ctest) and bounded fuzzing under AddressSanitizer + UndefinedBehaviorSanitizer.
#
# Builds with clang into build-asan/ (-fno-sanitize-recover=undefined: any UB fails), runs ctest,
# then runs each libFuzzer target (scripts/fuzz-lib.sh: chunk, index, snappy, gzip) for
# EDL_FUZZ_SECONDS (default 30, so about 2 minutes in all) on seed corpora made by make_seeds and
# from the golden files, with the dictionaries of native/fuzz/dict. Exits non-zero on any failure.
# scripts/fuzz-long.sh runs the same targets for hours and keeps the corpus.
#   EDL_FUZZ_SECONDS  seconds per fuzzer (0 skips fuzzing)
#   EDL_FUZZ_MAX_LEN  largest input in bytes (default 4096)
#   EDL_GOLDEN_DIR    golden files (default packages/recordio/test/golden, the repository's own copy)
#   EDL_JOBS          build parallelism (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
fuzz_seconds=${EDL_FUZZ_SECONDS:-30}
jobs=${EDL_JOBS:-2}
golden=${EDL_GOLDEN_DIR:-$root/packages/recordio/test/golden}
build=$root/build-asan
start=$(date +%s)

echo "test-native: configuring $build (clang, ASan + UBSan)"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DEDL_BUILD_TESTS=ON -DEDL_SANITIZE=ON -DEDL_FUZZ=ON -DEDL_GOLDEN_DIR="$golden" >/dev/null
if ! cmake --build "$build" -j"$jobs" >"$build/build.log" 2>&1; then
  grep -Ev '^\[ *[0-9]+%\]' "$build/build.log" | tail -n 80
  echo "test-native: build FAILED (log: $build/build.log)"
  exit 1
fi

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export EDL_GOLDEN_DIR="$golden"

echo "test-native: ctest"
status=0
(cd "$build" && ctest --output-on-failure) || status=1
[ "$status" -eq 0 ] || { echo "test-native: ctest FAILED"; exit 1; }

if [ "$fuzz_seconds" -gt 0 ]; then
  EDL_FUZZ_ROOT=$root
  # shellcheck source=scripts/fuzz-lib.sh
  source "$root/scripts/fuzz-lib.sh"
  corpus=$build/fuzz-corpus
  rm -rf "$corpus"
  fuzz_seed "$build" "$golden" "$corpus/seed"
  for target in "${EDL_FUZZ_TARGETS[@]}"; do
    echo "test-native: fuzz_$target for ${fuzz_seconds}s (-max_len=$EDL_FUZZ_MAX_LEN)"
    log=$build/fuzz_$target.log
    if ! fuzz_run "$build" "$target" "$fuzz_seconds" "$corpus/work-$target" "$corpus/seed/$target" "$log"; then
      tail -n 60 "$log"
      echo "test-native: fuzz_$target FAILED (log: $log)"
      exit 1
    fi
    echo "test-native: fuzz_$target: $(fuzz_summary "$log")"
  done
fi

# The built addon (if any) must need nothing at run time beyond the C/C++ runtime.
addon=$root/build/Release/edl_native.node
if [ -f "$addon" ] && command -v ldd >/dev/null; then
  extra=$(ldd "$addon" | awk '{print $1}' |
    grep -Ev '^(linux-vdso|/lib64/ld-linux|ld-linux|libc\.so|libm\.so|libstdc\+\+\.so|libgcc_s\.so)' || true)
  if [ -n "$extra" ]; then
    echo "test-native: $addon needs unexpected libraries: $extra"
    exit 1
  fi
  echo "test-native: $addon needs only libc/libm/libstdc++/libgcc_s"
fi

echo "test-native: OK in $(( $(date +%s) - start ))s"
