#!/usr/bin/env bash
# Installs everything elasticdl-ts needs on a fresh Debian 12 machine (root, npm registry and Debian
# mirrors only), then installs the workspace and builds it. Safe to run again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium: the live view's end-to-end test drives it headless (puppeteer-core).
APT_PACKAGES=(cmake g++ make python3 clang clang-format libclang-rt-14-dev llvm postgresql
  python3-protobuf python3-prometheus-client protobuf-compiler chromium)
# Dawn (the `webgpu` package) needs a newer software Vulkan driver than bookworm ships.
BACKPORTS_PACKAGES=(mesa-vulkan-drivers libvulkan1)

# openssl: the HTTPS test makes its own CA and server certificate (packages/storage/test).
APT_PACKAGES+=(openssl)

# radosgw (Ceph 16.2): the S3 gateway the storage tests start as a one-node cluster, for what npm's
# s3rver does not check (If-Match, SigV4, AbortMultipartUpload; packages/storage/test/radosgw.test.ts).
APT_PACKAGES+=(radosgw ceph-mon ceph-osd)

# nginx: the independent HTTPS server (static files: Range, ETag, If-Match) the storage tests run
# as the current user from a temp folder (packages/storage/test/nginx-https.test.ts).
APT_PACKAGES+=(nginx)

# The linux-arm64-gnu addon: cross-compiled (scripts/build-linux-arm64.sh) and tested under qemu.
APT_PACKAGES+=(g++-aarch64-linux-gnu qemu-user-static)
# The win32-x64-gnu addon: cross-compiled with mingw-w64 (scripts/build-win32-x64.sh), tested under wine.
APT_PACKAGES+=(g++-mingw-w64-x86-64-posix wine64)

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# Prints "URI KEYRING" of the first apt source that serves suite $1 with binary packages: deb822
# stanzas in /etc/apt/sources.list.d/*.sources first, then one-line `deb` entries. No mirror host is
# written here: whatever mirror (or proxy) this machine is configured with is used.
debian_mirror() {
  local suite=$1 default_keyring=/usr/share/keyrings/debian-archive-keyring.gpg file
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -f "$file" ] || continue
    awk -v suite="$suite" -v keyring="$default_keyring" '
      BEGIN { RS = ""; FS = "\n" }
      {
        types = ""; uris = ""; suites = ""; signed = keyring
        for (i = 1; i <= NF; i++) {
          line = $i
          if (line ~ /^#/) continue
          key = tolower(line); sub(/:.*/, "", key); sub(/^[^:]*:[ \t]*/, "", line)
          if (key == "types") types = line
          else if (key == "uris") uris = line
          else if (key == "suites") suites = line
          else if (key == "signed-by" && line ~ /^\//) signed = line
          else if (key == "enabled" && tolower(line) == "no") types = ""
        }
        if (types !~ /(^|[ \t])deb([ \t]|$)/) next
        n = split(suites, s, /[ \t]+/)
        for (j = 1; j <= n; j++) if (s[j] == suite) { split(uris, u, /[ \t]+/); print u[1], signed; found = 1; exit }
      }
      END { exit found ? 0 : 1 }' "$file" && return 0
  done
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$file" ] || continue
    sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$file" |
      awk -v suite="$suite" -v keyring="$default_keyring" '
        $1 == "deb" && $3 == suite { print $2, keyring; found = 1; exit }
        END { exit found ? 0 : 1 }' && return 0
  done
  return 1
}

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
need_backports=0
mesa_version=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
case "$mesa_version" in 2[5-9].*) ;; *) need_backports=1 ;; esac

if [ "${#missing[@]}" -gt 0 ] || [ "$need_backports" -eq 1 ]; then
  if [ "$need_backports" -eq 1 ] && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    # The backports suite comes from the mirror this machine already uses for bookworm.
    read -r mirror keyring < <(debian_mirror bookworm) ||
      { echo "bootstrap: no apt source for bookworm found in /etc/apt/sources.list{,.d/}" >&2; exit 1; }
    echo "bootstrap: adding bookworm-backports (from $mirror) for mesa-vulkan-drivers"
    printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: %s\n' \
      "$mirror" "$keyring" | as_root tee /etc/apt/sources.list.d/edl-backports.sources >/dev/null
  fi
  echo "bootstrap: apt-get install ${missing[*]:-} (and backports: ${BACKPORTS_PACKAGES[*]})"
  as_root apt-get update -qq
  if [ "${#missing[@]}" -gt 0 ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  if [ "$need_backports" -eq 1 ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      -t bookworm-backports "${BACKPORTS_PACKAGES[@]}" >/dev/null
  fi
fi

# Node.js >= 22.12 (the engines floor, README "Requirements"). A machine whose Node is older (Debian 12
# ships 18; many images carry 20, past its end of life) gets the current 22 LTS from the npm package
# `node`, the official binaries, as a global install under /usr/local, which comes first on PATH.
node_ok() { node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 12) ? 0 : 1)' 2>/dev/null; }
if ! node_ok; then
  echo "bootstrap: Node.js $(node --version 2>/dev/null || echo none) is below 22.12: installing node@22 into /usr/local"
  as_root npm install -g --prefix /usr/local --silent --no-audit --no-fund node@22
  hash -r
  node_ok || { echo "bootstrap: node on PATH is still $(node --version); put /usr/local/bin before $(dirname "$(command -v node)") on PATH" >&2; exit 1; }
fi
echo "bootstrap: Node.js $(node --version)"

if ! command -v pnpm >/dev/null 2>&1; then
  echo "bootstrap: installing pnpm"
  npm install -g --silent pnpm@10.34.9
fi

pnpm install --frozen-lockfile
pnpm run build
