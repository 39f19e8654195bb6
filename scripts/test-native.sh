#!/usr/bin/env bash
# C++ unit tests (ctest) and bounded fuzzing under AddressSanitizer + UndefinedBehaviorSanitizer.
#
# Builds with clang into build-asan/ (-fno-sanitize-recover=undefined: any UB fails), runs ctest,
# then runs each libFuzzer target for EDL_FUZZ_SECONDS (default 30) on a seed corpus made from
# the golden files. Exits non-zero on any failure.
#   EDL_FUZZ_SECONDS  seconds per fuzzer (0 skips fuzzing)
#   EDL_GOLDEN_DIR    golden files (default ../shared/golden next to the repository)
#   EDL_JOBS          build parallelism (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
fuzz_seconds=${EDL_FUZZ_SECONDS:-30}
jobs=${EDL_JOBS:-2}
golden=${EDL_GOLDEN_DIR:-$root/../shared/golden}
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
  corpus=$build/fuzz-corpus
  rm -rf "$corpus"
  mkdir -p "$corpus/seed-chunk" "$corpus/seed-index" "$corpus/work-chunk" "$corpus/work-index" \
    "$corpus/seed-tfrecord" "$corpus/work-tfrecord"
  # Seeds: each golden file whole (index target) and its first chunk (chunk target), with the
  # mode byte in front (0x01: recompute CRCs; 0x02/0x04: snappy/gzip payload alone).
  python3 - "$golden" "$corpus" <<'PY'
import os, struct, sys
golden, corpus = sys.argv[1], sys.argv[2]
for name in sorted(os.listdir(golden)):
    if not name.endswith('.rio'):
        continue
    data = open(os.path.join(golden, name), 'rb').read()
    # Keep inputs small so the fuzzer runs fast: a file of many chunks keeps its first three
    # (and a truncated one its short last chunk after them).
    offsets, off = [], 0
    while off + 20 <= len(data):
        offsets.append(off)
        off += 20 + struct.unpack_from('<I', data, off + 12)[0]
    if len(data) > 200000 and len(offsets) > 3:
        head = data[:offsets[3]]
        data = head + data[offsets[-1]:] if name.startswith('truncated-') else head
    for mode in (0, 1):
        open(os.path.join(corpus, 'seed-index', f'{mode}-{name}'), 'wb').write(bytes([mode]) + data)
    if len(data) >= 20:
        comp, size = struct.unpack_from('<II', data, 8)
        chunk = data[:20 + size]
        payload = chunk[20:]
        open(os.path.join(corpus, 'seed-chunk', f'1-{name}'), 'wb').write(b'\x01' + chunk)
        if comp in (1, 2):
            mode = 0x02 if comp == 1 else 0x04
            open(os.path.join(corpus, 'seed-chunk', f'{mode}-{name}'), 'wb').write(bytes([mode]) + payload)
PY
  # TFRecord seeds: the committed golden TFRecord files (uncompressed ones), mode 0 and 1.
  for f in "$root"/packages/recordio/test/golden-tfrecord/*.tfrecord; do
    [ -f "$f" ] || continue
    name=$(basename "$f")
    { printf '\x00'; head -c 65536 "$f"; } >"$corpus/seed-tfrecord/0-$name"
    { printf '\x01'; head -c 65536 "$f"; } >"$corpus/seed-tfrecord/1-$name"
  done
  for target in chunk index tfrecord; do
    echo "test-native: fuzz_$target for ${fuzz_seconds}s"
    log=$build/fuzz_$target.log
    if ! "$build/native/fuzz/fuzz_$target" -max_total_time="$fuzz_seconds" -max_len=262144 \
      -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$build/fuzz_$target-" \
      "$corpus/work-$target" "$corpus/seed-$target" >"$log" 2>&1; then
      tail -n 60 "$log"
      echo "test-native: fuzz_$target FAILED (log: $log)"
      exit 1
    fi
    grep -E '^stat::number_of_executed_units|^Done' "$log" | tr '\n' ' '
    echo
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
