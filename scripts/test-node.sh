#!/usr/bin/env bash
# Runs the TypeScript test suites again on another supported Node.js line: `test-node.sh 24` or
# `test-node.sh 26` (extra arguments go to vitest). The same N-API addon binary serves every line:
# nothing is rebuilt. Node comes from the npm package `node` (the official binaries), installed
# under .tools/ once.
set -euo pipefail
cd "$(dirname "$0")/.."
major=${1:?usage: test-node.sh MAJOR [vitest arguments...]}
shift
tools=.tools/node$major
if [ ! -x "$tools/node_modules/node/bin/node" ]; then
  mkdir -p "$tools"
  npm install --prefix "$tools" --silent --no-audit --no-fund --no-save "node@$major" >/dev/null
fi
export PATH="$PWD/$tools/node_modules/node/bin:$PATH"
echo "test-node $major: $(node --version)"
node node_modules/vitest/vitest.mjs run "$@"
