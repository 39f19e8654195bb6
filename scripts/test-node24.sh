#!/usr/bin/env bash
# Runs the TypeScript test suites again on Node 24 LTS (users run 22 and 24; the machine's Node is 20).
# The same N-API addon binary serves both: nothing is rebuilt. Node 24 comes from the npm package `node`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=.tools/node24
if [ ! -x "$tools/node_modules/node/bin/node" ]; then
  mkdir -p "$tools"
  npm install --prefix "$tools" --silent --no-audit --no-fund --no-save node@24 >/dev/null
fi
export PATH="$PWD/$tools/node_modules/node/bin:$PATH"
echo "test-node24: $(node --version)"
node node_modules/vitest/vitest.mjs run "$@"
