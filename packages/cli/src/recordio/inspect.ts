import { type ChunkInfo, RecordIOReader } from '@edl/recordio';
import { parseCommandLine } from '../args.js';
import type { CommandIO } from '../command.js';

/** Bytes of a chunk header (RecordIO: magic, CRC, compressor, size, records; 4 bytes each). */
const HEADER_BYTES = 20;

/** Everything `inspect --json` prints: what the chunk headers say, without decoding a payload. */
export interface InspectReport {
  readonly path: string;
  readonly fileSize: number;
  readonly numRecords: number;
  readonly numChunks: number;
  /** Chunks per compressor name (an unknown id appears as its number). */
  readonly compressors: Record<string, number>;
  /** Sum of the stored payload bytes that the file holds (a truncated chunk counts what is left). */
  readonly payloadBytes: number;
  readonly chunks: readonly ChunkInfo[];
  /**
   * The fault at the end of the file, or null: a damaged header after the last good chunk (the
   * index stops there; `chunk` is `numChunks`), or a last chunk whose payload runs past the end of
   * the file (`chunk` is that chunk, listed in `chunks`).
   */
  readonly damage: {
    readonly code: string;
    readonly chunk: number | null;
    readonly offset: number | null;
    readonly message: string;
  } | null;
  /** With --verify: what decoding every chunk found. */
  readonly verified?: VerifyReport;
}

/** The result of decoding every chunk (`inspect --verify`). */
export interface VerifyReport {
  /** Records that decoded. */
  readonly records: number;
  /** Chunks that did not decode, with the records they hold. */
  readonly badChunks: readonly {
    readonly chunk: number;
    readonly code: string;
    readonly offset: number | null;
    readonly records: number;
    readonly message: string;
  }[];
}

/**
 * `edl recordio inspect FILE [--json] [--verify]`: chunks, records, compressors, sizes, from the
 * chunk headers alone; `--verify` also decodes every chunk (CRCs, decompression, record framing)
 * and lists the damaged ones. Exit status 1 when anything is damaged.
 */
export async function inspect(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    { json: { type: 'boolean' }, verify: { type: 'boolean' } },
    ['FILE'],
  );
  const reader = await RecordIOReader.open(positionals[0] as string, { onCorruptChunk: 'skip' });
  try {
    const headers = buildReport(reader);
    const report = values.verify === true ? { ...headers, verified: await verify(reader) } : headers;
    io.stdout.write(values.json === true ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    if (report.damage !== null) {
      const { chunk, message } = report.damage;
      // A truncated chunk's message says so itself; a bad header ends the index early.
      const what = chunk !== null && chunk < report.numChunks ? '' : 'the chunk index stops early: ';
      io.stderr.write(`edl recordio: ${what}${message}\n`);
      return 1;
    }
    const bad = report.verified?.badChunks ?? [];
    if (bad.length > 0) {
      const lost = bad.reduce((n, c) => n + c.records, 0);
      io.stderr.write(
        `edl recordio: ${bad.length} damaged chunk(s), ${lost} records lost, in ${reader.path}\n`,
      );
      return 1;
    }
  } finally {
    reader.close();
  }
  return 0;
}

/** Decodes every chunk in skip mode and collects what could not be read. */
async function verify(reader: RecordIOReader): Promise<VerifyReport> {
  let records = 0;
  for await (const batch of reader.batches()) records += batch.length;
  const badChunks = reader.skipped.faults
    // A damaged tail is reported as `damage` already (a truncated chunk is listed here too, with
    // the records it loses).
    .filter((f) => f.chunk !== undefined && f.chunk < reader.numChunks)
    .map((f) => ({
      chunk: f.chunk as number,
      code: f.code,
      offset: f.offset ?? null,
      records: f.records ?? 0,
      message: f.message,
    }));
  return { records, badChunks };
}

function buildReport(reader: RecordIOReader): InspectReport {
  const compressors: Record<string, number> = {};
  let payloadBytes = 0;
  for (const chunk of reader.chunks) {
    const key = String(chunk.compressor);
    compressors[key] = (compressors[key] ?? 0) + 1;
    // Only what the file holds: a header can promise more than is left.
    payloadBytes += Math.min(
      chunk.compressedSize,
      Math.max(reader.fileSize - chunk.offset - HEADER_BYTES, 0),
    );
  }
  const fault = reader.tailFault();
  return {
    path: reader.path,
    fileSize: reader.fileSize,
    numRecords: reader.numRecords,
    numChunks: reader.numChunks,
    compressors,
    payloadBytes,
    chunks: reader.chunks,
    damage:
      fault === undefined
        ? null
        : {
            code: fault.code,
            chunk: fault.chunk ?? null,
            offset: fault.offset ?? null,
            message: fault.message,
          },
  };
}

function formatReport(report: InspectReport): string {
  const mix = Object.entries(report.compressors)
    .map(([name, n]) => `${name}: ${n}`)
    .join(', ');
  const lines = [
    `file      ${report.path}`,
    `size      ${report.fileSize} bytes`,
    `records   ${report.numRecords}`,
    `chunks    ${report.numChunks}${mix === '' ? '' : ` (${mix})`}`,
    `payloads  ${report.payloadBytes} bytes stored`,
  ];
  if (report.damage !== null) lines.push(`damaged   ${report.damage.message}`);
  if (report.verified !== undefined) {
    const { records, badChunks } = report.verified;
    lines.push(
      badChunks.length === 0
        ? `verified  ${records} records decoded, every chunk intact`
        : `verified  ${records} of ${report.numRecords} records decoded; ${badChunks.length} damaged chunk(s):`,
      ...badChunks.map((c) => `  ${c.message} (${c.records} records lost)`),
    );
  }
  if (report.chunks.length > 0) {
    const cut = report.damage?.chunk ?? null;
    const header = ['chunk', 'offset', 'compressor', 'stored', 'records', 'first'];
    const rows = report.chunks.map((c) => [
      ...[c.index, c.offset, c.compressor, c.compressedSize, c.numRecords, c.firstRecord].map(String),
      ...(c.index === cut
        ? [`TRUNCATED: ${report.fileSize - c.offset - HEADER_BYTES} bytes in the file`]
        : []),
    ]);
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
    widths.push(0);
    const render = (cells: string[]) =>
      cells
        .map((cell, i) => (i === 2 ? cell.padEnd(widths[i] as number) : cell.padStart(widths[i] as number)))
        .join('  ');
    lines.push('', render(header), ...rows.map(render));
  }
  return `${lines.join('\n')}\n`;
}
