#!/usr/bin/env bash
# C++ unit tests (ctest) and bounded fuzzing under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "test-native: no native tests yet"
