import { decodeEmbeddingTable, type EmbeddingTableHeader, RowInitializer, shardPartsOf } from '@edl/ps';
import { byteSourceFor, type ObjectStat } from '@edl/storage';

/**
 * The default limit on one exported table's weights, 1 GiB of float32: the exported model holds
 * each table whole, and TensorFlow.js reads weights.bin into one ArrayBuffer.
 */
export const DEFAULT_MAX_TABLE_BYTES = 2 ** 30;

/** What the export needs of one embedding table: its rows, as the model's layers read them. */
export interface TableRequest {
  readonly name: string;
  readonly dim: number;
  /** The layers' `numBuckets` where every layer reading the table hashes its ids; else undefined. */
  readonly numBuckets: number | undefined;
  /** The layers reading the table, for errors. */
  readonly layers: readonly string[];
}

/** One table as a dense `[inputDim, dim]` matrix, row `id` at `values[id * dim ..]`. */
export interface DenseTable {
  readonly name: string;
  readonly dim: number;
  readonly inputDim: number;
  readonly values: Float32Array;
  /** Rows the shards had created; the others hold the initializer's value. */
  readonly rowsCreated: number;
}

const MAGIC_BYTES = 8;

/** One shard's table file or object, as the export reads it. */
interface TablePart {
  readonly file: string;
  readonly stat: ObjectStat;
  readonly header: EmbeddingTableHeader;
  readonly ids: Float64Array;
}

/** Reads `length` bytes at `position` of a table file, all of them or an error naming it. */
async function readExactly(stat: ObjectStat, file: string, position: number, length: number) {
  if (position + length > stat.size)
    throw new Error(`${file} ends after ${stat.size} bytes, inside its header or ids`);
  return (await byteSourceFor(file)).readRange(stat, position, length);
}

/**
 * The header and ids of one shard's table file or object (the `edl-embedding-table/1` layout),
 * without its records: enough to size the dense table before anything large is allocated.
 */
async function readHeaderAndIds(file: string): Promise<TablePart> {
  const stat = await (await byteSourceFor(file)).stat(file);
  const lead = await readExactly(stat, file, 0, MAGIC_BYTES + 4);
  const headerLength = new DataView(lead.buffer, lead.byteOffset, lead.byteLength).getUint32(
    MAGIC_BYTES,
    true,
  );
  const headerBytes = await readExactly(stat, file, MAGIC_BYTES + 4, headerLength);
  let header: EmbeddingTableHeader;
  try {
    header = JSON.parse(new TextDecoder().decode(headerBytes)) as EmbeddingTableHeader;
  } catch (error) {
    throw new Error(`${file} is not a readable embedding table: ${(error as Error).message}`);
  }
  if (!Number.isSafeInteger(header.rows) || header.rows < 0 || !Number.isInteger(header.dim))
    throw new Error(`${file} is not a readable embedding table: its header has no row count or dim`);
  const idsAt = Math.ceil((MAGIC_BYTES + 4 + headerLength) / 8) * 8;
  // A copy: the range read may sit at any offset of its buffer, and Float64Array needs 8-byte alignment.
  const ids = new Float64Array((await readExactly(stat, file, idsAt, 8 * header.rows)).slice().buffer);
  return { file, stat, header, ids };
}

/**
 * Reads the embedding tables of the checkpoint of `version` in `dir` (a directory, or an
 * object-store prefix) from its shard files (any number of shards) as dense matrices: `inputDim` is the hashed bucket count, or the largest id + 1
 * for a table with unhashed ids; rows the shards never created hold the initializer's value, the
 * value a shard gives an id it has no row for. A table whose matrix would exceed `maxTableBytes`
 * is an error naming it, before its matrix is allocated.
 */
export async function readDenseTables(
  dir: string,
  version: number,
  requests: readonly TableRequest[],
  maxTableBytes: number,
): Promise<DenseTable[]> {
  const { markers, locationOf } = await shardPartsOf(dir, version);
  const versionDir = locationOf('');
  const filesOf = new Map<string, string[]>();
  for (const marker of markers)
    for (const entry of marker.tables)
      filesOf.set(entry.name, [...(filesOf.get(entry.name) ?? []), locationOf(entry.file)]);
  const tables: DenseTable[] = [];
  for (const request of requests) {
    const files = filesOf.get(request.name);
    if (files === undefined)
      throw new Error(
        `The checkpoint's shard files in ${versionDir} hold no embedding table '${request.name}' (layers ${request.layers.map((l) => `'${l}'`).join(', ')}); they hold ${[...filesOf.keys()].map((n) => `'${n}'`).join(', ') || 'none'}`,
      );
    tables.push(await denseTable(request, files, maxTableBytes));
  }
  return tables;
}

async function denseTable(
  request: TableRequest,
  files: readonly string[],
  maxTableBytes: number,
): Promise<DenseTable> {
  const parts: TablePart[] = [];
  for (const file of files) parts.push(await readHeaderAndIds(file));
  let largestId = -1;
  let rows = 0;
  for (const { file, header, ids } of parts) {
    if (header.dim !== request.dim)
      throw new Error(
        `${file} holds table '${request.name}' with dim ${header.dim}, but layer '${request.layers[0]}' reads it with outputDim ${request.dim}`,
      );
    rows += ids.length;
    for (let i = 0; i < ids.length; i++) largestId = Math.max(largestId, ids[i] as number);
  }
  const inputDim = request.numBuckets ?? largestId + 1;
  if (largestId >= inputDim)
    throw new Error(
      `Embedding table '${request.name}' has a row for id ${largestId}, outside the ${inputDim} buckets its layers hash ids into`,
    );
  const bytes = inputDim * request.dim * 4;
  if (bytes > maxTableBytes)
    throw new Error(
      `Embedding table '${request.name}' does not fit in memory for export: ${inputDim} rows (${request.numBuckets === undefined ? `its largest id ${largestId} + 1` : 'its hashed buckets'}; ${rows} created) x ${request.dim} floats = ${bytes} bytes, above the limit of ${maxTableBytes} bytes. Raise the limit with --max-table-bytes where the machines that load the model have the memory`,
    );
  if (inputDim === 0)
    throw new Error(
      `Embedding table '${request.name}' has no rows in the checkpoint and no numBuckets: its input dimension is unknown, so it cannot be exported`,
    );
  const values = new Float32Array(inputDim * request.dim);
  const created = new Uint8Array(inputDim);
  const dim = request.dim;
  let first: EmbeddingTableHeader | undefined;
  for (const { file, stat, header } of parts) {
    first ??= header;
    const data = await (await byteSourceFor(file)).readRange(stat, 0, stat.size);
    const table = decodeEmbeddingTable(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), file);
    for (const view of table.slabViews()) {
      for (let r = 0; r < view.ids.length; r++) {
        const id = view.ids[r] as number;
        values.set(view.records.subarray(r * table.recordLength, r * table.recordLength + dim), id * dim);
        created[id] = 1;
      }
    }
  }
  const header = first as EmbeddingTableHeader;
  const initializer = new RowInitializer(header.seed, header.name, header.initializer);
  for (let id = 0; id < inputDim; id++) if (created[id] === 0) initializer.fill(id, values, id * dim, dim);
  return { name: request.name, dim, inputDim, values, rowsCreated: rows };
}
