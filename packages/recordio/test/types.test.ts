import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The public typings: test/types/usage.ts must compile under the project's strict settings, with
// every misuse marked @ts-expect-error really rejected.
describe('public typings', () => {
  it('compile for documented use and reject misuse', () => {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const project = fileURLToPath(new URL('./types/tsconfig.json', import.meta.url));
    const result = spawnSync(process.execPath, [tsc, '-p', project], { encoding: 'utf8' });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  }, 60_000);
});
