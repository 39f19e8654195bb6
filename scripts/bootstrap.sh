#!/usr/bin/env bash
# Installs everything elasticdl-ts needs on a fresh Debian 12 machine (root, npm registry and Debian
# mirrors only), then installs the workspace and builds it. Safe to run again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium: the live view's end-to-end test drives it headless (puppeteer-core).
APT_PACKAGES=(cmake g++ make python3 clang clang-format libclang-rt-14-dev llvm postgresql
  python3-protobuf protobuf-compiler chromium)
# Dawn (the `webgpu` package) needs a newer software Vulkan driver than bookworm ships.
BACKPORTS_PACKAGES=(mesa-vulkan-drivers libvulkan1)

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
need_backports=0
mesa_version=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
case "$mesa_version" in 2[5-9].*) ;; *) need_backports=1 ;; esac

if [ "${#missing[@]}" -gt 0 ] || [ "$need_backports" -eq 1 ]; then
  if [ "$need_backports" -eq 1 ] && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "bootstrap: adding bookworm-backports for mesa-vulkan-drivers"
    as_root tee /etc/apt/sources.list.d/edl-backports.sources >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
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

if ! command -v pnpm >/dev/null 2>&1; then
  echo "bootstrap: installing pnpm"
  npm install -g --silent pnpm@10.34.9
fi

pnpm install --frozen-lockfile
pnpm run build
