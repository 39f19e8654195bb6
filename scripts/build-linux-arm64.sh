#!/usr/bin/env bash
# Cross-compiles the addon for linux-arm64-gnu on an x86-64 Debian 12 host:
#   build-linux-arm64-gnu/Release/edl_native.node
# with Debian's g++-aarch64-linux-gnu (scripts/bootstrap.sh installs it), cmake-js and the toolchain
# file cmake/toolchain-linux-arm64-gnu.cmake. N-API headers come from node-api-headers, so nothing is
# downloaded. Then checks its glibc/libstdc++ floor (scripts/check-portability.sh). Test it with
# scripts/test-linux-arm64.sh (qemu-user-static and an arm64 Node.js).
#
#   scripts/build-linux-arm64.sh [--jobs N]    (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=2
if [[ ${1:-} == --jobs ]]; then jobs=$2; fi
command -v aarch64-linux-gnu-g++ >/dev/null ||
  { echo "build-linux-arm64: aarch64-linux-gnu-g++ not found (apt-get install g++-aarch64-linux-gnu)" >&2; exit 1; }
out=build-linux-arm64-gnu
node node_modules/cmake-js/bin/cmake-js compile --arch arm64 --out "$out" --parallel "$jobs" \
  --CDCMAKE_BUILD_TYPE=Release --CDCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-linux-arm64-gnu.cmake"
addon=$out/Release/edl_native.node
file "$addon" 2>/dev/null || true
bash scripts/check-portability.sh "$addon"
