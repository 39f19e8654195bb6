// @edl/data holds two libraries that never import each other: the datasets (@edl/data/dataset) and
// the DataReaders (@edl/data/readers, whose TableDataReader loads `pg` with its first connection).
// Each subpath loads only its own library, and the root export still offers both. A child process imports the built package by name, as a user
// does, and reports the exports it got and whether `pg` (CommonJS, so in require's cache) loaded.
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const packageDir = fileURLToPath(new URL('../', import.meta.url));
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

const child = `import { createRequire } from 'node:module';
const exports = Object.keys(await import(process.argv[1]));
const cache = Object.keys(createRequire(import.meta.url).cache);
console.log(JSON.stringify({ exports, pg: cache.some((path) => path.includes('/node_modules/pg/')) }));
`;

function load(specifier: string): { exports: string[]; pg: boolean } {
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', child, specifier], {
    cwd: packageDir,
    encoding: 'utf8',
  });
  return JSON.parse(out) as { exports: string[]; pg: boolean };
}

describe('@edl/data subpath exports', () => {
  beforeAll(() => {
    const build = spawnSync('pnpm', ['exec', 'tsc', '-b', 'packages/data'], {
      cwd: repoRoot,
      encoding: 'utf8',
    });
    expect(build.status, build.stdout + build.stderr).toBe(0);
  }, 180_000);

  it('@edl/data/dataset has the datasets and loads no DataReader or pg', () => {
    const { exports, pg } = load('@edl/data/dataset');
    expect(exports).toEqual(expect.arrayContaining(['MapDataset', 'IterDataset', 'ElasticIterator']));
    expect(exports).not.toContain('createDataReader');
    expect(exports).not.toContain('TableDataReader');
    expect(pg).toBe(false);
  }, 60_000);

  it('@edl/data/readers has the DataReaders and no dataset, and loads pg only for a table', () => {
    const { exports, pg } = load('@edl/data/readers');
    expect(exports).toEqual(
      expect.arrayContaining([
        'createDataReader',
        'RecordIODataReader',
        'TableDataReader',
        'recordsOfBatches',
      ]),
    );
    expect(exports).not.toContain('MapDataset');
    expect(exports).not.toContain('IterDataset');
    expect(pg).toBe(false);
  }, 60_000);

  it('@edl/data still exports both libraries', () => {
    const { exports } = load('@edl/data');
    expect(exports).toEqual(
      expect.arrayContaining([
        'MapDataset',
        'IterDataset',
        'createDataReader',
        'TableDataReader',
        'recordsOfBatches',
      ]),
    );
  }, 60_000);
});
