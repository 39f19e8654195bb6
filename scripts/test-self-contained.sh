#!/usr/bin/env bash
# Proves the repository reads nothing outside itself: clones the committed tree alone into an empty
# temporary directory (no sibling directories at all), then runs
# scripts/test-native.sh there. A path that escapes the clone fails here, not only on a machine
# that lacks it.
# Only committed files are checked: run it after committing.
#   EDL_JOBS  build parallelism (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${EDL_JOBS:-2}
start=$(date +%s)
lone=$(mktemp -d)
trap 'rm -rf "$lone"' EXIT
git clone --quiet --no-hardlinks "$root" "$lone/repo"
[ "$(ls -A "$lone")" = repo ] || { echo "test-self-contained: $lone is not empty besides the clone"; exit 1; }
cd "$lone/repo"
echo "test-self-contained: $(git rev-parse --short HEAD) cloned alone into $lone/repo"
# Nothing from the outer environment may point the tests back at the original checkout.
unset EDL_GOLDEN_DIR
# test-native.sh builds the ctest suite and the fuzzers (ASan + UBSan), runs ctest (the golden
# files, the prefetcher, TFRecord) and seeds every fuzzer from the golden files; 1 s of fuzzing each.
EDL_FUZZ_SECONDS=1 EDL_JOBS=$jobs bash scripts/test-native.sh
echo "test-self-contained: OK in $(( $(date +%s) - start ))s"
