import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { COMPRESSORS, type CompressorName, RecordIOWriter, uploadDataFile } from '@edl/recordio';
import { parseCommandLine } from '../args.js';
import type { CommandIO } from '../command.js';
import { isUrl } from '../job/job-options.js';
import { applyS3Options, S3_OPTION_SPEC, s3Options } from '../job/s3-options.js';
import { readLines } from './line-reader.js';
import { INPUT_FORMATS, type InputFormat, parseRecordLine } from './record-format.js';

/** Records are handed to the addon in batches of about this many bytes, not one call each. */
const BATCH_BYTES = 1 << 20;

/**
 * `edl recordio write OUT [--compressor none|snappy|gzip] [--max-chunk-bytes N]
 * [--format lines|hex|base64] [--s3-endpoint URL] [--s3-anonymous]`: one record per line of
 * standard input. A bad input line stops the command with an error naming the line, and the
 * incomplete OUT is removed. OUT may be `s3://bucket/key`: the file is written in a temporary
 * directory by the native writer, then uploaded through @edl/storage's sink (multipart above one
 * part), which leaves no object at all when anything fails, followed by its sidecar index `OUT.idx`.
 */
export async function write(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    {
      compressor: { type: 'choice', choices: COMPRESSORS },
      'max-chunk-bytes': { type: 'integer', min: 1 },
      'gzip-level': { type: 'integer', min: 1, max: 9 },
      format: { type: 'choice', choices: INPUT_FORMATS },
      ...S3_OPTION_SPEC,
    },
    ['OUT'],
  );
  const s3 = s3Options(values);
  const compressor = values.compressor ?? 'snappy';
  const maxChunkBytes = values['max-chunk-bytes'] ?? 1024 * 1024;
  const gzipLevel = values['gzip-level'] ?? 6;
  const format = values.format ?? 'lines';
  const out = positionals[0] as string;
  const settings: WriteSettings = { compressor, maxChunkBytes, gzipLevel, format };
  if (!isUrl(out)) {
    io.stderr.write(`${await writeFile(out, io, settings)} to ${out}\n`);
    return 0;
  }
  await applyS3Options(s3);
  const staging = await mkdtemp(path.join(tmpdir(), 'edl-recordio-write-'));
  try {
    const local = path.join(staging, path.posix.basename(out) || 'data.rio');
    const summary = await writeFile(local, io, settings);
    await uploadDataFile(local, out, 'recordio');
    io.stderr.write(`${summary} to ${out}\n`);
    return 0;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** How {@link writeFile} writes. */
interface WriteSettings {
  readonly compressor: CompressorName;
  readonly maxChunkBytes: number;
  readonly gzipLevel: number;
  readonly format: InputFormat;
}

/** Writes standard input's records to the local file `out`; resolves to what was written, in words. */
async function writeFile(
  out: string,
  io: CommandIO,
  { compressor, maxChunkBytes, gzipLevel, format }: WriteSettings,
): Promise<string> {
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
  return `wrote ${recordsWritten} records in ${chunksWritten} ${compressor} chunks (${bytesWritten} bytes)`;
}
