import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { checkInteger, checkNonEmptyString } from '@edl/common';
import { type TFRecordCompression, TFRecordWriter } from '@edl/recordio';
import type { GeneratedFiles } from '../cifar10/synthetic.js';

/** Where and how {@link writeShardedTfRecords} writes. */
export interface ShardedTfRecordsOptions {
  /** Directory to write into (created when missing). */
  readonly dir: string;
  /** Records in all (default: the generator's). */
  readonly records?: number;
  /** Files to spread them over (default 2). */
  readonly files?: number;
  /** How the files are stored (default none). */
  readonly compression?: TFRecordCompression;
  /** File name prefix (default: the generator's). */
  readonly prefix?: string;
}

/**
 * Spreads `records` records over `files` TFRecord files named `<prefix>-00000-of-00002.tfrecord`
 * as TensorFlow's sharded writers name them (`.gz`/`.zz` appended when compressed), the first files
 * one record shorter where they do not divide evenly. `writeRecords(writer, count, first)` writes
 * `count` records, the first being record number `first` of all.
 */
export async function writeShardedTfRecords(
  options: ShardedTfRecordsOptions,
  defaults: { readonly records: number; readonly prefix: string },
  writeRecords: (writer: TFRecordWriter, count: number, first: number) => void,
): Promise<GeneratedFiles> {
  const dir = checkNonEmptyString(options.dir, 'options.dir');
  const total = checkInteger(options.records ?? defaults.records, 'options.records', 1);
  const fileCount = checkInteger(options.files ?? 2, 'options.files', 1);
  const compression = options.compression ?? 'none';
  const prefix = options.prefix ?? defaults.prefix;
  mkdirSync(dir, { recursive: true });
  const suffix = compression === 'gzip' ? '.gz' : compression === 'zlib' ? '.zz' : '';
  const files: { path: string; records: number }[] = [];
  let written = 0;
  for (let f = 0; f < fileCount; f++) {
    const n = Math.floor((total * (f + 1)) / fileCount) - written;
    const name = `${prefix}-${String(f).padStart(5, '0')}-of-${String(fileCount).padStart(5, '0')}.tfrecord${suffix}`;
    const file = path.join(dir, name);
    const writer = TFRecordWriter.create(file, { compression });
    writeRecords(writer, n, written);
    await writer.close();
    files.push({ path: file, records: n });
    written += n;
  }
  return { files, records: written };
}
