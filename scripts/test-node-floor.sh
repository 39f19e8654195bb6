#!/usr/bin/env bash
# Checks the engines floor: Node.js 22.12, the first 22.x that loads ES modules with require()
# unflagged. Runs the given vitest files (default: the require(esm) test and the RecordIO golden
# files) on Node.js 22.12.0 from the npm package `node`, with the same addon binary. Nothing is
# rebuilt.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${EDL_NODE_FLOOR_VERSION:-22.12.0}
tools=.tools/node-$version
if [ ! -x "$tools/node_modules/node/bin/node" ]; then
  mkdir -p "$tools"
  npm install --prefix "$tools" --silent --no-audit --no-fund --no-save "node@$version" >/dev/null
fi
export PATH="$PWD/$tools/node_modules/node/bin:$PATH"
echo "test-node-floor: $(node --version)"
if [ "$#" -eq 0 ]; then
  set -- packages/cli/test/require-esm.test.ts packages/recordio/test/golden.test.ts
fi
node node_modules/vitest/vitest.mjs run "$@"
