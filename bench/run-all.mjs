#!/usr/bin/env node
/**
 * Runs every benchmark in bench/ (each `*.mjs` file here except this one, in name order), one after
 * the other in its own process, so they never compete for the CPU. `node bench/run-all.mjs scan`
 * runs only those whose name contains "scan". Exits non-zero if any benchmark fails.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('./', import.meta.url));
const filters = process.argv.slice(2);
const benches = readdirSync(dir)
  .filter((f) => f.endsWith('.mjs') && f !== 'run-all.mjs')
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
let failed = 0;
for (const bench of benches) {
  console.log(`\n# ${bench}\n`);
  const result = spawnSync(process.execPath, [`${dir}${bench}`], { stdio: 'inherit' });
  if (result.status !== 0) {
    failed++;
    console.error(`${bench} failed (${result.signal ?? `exit ${result.status}`})`);
  }
}
process.exitCode = failed === 0 ? 0 : 1;
