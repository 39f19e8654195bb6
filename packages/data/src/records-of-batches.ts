import type { RecordBatchLike } from './protocols.js';

/**
 * The records of a stream of batches, one at a time: how a batch-reading source serves
 * `readRecords`. The batches are never released, so every record handed on stays valid.
 */
export async function* recordsOfBatches<TRecord>(
  batches: AsyncIterable<RecordBatchLike<TRecord>>,
): AsyncGenerator<TRecord> {
  for await (const batch of batches) {
    for (let i = 0; i < batch.length; i++) yield batch.get(i);
  }
}
