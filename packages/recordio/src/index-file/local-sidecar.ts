import { open } from 'node:fs/promises';
import { RecordIOError } from '../errors.js';
import { RecordIOReader } from '../reader.js';
import { TFRecordReader } from '../tfrecord/tfrecord-reader.js';
import {
  BLOCK_HEADER_BYTES,
  recordioSidecarIndex,
  type SidecarIndex,
  sidecarCheck,
  tfrecordRecordsPerBlock,
  tfrecordSidecarIndex,
} from './sidecar-index.js';

/**
 * Builds the sidecar index of a local, undamaged data file: RecordIO from its chunk headers,
 * uncompressed TFRecord from its record headers (every `recordsPerBlock`-th offset kept).
 *
 * @throws RecordIOError / TFRecordError for a damaged file (its index would hide the damage), and
 * TFRecordError `NOT_SEEKABLE` for a GZIP/ZLIB TFRecord file, which has no offsets to index.
 */
export async function buildLocalSidecarIndex(
  path: string,
  format: 'recordio' | 'tfrecord',
): Promise<SidecarIndex> {
  if (format === 'recordio') {
    const reader = await RecordIOReader.open(path);
    try {
      const fault = reader.tailFault();
      if (fault !== undefined) throw fault;
      const { chunks } = reader;
      const check = await headerCheck(path, 'recordio', chunks[0]?.offset, chunks[chunks.length - 1]?.offset);
      return recordioSidecarIndex(chunks, reader.fileSize, check);
    } finally {
      reader.close();
    }
  }
  const reader = await TFRecordReader.open(path);
  try {
    const fault = reader.tailFault();
    if (fault !== undefined) throw fault;
    const { numRecords, fileSize } = reader;
    // recordOffset throws NOT_SEEKABLE, naming the file, for a compressed one.
    reader.recordOffset(0);
    const perBlock = tfrecordRecordsPerBlock(fileSize, numRecords);
    const offsets: number[] = [];
    for (let record = 0; record < numRecords; record += perBlock) offsets.push(reader.recordOffset(record));
    const check = await headerCheck(path, 'tfrecord', offsets[0], offsets[offsets.length - 1]);
    return tfrecordSidecarIndex(offsets, numRecords, perBlock, fileSize, check);
  } finally {
    reader.close();
  }
}

/** {@link sidecarCheck} of a local file's first and last block headers (an empty file: nothing). */
export async function headerCheck(
  path: string,
  format: 'recordio' | 'tfrecord',
  first: number | undefined,
  last: number | undefined,
): Promise<number> {
  const length = BLOCK_HEADER_BYTES[format];
  if (first === undefined || last === undefined) return sidecarCheck(new Uint8Array(0), new Uint8Array(0));
  const file = await open(path, 'r');
  try {
    const read = async (offset: number): Promise<Uint8Array> => {
      const bytes = new Uint8Array(length);
      const { bytesRead } = await file.read(bytes, 0, length, offset);
      if (bytesRead < length) {
        throw new RecordIOError('TRUNCATED', 'the file ends inside a header it had when indexed', {
          path,
          offset,
        });
      }
      return bytes;
    };
    return sidecarCheck(await read(first), await read(last));
  } finally {
    await file.close();
  }
}
