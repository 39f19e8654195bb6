// The packages are ESM only; CommonJS code loads them through require(esm), which Node.js 22 enables
// unflagged from 22.12 on. Node.js 20 (which also has it from 20.19) reached its end of life in
// April 2026, and the AWS SDK that reads s3:// drops it in January 2027: hence `engines: >=22.12`
// in every package.json (README, "Requirements"). scripts/test-node-floor.sh runs this file on
// Node.js 22.12.0, the floor.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const cliDir = fileURLToPath(new URL('../', import.meta.url));
const names = ['common', 'recordio', 'data', 'proto', 'master', 'worker', 'model-zoo', 'cli'].map(
  (p) => `@edl/${p}`,
);

describe(`require() of the packages from CommonJS on Node.js ${process.version}`, () => {
  it('every workspace package states engines >=22.12', () => {
    for (const dir of readdirSync(join(repoRoot, 'packages'))) {
      const manifest = JSON.parse(readFileSync(join(repoRoot, 'packages', dir, 'package.json'), 'utf8')) as {
        engines?: { node?: string };
      };
      expect(manifest.engines?.node, dir).toBe('>=22.12');
    }
  });

  it('loads every package with require()', () => {
    const script = `const out = {};
for (const name of ${JSON.stringify(names)}) out[name] = Object.keys(require(name)).length;
console.log(JSON.stringify(out));`;
    const out = execFileSync(process.execPath, ['-e', script], {
      cwd: cliDir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const counts = JSON.parse(out) as Record<string, number>;
    expect(Object.keys(counts)).toEqual(names);
    for (const name of names) expect(counts[name], name).toBeGreaterThan(0);
  }, 60_000);
});
