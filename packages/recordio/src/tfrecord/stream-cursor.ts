import { type RecordBatch, splitBatch } from '../record-batch.js';

/**
 * Ranges of a record stream that can only be read from its start (a GZIP/ZLIB TFRecord file, local
 * or remote): a range that starts where the last one ended continues the same stream, any other
 * range opens a new one from the start (`open` passes over the records before it). Reading the
 * next task of a shard then costs no second decompression from the file's start.
 */
export class StreamCursor {
  readonly #open: (start: number) => AsyncIterable<RecordBatch>;
  #cursor:
    | { next: number; iterator: AsyncIterator<RecordBatch>; leftover: RecordBatch | undefined }
    | undefined;
  #closed = false;

  /** @param open - the stream's batches from record `start` on. */
  constructor(open: (start: number) => AsyncIterable<RecordBatch>) {
    this.#open = open;
  }

  /**
   * The batches of records `[start, end)`, cut at `end`; fewer when the stream ends first. Resolves
   * to the number of records delivered. The stream is kept for the next range only when the range
   * was read to its end.
   */
  async *batches(start: number, end: number): AsyncGenerator<RecordBatch, number> {
    let cursor = this.#cursor;
    this.#cursor = undefined;
    if (cursor === undefined || cursor.next !== start) {
      void cursor?.iterator.return?.(undefined);
      cursor = { next: start, iterator: this.#open(start)[Symbol.asyncIterator](), leftover: undefined };
    }
    let completed = false;
    try {
      while (cursor.next < end) {
        let batch = cursor.leftover;
        cursor.leftover = undefined;
        if (batch === undefined) {
          const r = await cursor.iterator.next();
          if (r.done === true) break;
          batch = r.value;
        }
        const take = Math.min(batch.length, end - cursor.next);
        if (take < batch.length) [batch, cursor.leftover] = splitBatch(batch, take);
        cursor.next += take;
        yield batch;
      }
      completed = cursor.next >= end;
      return cursor.next - start;
    } finally {
      if (completed && !this.#closed) this.#cursor = cursor;
      else void cursor.iterator.return?.(undefined);
    }
  }

  /** Ends the stream kept for the next range; later ranges open new ones. */
  close(): void {
    this.#closed = true;
    void this.#cursor?.iterator.return?.(undefined);
    this.#cursor = undefined;
  }
}
