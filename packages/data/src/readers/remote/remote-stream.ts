import { pipeline, Readable } from 'node:stream';
import { createGunzip, createInflate } from 'node:zlib';
import { decodeFrameStream, type RecordBatch, StreamCursor, TFRecordError } from '@edl/recordio';
import type { ByteSource, ObjectStat } from '@edl/storage';
import { type RemoteFileStats, remoteFileStats } from './remote-file.js';
import type { RemoteIndexReport } from './remote-index.js';

/** Decompressed bytes per piece out of zlib: larger than its 16 KiB default so batches are not tiny. */
const ZLIB_CHUNK = 256 * 1024;
/** Records per batch cut from the stream. */
const BATCH_RECORDS = 4096;

/**
 * A GZIP/ZLIB TFRecord object, read as one stream: a deflate stream has no offsets to start from, so
 * the object is one shard, counted once at open by decompressing it whole (as a local compressed
 * file is), and every range is read from the object's first byte, the records before it passed
 * over. The stream a range ends on is kept, so that the next range of the file (the next task of
 * the shard) continues it instead of starting over. Parts of `partBytes` are fetched one at a time,
 * pinned to the listed version.
 */
export class RemoteStream {
  readonly numRecords: number;
  dataRequests = 0;
  dataBytes = 0;
  readonly #stream = new StreamCursor((start) =>
    decodeFrameStream(decompressedObject(this.source, this.object, this.compression, this.partBytes, this), {
      path: this.location,
      compressed: true,
      start,
      count: Number.POSITIVE_INFINITY,
      batchRecords: BATCH_RECORDS,
    }),
  );

  private constructor(
    readonly source: ByteSource,
    readonly object: ObjectStat,
    readonly compression: 'gzip' | 'zlib',
    readonly partBytes: number,
    numRecords: number,
    readonly indexReport: RemoteIndexReport,
  ) {
    this.numRecords = numRecords;
  }

  /**
   * Counts the records of `object` by one decompressing pass.
   *
   * @param indexRequests - requests already spent finding out that the object is compressed.
   * @throws TFRecordError for a damaged stream (its records past the damage would be left out).
   */
  static async open(
    source: ByteSource,
    object: ObjectStat,
    compression: 'gzip' | 'zlib',
    partBytes: number,
    indexRequests: number,
  ): Promise<RemoteStream> {
    const counter = { requests: 0 };
    let numRecords = 0;
    const frames = decodeFrameStream(decompressedObject(source, object, compression, partBytes, counter), {
      path: object.location,
      compressed: true,
      start: 0,
      count: Number.POSITIVE_INFINITY,
      batchRecords: BATCH_RECORDS,
    });
    for await (const batch of frames) numRecords += batch.length;
    const report: RemoteIndexReport = { origin: 'stream-count', requests: indexRequests + counter.requests };
    return new RemoteStream(source, object, compression, partBytes, numRecords, report);
  }

  get location(): string {
    return this.object.location;
  }

  /** Records `[start, end)` (a checked, non-empty range), continuing the previous range's stream when it ended at `start`. */
  async *batches(start: number, end: number): AsyncGenerator<RecordBatch> {
    const delivered = yield* this.#stream.batches(start, end);
    if (start + delivered < end) {
      throw new TFRecordError('TRUNCATED', 'the stream ended before the records it had when counted', {
        path: this.location,
        record: start + delivered,
        compressed: true,
      });
    }
  }

  /** Requests and bytes so far. */
  stats(): RemoteFileStats {
    return remoteFileStats(this, 0);
  }

  /** Ends the stream kept for the next range. */
  close(): void {
    this.#stream.close();
  }
}

/** Counts of what a stream fetched. */
interface FetchCounter {
  dataRequests?: number;
  dataBytes?: number;
  requests?: number;
}

/** The object's bytes in parts of `partBytes`, fetched one after another (the next while the last is inflated). */
async function* objectParts(
  source: ByteSource,
  object: ObjectStat,
  partBytes: number,
  counter: FetchCounter,
): AsyncGenerator<Uint8Array> {
  let next: Promise<Uint8Array> | undefined;
  const fetchAt = (at: number): Promise<Uint8Array> => {
    const length = Math.min(partBytes, object.size - at);
    if (counter.requests !== undefined) counter.requests++;
    if (counter.dataRequests !== undefined) counter.dataRequests++;
    if (counter.dataBytes !== undefined) counter.dataBytes += length;
    const part = source.readRange(object, at, length);
    part.catch(() => {});
    return part;
  };
  for (let at = 0; at < object.size; at += partBytes) {
    const part = next ?? fetchAt(at);
    next = at + partBytes < object.size ? fetchAt(at + partBytes) : undefined;
    yield await part;
  }
}

/** The decompressed bytes of a GZIP or ZLIB object. */
function decompressedObject(
  source: ByteSource,
  object: ObjectStat,
  compression: 'gzip' | 'zlib',
  partBytes: number,
  counter: FetchCounter,
): AsyncIterable<Uint8Array> {
  const inflate =
    compression === 'gzip'
      ? createGunzip({ chunkSize: ZLIB_CHUNK })
      : createInflate({ chunkSize: ZLIB_CHUNK });
  // pipeline: a failed GET reaches the consumer through inflate, and a consumer that stops early
  // (destroying inflate) stops the fetching.
  return pipeline(Readable.from(objectParts(source, object, partBytes, counter)), inflate, () => {});
}
