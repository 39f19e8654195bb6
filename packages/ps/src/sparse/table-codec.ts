import { type OptimizerConfig, resolveOptimizerConfig } from '@edl/common';
import { EmbeddingTable } from './embedding-table.js';
import type { RowInitializerConfig } from './row-initializer.js';

/**
 * The binary layout of one embedding table with its optimizer state (documented in
 * packages/ps/README.md), all numbers little-endian:
 *
 * | bytes            | what                                                          |
 * | ---------------- | ------------------------------------------------------------- |
 * | 8                | magic `EDLEMB01`                                              |
 * | 4                | uint32 H, the header's length                                 |
 * | H                | header, UTF-8 JSON ({@link EmbeddingTableHeader})             |
 * | 0-7              | zeros, so that the ids start at a multiple of 8               |
 * | 8 x rows         | float64 ids, in slot order                                    |
 * | 4 x rows x R     | float32 records: `dim` weights, then each slot's `dim` floats |
 * | 4 x rows         | uint32 row update counts, only where `rowSteps` is true       |
 *
 * where R = `dim` x (1 + number of slots).
 */
export interface EmbeddingTableHeader {
  readonly format: typeof TABLE_FORMAT;
  readonly name: string;
  readonly dim: number;
  readonly seed: number;
  readonly initializer: RowInitializerConfig;
  readonly optimizer: OptimizerConfig;
  /** The optimizer's slots in record order; a check that the reader's kernel lays rows out alike. */
  readonly slots: readonly string[];
  readonly rows: number;
  readonly rowSteps: boolean;
}

const TABLE_FORMAT = 'edl-embedding-table/1';
const MAGIC = new TextEncoder().encode('EDLEMB01');
const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * Encodes `table` as the chunks of its binary layout, in order: write them one after the other (or
 * concatenate them). The row chunks are views of the table's own memory, not copies, so a table
 * near the size of the process's memory can still be written; write them before the table changes.
 */
export function encodeEmbeddingTable(table: EmbeddingTable): Uint8Array[] {
  if (!littleEndian) throw new Error('Embedding table checkpoints are written on little-endian hosts only');
  const header: EmbeddingTableHeader = {
    format: TABLE_FORMAT,
    name: table.name,
    dim: table.dim,
    seed: table.seed,
    initializer: table.initializer.config,
    optimizer: table.optimizer.config,
    slots: table.optimizer.slotNames,
    rows: table.rowCount,
    rowSteps: table.optimizer.countsRowSteps,
  };
  const json = new TextEncoder().encode(JSON.stringify(header));
  const lead = new Uint8Array(align8(MAGIC.length + 4 + json.length));
  lead.set(MAGIC, 0);
  new DataView(lead.buffer).setUint32(MAGIC.length, json.length, true);
  lead.set(json, MAGIC.length + 4);
  const views = [...table.slabViews()];
  const bytesOf = (a: Float64Array | Float32Array | Uint32Array) =>
    new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  return [
    lead,
    ...views.map((v) => bytesOf(v.ids)),
    ...views.map((v) => bytesOf(v.records)),
    ...views.flatMap((v) => (v.rowSteps ? [bytesOf(v.rowSteps)] : [])),
  ];
}

/** Options of {@link decodeEmbeddingTable}. */
export interface DecodeTableOptions {
  /**
   * Keeps only the rows whose id this accepts: restoring onto a different number of shards reads
   * each table file and keeps the ids `shardOfId` gives this shard.
   */
  readonly keepRow?: (id: number) => boolean;
  /** Rows per slab of the restored table (see `EmbeddingTableOptions.rowsPerSlab`). */
  readonly rowsPerSlab?: number;
}

/**
 * Decodes the layout of {@link encodeEmbeddingTable} into a new table. Every length is checked
 * before it is used; a file that is short, long, or inconsistent with its header is an error that
 * names `source` (a file name, say).
 */
