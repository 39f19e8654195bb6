#!/usr/bin/env bash
# Fails when a C++ file under native/ (third_party excluded) is not clang-formatted.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files 'native/*.cc' 'native/*.h' | grep -v '^native/third_party/' || true)
[ -z "$files" ] && exit 0
clang-format --dry-run --Werror $files
