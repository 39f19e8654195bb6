import { type TFRecordCompression, TFRecordError, TFRecordReader } from '@edl/recordio';
import { parseCommandLine } from '../args.js';
import type { CommandIO } from '../command.js';
import { COMPRESSION_CHOICES } from './compression-choice.js';

/** What `edl tfrecord inspect --json` prints. */
export interface TFRecordInspectReport {
  readonly path: string;
  readonly fileSize: number;
  readonly compression: TFRecordCompression;
  /** Records readable (before any damage). */
  readonly records: number;
  /** Whether the file can be read at random (uncompressed). */
  readonly seekable: boolean;
  /** The damage that ends the readable part, or null. */
  readonly damage: {
    readonly code: string;
    readonly record: number | null;
    readonly offset: number | null;
    readonly message: string;
  } | null;
}

/**
 * `edl tfrecord inspect FILE [--json] [--verify] [--compression auto|none|gzip|zlib]`: the record
 * count and storage, from a scan of the record headers (uncompressed files) or one decompressing
 * pass (GZIP/ZLIB, which checks every CRC). `--verify` also checks every record's data CRC of an
 * uncompressed file. Exit status 1 when the file is damaged.
 */
export async function inspect(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    {
      json: { type: 'boolean' },
      verify: { type: 'boolean' },
      compression: { type: 'choice', choices: COMPRESSION_CHOICES },
    },
    ['FILE'],
  );
  const compression = values.compression ?? 'auto';
  const reader = await TFRecordReader.open(positionals[0] as string, { compression });
  try {
    let fault = reader.tailFault();
    let records = reader.numRecords;
    if (fault === undefined && values.verify === true && reader.seekable) {
      let read = 0;
      try {
        for await (const batch of reader.batches()) {
          read += batch.length;
          batch.release();
        }
      } catch (error) {
        if (!(error instanceof TFRecordError)) throw error;
        fault = error;
        records = error.record ?? read;
      }
    }
    const report: TFRecordInspectReport = {
      path: reader.path,
      fileSize: reader.fileSize,
      compression: reader.compression,
      records,
      seekable: reader.seekable,
      damage:
        fault === undefined
          ? null
          : {
              code: fault.code,
              record: fault.record ?? null,
              offset: fault.offset ?? null,
              message: fault.message,
            },
    };
    io.stdout.write(values.json === true ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    if (fault !== undefined) {
      io.stderr.write(`edl tfrecord: ${fault.message}\n`);
      return 1;
    }
    return 0;
  } finally {
    reader.close();
  }
}

function formatReport(r: TFRecordInspectReport): string {
  return [
    `file         ${r.path}`,
    `size         ${r.fileSize} bytes`,
    `compression  ${r.compression}${r.seekable ? '' : ' (read in order only)'}`,
    `records      ${r.records}`,
    ...(r.damage === null ? [] : [`damage       ${r.damage.message}`]),
    '',
  ].join('\n');
}