export function decodeEmbeddingTable(
  bytes: Uint8Array,
  source: string,
  options: DecodeTableOptions = {},
): EmbeddingTable {
  if (!littleEndian) throw new Error('Embedding table checkpoints are read on little-endian hosts only');
  const fail = (why: string): never => {
    throw new Error(`${source} is not a readable embedding table: ${why}`);
  };
  if (bytes.length < MAGIC.length + 4 || MAGIC.some((b, i) => bytes[i] !== b))
    fail(`it does not start with ${new TextDecoder().decode(MAGIC)}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint32(MAGIC.length, true);
  if (MAGIC.length + 4 + headerLength > bytes.length)
    fail(`its header of ${headerLength} bytes runs past its end (${bytes.length} bytes)`);
  const header = parseHeader(bytes.subarray(MAGIC.length + 4, MAGIC.length + 4 + headerLength), fail);
  try {
    return readRows(bytes, MAGIC.length + 4 + headerLength, header, options);
  } catch (error) {
    return fail((error as Error).message);
  }
}

function readRows(
  bytes: Uint8Array,
  headerEnd: number,
  header: EmbeddingTableHeader,
  options: DecodeTableOptions,
): EmbeddingTable {
  const fail = (why: string): never => {
    throw new Error(why);
  };
  const table = new EmbeddingTable({
    name: header.name,
    dim: header.dim,
    seed: header.seed,
    optimizer: header.optimizer,
    initializer: header.initializer,
    ...(options.rowsPerSlab === undefined ? {} : { rowsPerSlab: options.rowsPerSlab }),
  });
  const slots = table.optimizer.slotNames;
  if (header.rowSteps !== table.optimizer.countsRowSteps || header.slots.join() !== slots.join())
    fail(
      `its slots [${header.slots.join(', ')}] are not those of the ${table.optimizer.config.type} optimizer`,
    );
  const rows = header.rows;
  const idsAt = align8(headerEnd);
  const recordsAt = idsAt + 8 * rows;
  const stepsAt = recordsAt + 4 * rows * table.recordLength;
  const end = stepsAt + (header.rowSteps ? 4 * rows : 0);
  if (end !== bytes.length) fail(`its header's ${rows} rows take ${end} bytes but it has ${bytes.length}`);
  // Copies, not views: the input need not be aligned for float64 and float32 reads.
  const ids = new Float64Array(bytes.slice(idsAt, recordsAt).buffer);
  const records = new Float32Array(bytes.slice(recordsAt, stepsAt).buffer);
  const rowSteps = header.rowSteps ? new Uint32Array(bytes.slice(stepsAt, end).buffer) : undefined;
  const keep = options.keepRow;
  if (keep === undefined) {
    table.restoreRows(ids, records, rowSteps);
    return table;
  }
  const kept: number[] = [];
  for (let i = 0; i < rows; i++) if (keep(ids[i] as number)) kept.push(i);
  const length = table.recordLength;
  const keptRecords = new Float32Array(kept.length * length);
  kept.forEach((row, k) => {
    keptRecords.set(records.subarray(row * length, (row + 1) * length), k * length);
  });
  table.restoreRows(
    Float64Array.from(kept, (row) => ids[row] as number),
    keptRecords,
    rowSteps && Uint32Array.from(kept, (row) => rowSteps[row] as number),
  );
  return table;
}

function parseHeader(json: Uint8Array, fail: (why: string) => never): EmbeddingTableHeader {
  let header: Partial<EmbeddingTableHeader>;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(json));
  } catch (error) {
    return fail(`its header is not UTF-8 JSON (${(error as Error).message})`);
  }
  if (header?.format !== TABLE_FORMAT)
    fail(`its format is ${JSON.stringify(header?.format)}, not ${TABLE_FORMAT}`);
  if (!Number.isSafeInteger(header.rows) || (header.rows as number) < 0)
    fail(`its row count ${JSON.stringify(header.rows)} is not a non-negative integer`);
  if (!Array.isArray(header.slots) || typeof header.rowSteps !== 'boolean')
    fail('its header lacks the slots or rowSteps fields');
  if (header.optimizer === undefined || header.initializer === undefined)
    fail('its header lacks the optimizer or initializer fields');
  // Resolving the optimizer here turns a bad config into this file's error, not a bare TypeError.
  try {
    resolveOptimizerConfig(header.optimizer as OptimizerConfig);
  } catch (error) {
    fail(`its optimizer is invalid (${(error as Error).message})`);
  }
  return header as EmbeddingTableHeader;
}

function align8(n: number): number {
  return Math.ceil(n / 8) * 8;
}
