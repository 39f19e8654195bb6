import { describeValue } from '@edl/common';

/**
 * Groups records into arrays of `size` (the last one may be shorter), in order: the batching step
 * of a `datasetFn` that builds its tensors from whole minibatches.
 */
export async function* batchRecords<T>(records: AsyncIterable<T>, size: number): AsyncGenerator<T[]> {
  if (!Number.isSafeInteger(size) || size < 1) {
    throw new RangeError(`Expected a positive integer for size but received ${describeValue(size)}`);
  }
  let batch: T[] = [];
  for await (const record of records) {
    batch.push(record);
    if (batch.length === size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}
