#!/usr/bin/env bash
# Checks the engines floor: Node.js 20.19, the first 20.x that loads ES modules with require().
# Runs the given vitest files (default: the require(esm) test and the RecordIO golden files) on
# Node.js 20.19 from the npm package `node`, with the same addon binary. Nothing is rebuilt.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${EDL_NODE20_VERSION:-20.19.0}
tools=.tools/node-$version
if [ ! -x "$tools/node_modules/node/bin/node" ]; then
  mkdir -p "$tools"
  npm install --prefix "$tools" --silent --no-audit --no-fund --no-save "node@$version" >/dev/null
fi
export PATH="$PWD/$tools/node_modules/node/bin:$PATH"
echo "test-node20: $(node --version)"
if [ "$#" -eq 0 ]; then
  set -- packages/cli/test/require-esm.test.ts packages/recordio/test/golden.test.ts
fi
node node_modules/vitest/vitest.mjs run "$@"
