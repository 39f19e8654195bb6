import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataReader } from '../../src/protocols.js';
import {
  createDataReader,
  isDataReader,
  loadCustomReader,
  parseReaderParams,
} from '../../src/readers/index.js';

let dir: string;

/** A user module: an in-memory reader over params.items, split into shards of params.perShard. */
const READER_MODULE = `
export default function createReader(params) {
  const items = params.items ?? [];
  const perShard = params.perShard ?? 2;
  return {
    metadata: { columns: [{ name: 'item', type: 'string' }] },
    async createShards() {
      const shards = [];
      for (let s = 0; s < items.length; s += perShard) {
        shards.push({ name: 'mem:' + s, start: s, count: Math.min(perShard, items.length - s) });
      }
      return shards;
    },
    async *readRecords(range) {
      for (let i = range.start; i < range.end; i++) yield items[i];
    },
    describe() { return { type: 'ignored', params }; },
  };
}
export const upper = (params) => createReader({ ...params, items: (params.items ?? []).map((s) => s.toUpperCase()) });
export const notAFunction = 42;
export function incomplete() { return { createShards() { return []; }, metadata: {} }; }
export async function asyncFactory(params) { return createReader(params); }
`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edl-custom-'));
  await writeFile(join(dir, 'my-reader.mjs'), READER_MODULE);
  await writeFile(
    join(dir, 'broken.mjs'),
    "import 'edl-no-such-package-anywhere';\nexport default () => null;\n",
  );
  await writeFile(join(dir, 'syntax.mjs'), 'export default function (\n');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function readAll(reader: DataReader<unknown>): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const s of await reader.createShards()) {
    for await (const r of reader.readRecords({ shardName: s.name, start: s.start, end: s.start + s.count }))
      out.push(r);
  }
  return out;
}

describe('loadCustomReader', () => {
  it('loads the default export relative to cwd and passes the JSON params', async () => {
    const reader = await loadCustomReader('./my-reader.mjs', '{"items":["a","b","c"],"perShard":2}', {
      cwd: dir,
    });
    expect(isDataReader(reader)).toBe(true);
    expect(await reader.createShards()).toEqual([
      { name: 'mem:0', start: 0, count: 2 },
      { name: 'mem:2', start: 2, count: 1 },
    ]);
    expect(await readAll(reader)).toEqual(['a', 'b', 'c']);
    expect(reader.metadata).toEqual({ columns: [{ name: 'item', type: 'string' }] });
    expect(reader.describe()).toEqual({
      type: `${join(dir, 'my-reader.mjs')}#default`,
      params: { items: ['a', 'b', 'c'], perShard: 2 },
    });
  });

  it('loads a named export (sync or async factory) and re-creates it from its description anywhere', async () => {
    const reader = await loadCustomReader('my-reader.mjs#upper'.replace(/^/, './'), '{"items":["x","y"]}', {
      cwd: dir,
    });
    expect(await readAll(reader)).toEqual(['X', 'Y']);
    // Another process has another cwd: the description names the module by absolute path.
    const again = await createDataReader(reader.describe(), {}, { cwd: tmpdir() });
    expect(await readAll(again)).toEqual(['X', 'Y']);
    expect(again.describe()).toEqual(reader.describe());
    const viaAsync = await loadCustomReader(`${join(dir, 'my-reader.mjs')}#asyncFactory`, '{"items":[1]}');
    expect(await readAll(viaAsync)).toEqual([1]);
  });

  it('is chosen by createDataReader through params.type, with the origin added to its params', async () => {
    const reader = await createDataReader('some-origin', {
      type: `${join(dir, 'my-reader.mjs')}`,
      items: ['q'],
    });
    expect(await readAll(reader)).toEqual(['q']);
    expect(reader.describe().params).toEqual({ items: ['q'], origin: 'some-origin' });
  });

  it('gives a clear error for each way loading can fail', async () => {
    const cwd = dir;
    await expect(loadCustomReader('./nope.mjs', '{}', { cwd })).rejects.toThrow(
      `READER_MODULE_NOT_FOUND: custom reader module "./nope.mjs" not found: no file ${join(dir, 'nope.mjs')}`,
    );
    await expect(loadCustomReader('edl-no-such-package-anywhere', '{}', { cwd })).rejects.toMatchObject({
      code: 'READER_MODULE_NOT_FOUND',
    });
    await expect(loadCustomReader('./broken.mjs', '{}', { cwd })).rejects.toMatchObject({
      code: 'READER_MODULE_FAILED',
      message: expect.stringContaining('edl-no-such-package-anywhere'),
    });
    await expect(loadCustomReader('./syntax.mjs', '{}', { cwd })).rejects.toMatchObject({
      code: 'READER_MODULE_FAILED',
    });
    await expect(loadCustomReader('./my-reader.mjs#missing', '{}', { cwd })).rejects.toThrow(
      'READER_EXPORT_NOT_FOUND: custom reader module "./my-reader.mjs#missing" has no export "missing"; ' +
        'it exports "asyncFactory", "default", "incomplete", "notAFunction", "upper"',
    );
    await expect(loadCustomReader('./my-reader.mjs#notAFunction', '{}', { cwd })).rejects.toThrow(
      'READER_EXPORT_NOT_FUNCTION: export "notAFunction" of custom reader module "./my-reader.mjs#notAFunction" is 42, ' +
        'not a reader factory function (params) => DataReader',
    );
    await expect(loadCustomReader('./my-reader.mjs#incomplete', '{}', { cwd })).rejects.toThrow(
      'NOT_A_DATA_READER: the factory "./my-reader.mjs#incomplete" returned {"metadata":{}}, which lacks readRecords(), ' +
        'describe(); a DataReader has createShards(), readRecords(range), describe() and a metadata object',
    );
    await expect(loadCustomReader('./my-reader.mjs', '{"items": [1,', { cwd })).rejects.toThrow(
      /^Expected a JSON object for --data-reader-params but received "\{\\"items\\": \[1,": /,
    );
    await expect(loadCustomReader('./my-reader.mjs', '[1, 2]', { cwd })).rejects.toThrow(
      new TypeError('Expected a JSON object for --data-reader-params but received "[1, 2]"'),
    );
    await expect(loadCustomReader('./my-reader.mjs#', '{}', { cwd })).rejects.toThrow(
      new TypeError(
        'Expected a module spec <module>[#export] for --data-reader but received "./my-reader.mjs#"',
      ),
    );
  });

  it('parses params as JSON only, never as code', () => {
    expect(parseReaderParams(undefined)).toEqual({});
    expect(parseReaderParams(' {"a": [1, {"b": null}]} ')).toEqual({ a: [1, { b: null }] });
    expect(() => parseReaderParams('{a: 1}')).toThrow(TypeError);
    expect(() => parseReaderParams('(() => ({}))()')).toThrow(TypeError);
  });
});
