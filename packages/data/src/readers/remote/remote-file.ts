import {
  type BatchRecycler,
  decodeRecordIORange,
  decodeTFRecordRange,
  RecordBatch,
  type RecordIOError,
  type SidecarIndex,
  TFRecordError,
} from '@edl/recordio';
import type { ByteSource, ObjectStat } from '@edl/storage';
import type { RemoteIndexReport } from './remote-index.js';

/** Bytes of the data CRC after a TFRecord record's data. */
const DATA_CRC_BYTES = 4;

/** Memory a decode may reuse, and where its batch's {@link RecordBatch.release} hands it back. */
export interface DecodeBuffers {
  /** RecordIO: buffers of released batches to decode into. */
  readonly reuse?: { readonly data?: ArrayBuffer; readonly bounds?: ArrayBuffer };
  /**
   * Takes the batch's buffers back on release: RecordIO's decoded buffers; TFRecord's records are
   * views into `bytes`, so its recycler takes the fetched buffer.
   */
  readonly recycle?: BatchRecycler;
}

/** Requests and bytes one remote file cost, and how it was indexed. */
export interface RemoteFileStats {
  readonly location: string;
  readonly index: RemoteIndexReport;
  /** Ranged GETs of data (retries, which the byte source counts, not included). */
  readonly dataRequests: number;
  /** Bytes of data asked for by those GETs. */
  readonly dataBytes: number;
  /** Corrupt chunks passed over (RecordIO with `onCorruptChunk: 'skip'`). */
  readonly skippedChunks: number;
}

/** The counters of an opened remote object, as plain data. */
export function remoteFileStats(
  file: {
    readonly location: string;
    readonly indexReport: RemoteIndexReport;
    readonly dataRequests: number;
    readonly dataBytes: number;
  },
  skippedChunks: number,
): RemoteFileStats {
  const { location, indexReport: index, dataRequests, dataBytes } = file;
  return { location, index, dataRequests, dataBytes, skippedChunks };
}

/**
 * A remote object opened for reading: its index (chunks or blocks of frames), the byte source
 * that reads it, pinned to the version it was stat'ed at, and its counters. It holds no connection
 * or descriptor: closing it is a no-op.
 */
export class RemoteFile {
  readonly numRecords: number;
  dataRequests = 0;
  dataBytes = 0;
  skippedChunks = 0;

  constructor(
    readonly source: ByteSource,
    readonly object: ObjectStat,
    readonly index: SidecarIndex,
    readonly indexReport: RemoteIndexReport,
  ) {
    this.numRecords = index.numRecords;
  }

  get location(): string {
    return this.object.location;
  }

  /** Index of the block holding `record` (which must be below `numRecords`). */
  blockOf(record: number): number {
    const { blocks } = this.index;
    let lo = 0;
    let hi = blocks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if ((blocks[mid]?.firstRecord ?? 0) <= record) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /**
   * Decodes records `[start, end)` (clipped to the blocks) from `bytes`, which hold blocks
   * `first..last` whole, natively and off the event loop for large ranges: RecordIO through
   * `decodeRecordIORange` against the index's chunk table (a header that differs from the index
   * fails naming the chunk), TFRecord through `decodeTFRecordRange` (both CRCs of every frame),
   * checking that the frames end where the index says. `buffers` lets a long read reuse memory.
   */
  async decode(
    bytes: Uint8Array,
    first: number,
    last: number,
    start: number,
    end: number,
    onCorruptChunk: 'error' | 'skip',
    buffers: DecodeBuffers = {},
  ): Promise<RecordBatch> {
    const blocks = this.index.blocks.slice(first, last + 1);
    const head = blocks[0];
    const tail = blocks[blocks.length - 1];
    if (head === undefined || tail === undefined) return RecordBatch.empty(start);
    const from = Math.max(start, head.firstRecord);
    const to = Math.min(end, tail.firstRecord + tail.numRecords);
    if (this.index.format === 'recordio') {
      return decodeRecordIORange(bytes, this.index.chunks.slice(first, last + 1), {
        source: this.location,
        skip: from - head.firstRecord,
        count: to - from,
        onCorruptChunk,
        onSkip: (_fault: RecordIOError) => {
          this.skippedChunks++;
        },
        ...buffers,
      });
    }
    const count = tail.firstRecord + tail.numRecords - head.firstRecord;
    const batch = await decodeTFRecordRange(bytes, {
      source: this.location,
      baseOffset: head.offset,
      firstRecord: head.firstRecord,
      count,
    });
    const framesEnd = count === 0 ? 0 : (batch.bounds[2 * count - 1] ?? 0) + DATA_CRC_BYTES;
    if (framesEnd !== bytes.byteLength) {
      throw new TFRecordError(
        'BAD_MAGIC',
        `the index says ${count} records end at byte ${head.offset + bytes.byteLength}, and they end at ` +
          `byte ${head.offset + framesEnd}: the index is not the object's`,
        { path: this.location, record: head.firstRecord, offset: head.offset },
      );
    }
    const skip = from - head.firstRecord;
    return new RecordBatch(
      batch.data,
      batch.bounds.subarray(2 * skip, 2 * (to - head.firstRecord)),
      from,
      buffers.recycle,
    );
  }

  /** Requests and bytes so far. */
  stats(): RemoteFileStats {
    return remoteFileStats(this, this.skippedChunks);
  }

  /** Nothing to release: reads are pinned requests, not open files. */
  close(): void {}
}
