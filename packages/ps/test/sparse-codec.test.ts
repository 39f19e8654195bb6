import { type OptimizerConfig, SeededRandom } from '@edl/common';
import { describe, expect, it } from 'vitest';
import { EmbeddingTable } from '../src/sparse/embedding-table.js';
import { shardOfId } from '../src/sparse/placement.js';
import { decodeEmbeddingTable, encodeEmbeddingTable } from '../src/sparse/table-codec.js';

function concat(chunks: Uint8Array[]): Uint8Array {
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}

/** A table trained for a few steps on random ids in [0, 500) (some of them above 2^32). */
function trainedTable(optimizer: OptimizerConfig, rowsPerSlab = 64): EmbeddingTable {
  const table = new EmbeddingTable({ name: 'ads', dim: 3, seed: 5, optimizer, rowsPerSlab });
  const random = new SeededRandom(2);
  for (let step = 0; step < 20; step++) {
    const ids = Float64Array.from(
      { length: 30 },
      () => random.int(500) * (random.next() < 0.2 ? 2 ** 33 : 1),
    );
    table.pull(ids);
    table.push(
      ids,
      Float32Array.from({ length: 90 }, () => random.normal()),
    );
  }
  return table;
}

/** Every row's id, record (weights and slots) and step, in slot order. */
function contents(table: EmbeddingTable): Map<number, { record: number[]; step: number }> {
  const rows = new Map<number, { record: number[]; step: number }>();
  for (const view of table.slabViews()) {
    view.ids.forEach((id, i) => {
      const record = Array.from(view.records.subarray(i * table.recordLength, (i + 1) * table.recordLength));
      rows.set(id, { record, step: view.rowSteps?.[i] ?? 0 });
    });
  }
  return rows;
}

const configs: OptimizerConfig[] = [
  { type: 'sgd' },
  { type: 'momentum', nesterov: true },
  { type: 'adagrad', learningRate: 0.1 },
  { type: 'adam', learningRate: 0.01, beta1: 0.8 },
];

describe('embedding table checkpoints', () => {
  for (const optimizer of configs) {
    it(`round-trip rows, slots and row steps (${optimizer.type}), and training goes on identically`, () => {
      const table = trainedTable(optimizer);
      const chunks = encodeEmbeddingTable(table);
      const bytes = concat(chunks);
      const headerLength = new DataView(bytes.buffer).getUint32(8, true);
      // magic, length, header padded to 8; then ids, records and (Adam only) row steps.
      const expectedLength =
        Math.ceil((12 + headerLength) / 8) * 8 +
        table.rowCount * (8 + 4 * table.recordLength + (table.optimizer.countsRowSteps ? 4 : 0));
      expect(bytes.length).toBe(expectedLength);
      // An unaligned copy: the decoder must not need aligned input.
      const shifted = new Uint8Array(bytes.length + 1).subarray(1);
      shifted.set(bytes);
      const restored = decodeEmbeddingTable(shifted, 'ads.table', { rowsPerSlab: 16 });
      expect(restored.rowCount).toBe(table.rowCount);
      expect(restored.optimizer.config).toEqual(table.optimizer.config);
      expect(restored.initializer.config).toEqual(table.initializer.config);
      expect(contents(restored)).toEqual(contents(table));
      const ids = new Float64Array([7, 7 * 2 ** 33, 12345]);
      const grads = new Float32Array([1, 2, 3, -1, -2, -3, 0.5, 0.5, 0.5]);
      table.push(ids, grads);
      restored.push(ids, grads);
      expect(restored.lookup(ids)).toEqual(table.lookup(ids));
    });
  }

  it('an empty table round-trips', () => {
    const table = new EmbeddingTable({ name: 'e', dim: 2, seed: -9, optimizer: { type: 'adam' } });
    const restored = decodeEmbeddingTable(concat(encodeEmbeddingTable(table)), 'e.table');
    expect(restored.rowCount).toBe(0);
    expect(restored.seed).toBe(-9);
  });

  it('re-shards: each shard keeps the rows shardOfId gives it, and together they hold every row once', () => {
    const table = trainedTable({ type: 'adam' });
    const bytes = concat(encodeEmbeddingTable(table));
    const all = contents(table);
    const shards = [0, 1, 2].map((s) =>
      decodeEmbeddingTable(bytes, 'ads.table', { keepRow: (id) => shardOfId(id, 3) === s }),
    );
    expect(shards.reduce((n, t) => n + t.rowCount, 0)).toBe(table.rowCount);
    shards.forEach((shard, s) => {
      expect(shard.rowCount).toBeGreaterThan(0);
      for (const [id, row] of contents(shard)) {
        expect(shardOfId(id, 3)).toBe(s);
        expect(row).toEqual(all.get(id));
      }
    });
  });

  it('rejects a file that is cut short, too long, not a table, or inconsistent, naming it', () => {
    const bytes = concat(encodeEmbeddingTable(trainedTable({ type: 'momentum' })));
    expect(() => decodeEmbeddingTable(bytes.subarray(0, bytes.length - 1), 'a.table')).toThrow(
      /^a\.table is not a readable embedding table: its header's \d+ rows take \d+ bytes but it has \d+$/,
    );
    expect(() => decodeEmbeddingTable(concat([bytes, new Uint8Array(4)]), 'a.table')).toThrow(/rows take/);
    expect(() => decodeEmbeddingTable(new TextEncoder().encode('not a table'), 'b.table')).toThrow(
      'b.table is not a readable embedding table: it does not start with EDLEMB01',
    );
    const huge = bytes.slice();
    new DataView(huge.buffer).setUint32(8, 0xffffff00, true);
    expect(() => decodeEmbeddingTable(huge, 'c.table')).toThrow(
      /header of 4294967040 bytes runs past its end/,
    );
    // A header whose slots are not its optimizer's, or whose optimizer is invalid.
    const headerLength = new DataView(bytes.buffer).getUint32(8, true);
    const header = new TextDecoder().decode(bytes.subarray(12, 12 + headerLength));
    const edit = (from: string, to: string) => {
      const edited = bytes.slice();
      edited.set(new TextEncoder().encode(header.replace(from, to)), 12);
      return edited;
    };
    expect(() => decodeEmbeddingTable(edit('["momentum"]', '["velocity"]'), 'd.table')).toThrow(
      'd.table is not a readable embedding table: its slots [velocity] are not those of the momentum optimizer',
    );
    expect(() => decodeEmbeddingTable(edit('"type":"momentum"', '"type":"sgd"     '), 'e.table')).toThrow(
      /^e\.table is not a readable embedding table: its optimizer is invalid \(Expected one of 'learningRate'/,
    );
  });

  it('rejects a file whose ids repeat', () => {
    const table = new EmbeddingTable({ name: 'r', dim: 1, seed: 1, optimizer: { type: 'sgd' } });
    table.pull(new Float64Array([4, 6]));
    const bytes = concat(encodeEmbeddingTable(table));
    const view = new DataView(bytes.buffer);
    const idsAt = bytes.length - 2 * 8 - 2 * 4;
    view.setFloat64(idsAt + 8, 4, true);
    expect(() => decodeEmbeddingTable(bytes, 'r.table')).toThrow(
      "r.table is not a readable embedding table: Row 4 of embedding table 'r' is restored twice",
    );
  });
});
