import { rmSync } from 'node:fs';
import { COMPRESSORS, RecordIOWriter } from '@edl/recordio';
import { parseCommandLine } from '../args.js';
import type { CommandIO } from '../command.js';
import { readLines } from './line-reader.js';
import { INPUT_FORMATS, parseRecordLine } from './record-format.js';

/** Records are handed to the addon in batches of about this many bytes, not one call each. */
const BATCH_BYTES = 1 << 20;

/**
 * `edl recordio write OUT [--compressor none|snappy|gzip] [--max-chunk-bytes N]
 * [--format lines|hex|base64]`: one record per line of standard input. A bad input line stops the
 * command with an error naming the line, and the incomplete OUT is removed.
 */
export async function write(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    {
      compressor: { type: 'choice', choices: COMPRESSORS },
      'max-chunk-bytes': { type: 'integer', min: 1 },
      'gzip-level': { type: 'integer', min: 1, max: 9 },
      format: { type: 'choice', choices: INPUT_FORMATS },
    },
    ['OUT'],
  );
  const compressor = values.compressor ?? 'snappy';
  const maxChunkBytes = values['max-chunk-bytes'] ?? 1024 * 1024;
  const gzipLevel = values['gzip-level'] ?? 6;
  const format = values.format ?? 'lines';
  const out = positionals[0] as string;

  const writer = await RecordIOWriter.create(out, { compressor, maxChunkBytes, gzipLevel });
  try {
    let batch: Uint8Array[] = [];
    let batchBytes = 0;
    let lineNumber = 0;
    for await (const line of readLines(io.stdin as AsyncIterable<Buffer>)) {
      const record = parseRecordLine(line, format, ++lineNumber);
      batch.push(record);
      batchBytes += record.length;
      if (batchBytes >= BATCH_BYTES) {
        writer.writeBatch(batch);
        batch = [];
        batchBytes = 0;
      }
    }
    writer.writeBatch(batch);
    writer.close();
  } catch (error) {
    try {
      writer.close();
    } finally {
      rmSync(out, { force: true });
    }
    throw error;
  }
  const { recordsWritten, chunksWritten, bytesWritten } = writer.stats;
  io.stderr.write(
    `wrote ${recordsWritten} records in ${chunksWritten} ${compressor} chunks (${bytesWritten} bytes) to ${out}\n`,
  );
  return 0;
}
