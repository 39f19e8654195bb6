import { describeValue } from '@edl/common';
import { attribute, IterDataset } from '@edl/data';
import { WorkerError } from './errors.js';
import { FeedMinibatchIterator, feedSourceOf, type MinibatchOptions } from './feed-records.js';

export type { MinibatchOptions } from './feed-records.js';

/**
 * Groups records into arrays of `size` (the last one may be shorter), in order: the batching step
 * of a `datasetFn` that builds its tensors from whole minibatches.
 */
export async function* batchRecords<T>(records: AsyncIterable<T>, size: number): AsyncGenerator<T[]> {
  checkSize(size);
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

/**
 * The batch-aware record path of a `datasetFn`: the records as minibatch arrays of `size` (the last
 * one of a segment may be shorter), optionally window-shuffled within each task. Over the records
 * dataset the worker passes, minibatches are cut straight from the reader's batches, one promise per
 * minibatch instead of one per record, so that parsing, decoding and tensor building can run once
 * per minibatch (`minibatches(records, n).map(decode)`). Over any other dataset it is
 * `records.shuffle(options.shuffle).batch(size)` (a plain async iterable is read once through
 * `IterDataset.fromIterable`).
 */
export function minibatches<T>(
  records: IterDataset<T> | AsyncIterable<T>,
  size: number,
  options: MinibatchOptions = {},
): IterDataset<T[]> {
  checkSize(size);
  const { shuffle } = options;
  const dataset = records instanceof IterDataset ? records : IterDataset.fromIterable(() => records);
  // IterDataset.shuffle checks the options (and makes nothing run): both paths accept the same.
  const shuffled = shuffle === undefined ? dataset : dataset.shuffle(shuffle);
  const source = feedSourceOf(dataset);
  if (source === undefined) return shuffled.batch(size);
  if (shuffle !== undefined && source.ordered) {
    throw new WorkerError(
      'DATA_ERROR',
      `minibatches over ${source.name} cannot shuffle: prediction outputs are matched to records by position`,
    );
  }
  const name = `${source.name} -> Minibatches(${size}${shuffle === undefined ? '' : `, shuffle bufferSize=${shuffle.bufferSize}`})`;
  return IterDataset.fromIterator(() => {
    source.claim();
    // Minibatches hold consecutive records (shuffled within a task at most): what follows may
    // regroup them in order, not reorder them.
    return attribute(new FeedMinibatchIterator(source, size, shuffle), {
      source: source.name,
      lastUnit: () => -1,
      inStep: false,
      elements: 'groups',
      ordered: source.ordered,
    });
  }, name);
}

function checkSize(size: number): void {
  if (!Number.isSafeInteger(size) || size < 1) {
    throw new RangeError(`Expected a positive integer for size but received ${describeValue(size)}`);
  }
}
