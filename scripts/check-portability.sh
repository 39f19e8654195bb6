#!/usr/bin/env bash
# Checks that a Linux build of the addon depends on nothing but glibc and libstdc++ (and libgcc_s,
# libstdc++'s own dependency), and prints the newest GLIBC_ / GLIBCXX_ / CXXABI_ symbol versions it
# needs: those are the floors a prebuilt states in the README. Fails on any other library, on a
# statically linked libstdc++ (it would pull newer glibc symbols into the addon, e.g. arc4random from
# glibc 2.36 on Debian 12), or when a floor goes above EDL_MAX_GLIBC / EDL_MAX_GLIBCXX.
#
#   scripts/check-portability.sh [path/to/edl_native.node]
set -euo pipefail

addon=${1:-build/Release/edl_native.node}
max_glibc=${EDL_MAX_GLIBC:-2.33}
max_glibcxx=${EDL_MAX_GLIBCXX:-3.4.30}
allowed='^(libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1)$'

fail() {
  echo "check-portability: $*" >&2
  exit 1
}
[[ -f $addon ]] || fail "no such file: $addon (build it first: pnpm run build:native)"
command -v readelf >/dev/null || fail "readelf not found (apt-get install binutils)"

# readelf reads an ELF file of any architecture, so this checks a cross-compiled addon as well
# (e.g. linux-arm64-gnu built on x86-64).
dynsyms=$(readelf --dyn-syms -W "$addon")
# Newest version of a symbol-version family (e.g. GLIBC), and the symbols that need it.
newest() {
  grep -o "@$1_[0-9.]*" <<<"$dynsyms" | sed "s/^@$1_//" | sort -u -V | tail -n 1
}
needing() {
  awk -v v="@$1_$2" '{ for (i = 1; i <= NF; i++) { n = index($i, v); if (n > 1 && n + length(v) - 1 == length($i)) print substr($i, 1, n - 1) } }' \
    <<<"$dynsyms" | sort -u | paste -sd ' ' -
}
# a <= b for dotted versions
version_le() {
  [[ $(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1) == "$1" ]]
}

echo "addon: $addon ($(readelf -h "$addon" | awk -F: '$1 ~ /Machine/ { sub(/^[ \t]+/, "", $2); print $2 }'))"
needed=$(readelf -d -W "$addon" | awk '/\(NEEDED\)/ { gsub(/[][]/, "", $NF); print $NF }')
echo "NEEDED: $(echo "$needed" | paste -sd ' ' -)"
# ldd only understands this host's architecture.
if command -v ldd >/dev/null && resolved=$(ldd "$addon" 2>/dev/null); then
  echo "ldd:"
  sed 's/^/  /' <<<"$resolved"
fi
unexpected=$(echo "$needed" | grep -Ev "$allowed" || true)
[[ -z $unexpected ]] || fail "depends on libraries other than glibc and libstdc++: $(echo "$unexpected" | paste -sd ' ' -)"
echo "$needed" | grep -q '^libstdc++\.so\.6$' ||
  fail "libstdc++ is not a dynamic dependency (linked statically?): keep it dynamic, a static libstdc++ raises the glibc floor"

glibc=$(newest GLIBC)
glibcxx=$(newest GLIBCXX)
cxxabi=$(newest CXXABI)
echo "newest GLIBC_${glibc}: $(needing GLIBC "$glibc")"
echo "newest GLIBCXX_${glibcxx:-none}: $( [[ -n $glibcxx ]] && needing GLIBCXX "$glibcxx")"
echo "newest CXXABI_${cxxabi:-none}"
echo "floor: glibc ${glibc}, libstdc++ GLIBCXX_${glibcxx:-none}"

version_le "$glibc" "$max_glibc" || fail "needs GLIBC_${glibc}, above the stated floor ${max_glibc} (EDL_MAX_GLIBC)"
[[ -z $glibcxx ]] || version_le "$glibcxx" "$max_glibcxx" ||
  fail "needs GLIBCXX_${glibcxx}, above the stated floor ${max_glibcxx} (EDL_MAX_GLIBCXX)"
echo "check-portability: OK"
