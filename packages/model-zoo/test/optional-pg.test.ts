// pg (node-postgres) is an optional peer dependency of @edl/data, loaded on first use: only a
// postgres:// origin (the table reader) and the census table generator need it. Without it both
// fail with MISSING_DEPENDENCY, naming the package and the command that installs it, and nothing
// else changes. A child process runs the built packages with a real module-resolution hook that
// reports pg as missing, as Node.js does when it is absent.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const modelZooDir = fileURLToPath(new URL('../', import.meta.url));

const hooks = `export async function resolve(specifier, context, next) {
  if (specifier === 'pg') {
    const error = new Error("Cannot find package 'pg' imported from " + context.parentURL);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}`;

// The URL's password must not reach a message.
const url = 'postgres://reader:hunter2@127.0.0.1:1/census_db';
const child = `import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}), import.meta.url);
const { createDataReader } = await import('@edl/data/readers');
const { generateCensusCsv, loadCensusTable } = await import('@edl/model-zoo');
const outcome = (promise) => promise.then(() => ({ ok: true }), (error) => ({ code: error.code, message: error.message }));
const reader = await outcome(createDataReader(${JSON.stringify(url)}, { table: 'census' }));
const census = await outcome(loadCensusTable({ connectionString: ${JSON.stringify(url)}, table: 'adults' }));
const csv = await createDataReader(await generateCensusCsv({ file: process.argv[1], rows: 50 }));
const csvRows = (await csv.createShards()).reduce((sum, shard) => sum + shard.count, 0);
await csv.close();
console.log(JSON.stringify({ reader, census, csvRows }));
`;

const install = 'Install it next to @edl/cli: npm install pg@^8.16.0';

describe('without pg', () => {
  let result: {
    reader: { code?: string; message?: string };
    census: { code?: string; message?: string };
    csvRows: number;
  };
  beforeAll(() => {
    execFileSync('pnpm', ['exec', 'tsc', '-b', 'packages/model-zoo'], { cwd: repoRoot, stdio: 'pipe' });
    const csvFile = join(mkdtempSync(join(tmpdir(), 'edl-no-pg-')), 'census.csv');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', child, csvFile], {
      cwd: modelZooDir,
      encoding: 'utf8',
    });
    result = JSON.parse(out) as typeof result;
  }, 180_000);

  it('a postgres:// origin fails with MISSING_DEPENDENCY naming pg, its version and the table', () => {
    expect(result.reader).toEqual({
      code: 'MISSING_DEPENDENCY',
      message:
        'MISSING_DEPENDENCY: reading the catalog for census needs the npm package pg, an optional dependency ' +
        `of @edl/data that is not installed. ${install}`,
    });
  });

  it('the census table generator fails the same way, naming its table', () => {
    expect(result.census).toEqual({
      code: 'MISSING_DEPENDENCY',
      message:
        'MISSING_DEPENDENCY: loadCensusTable (the adults table) needs the npm package pg, an optional ' +
        `dependency of @edl/data that is not installed. ${install}`,
    });
  });

  it('the other generators and readers work without it: the header and 50 census rows written as CSV and read back', () => {
    expect(result.csvRows).toBe(51);
  });
});
