import { describe, expect, it } from 'vitest';
import { EmbeddingTable, type EmbeddingTableOptions } from '../src/sparse/embedding-table.js';
import { MAX_ROW_ID } from '../src/sparse/id-hash.js';

const options = (more: Partial<EmbeddingTableOptions> = {}): EmbeddingTableOptions => ({
  name: 'user',
  dim: 8,
  seed: 42,
  optimizer: { type: 'sgd', learningRate: 0.1 },
  ...more,
});
const range = (n: number, from = 0) => Float64Array.from({ length: n }, (_, i) => from + i);

describe('EmbeddingTable rows', () => {
  it('depend only on (seed, table name, id): not on creation order, slab size or shard', () => {
    const ids = range(300, 1000);
    const inOrder = new EmbeddingTable(options({ rowsPerSlab: 16 }));
    const reversed = new EmbeddingTable(options());
    const rowsInOrder = inOrder.pull(ids);
    reversed.pull(ids.slice().reverse());
    // One row alone, as a shard holding only that row would create it.
    const alone = new EmbeddingTable(options());
    for (let i = 0; i < ids.length; i += 37) {
      const id = ids[i] as number;
      expect(reversed.readRow(id)).toEqual(rowsInOrder.subarray(i * 8, (i + 1) * 8));
      expect(alone.pull(ids.subarray(i, i + 1))).toEqual(rowsInOrder.subarray(i * 8, (i + 1) * 8));
    }
    const otherSeed = new EmbeddingTable(options({ seed: 43 })).pull(ids);
    const otherName = new EmbeddingTable(options({ name: 'item' })).pull(ids);
    expect(otherSeed).not.toEqual(rowsInOrder);
    expect(otherName).not.toEqual(rowsInOrder);
  });

  it('are distinct for ids that differ only above bit 32, up to 2^53 - 1', () => {
    const table = new EmbeddingTable(options());
    const ids = new Float64Array([5, 5 + 2 ** 32, 5 + 2 ** 45, MAX_ROW_ID, MAX_ROW_ID - 1]);
    const rows = table.pull(ids);
    const asText = new Set(Array.from(ids, (_, i) => rows.subarray(i * 8, (i + 1) * 8).join()));
    expect(asText.size).toBe(ids.length);
    expect(table.rowCount).toBe(ids.length);
  });

  it('start uniform in [-scale, scale) or normal with the stated standard deviation', () => {
    const ids = range(4000);
    const uniform = new EmbeddingTable(options({ initializer: { type: 'uniform', scale: 0.5 } })).lookup(ids);
    const normal = new EmbeddingTable(options({ initializer: { type: 'normal', stddev: 2 } })).lookup(ids);
    const stats = (values: Float32Array) => {
      let sum = 0;
      let squares = 0;
      for (const v of values) {
        sum += v;
        squares += v * v;
      }
      const mean = sum / values.length;
      return { mean, std: Math.sqrt(squares / values.length - mean * mean) };
    };
    expect(Math.min(...uniform)).toBeGreaterThanOrEqual(-0.5);
    expect(Math.max(...uniform)).toBeLessThan(0.5);
    // 32,000 draws: the mean is within 4 standard errors of 0, the spread within 2% of its value.
    expect(Math.abs(stats(uniform).mean)).toBeLessThan((4 * 0.5) / Math.sqrt(3 * 32000));
    expect(stats(uniform).std).toBeCloseTo(0.5 / Math.sqrt(3), 2);
    expect(Math.abs(stats(normal).mean)).toBeLessThan((4 * 2) / Math.sqrt(32000));
    expect(Math.abs(stats(normal).std - 2)).toBeLessThan(0.04);
  });

  it('lookup creates nothing and reads an unknown id as the value its first pull gives it', () => {
    const table = new EmbeddingTable(options());
    const ids = new Float64Array([8, 9]);
    const looked = table.lookup(ids);
    expect(table.rowCount).toBe(0);
    expect(table.has(8)).toBe(false);
    expect(table.pull(ids)).toEqual(looked);
    expect(table.rowCount).toBe(2);
    table.push(new Float64Array([8]), new Float32Array(8).fill(1));
    const trained = table.lookup(ids);
    expect(trained.subarray(0, 8)).not.toEqual(looked.subarray(0, 8));
    expect(trained.subarray(8)).toEqual(looked.subarray(8));
  });

  it('push creates a row it has not seen, from the value a pull would have given', () => {
    const table = new EmbeddingTable(options());
    const before = table.lookup(new Float64Array([77]));
    table.push(new Float64Array([77]), new Float32Array(8).fill(2));
    expect(table.readRow(77)).toEqual(before.map((v) => Math.fround(v - 0.1 * 2)));
  });

  it('keeps rows across slab boundaries and counts rows and bytes', () => {
    const table = new EmbeddingTable(options({ rowsPerSlab: 128, optimizer: { type: 'adam' } }));
    expect(table.allocatedBytes).toBe(0);
    const ids = range(300, 5);
    const first = table.pull(ids);
    expect(table.rowCount).toBe(300);
    // Two full slabs of 128 rows and the last one grown from 64 rows only as far as needed (44 rows
    // fit in 64); each row is 8 x 3 floats, an id and a step.
    expect(table.allocatedBytes).toBe((128 + 128 + 64) * (8 * 3 * 4 + 8 + 4));
    table.push(ids, new Float32Array(300 * 8).fill(1));
    const second = table.pull(ids);
    for (let i = 0; i < 300; i++) {
      expect(table.rowStep(ids[i] as number)).toBe(1);
      expect(second[i * 8]).not.toBe(first[i * 8]);
    }
    const views = [...table.slabViews()];
    expect(views.map((v) => v.ids.length)).toEqual([128, 128, 44]);
    expect(Array.from(views.flatMap((v) => Array.from(v.ids)))).toEqual(Array.from(ids));
  });

  it('names the table and the id in errors, and a bad push changes nothing', () => {
    const table = new EmbeddingTable(options());
    for (const bad of [-1, 1.5, Number.NaN, 2 ** 53])
      expect(() => table.pull(new Float64Array([bad]))).toThrow(
        `Expected an integer in [0, ${MAX_ROW_ID}] for id 0 of embedding table 'user' but received ${bad}`,
      );
    table.pull(new Float64Array([1]));
    const row = table.readRow(1);
    expect(() => table.push(new Float64Array([1, -3]), new Float32Array(16))).toThrow(
      /id 1 of embedding table 'user'/,
    );
    expect(table.readRow(1)).toEqual(row);
    expect(() => table.push(new Float64Array([1]), new Float32Array(7))).toThrow(
      "Expected 1 x 8 = 8 gradient values for the 1 ids pushed to embedding table 'user' but received 7",
    );
    expect(() => table.pull(new Float64Array([1]), new Float32Array(3))).toThrow(
      /output of 1 x 8 = 8 floats/,
    );
    expect(() => new EmbeddingTable(options({ rowsPerSlab: 100 }))).toThrow(
      'Expected a power of two for options.rowsPerSlab but received 100',
    );
    expect(() => new EmbeddingTable(options({ optimizer: { type: 'rmsprop' } as never }))).toThrow(
      /optimizer\.type/,
    );
  });
});
