import { IterDataset } from '@edl/data';
import { TFRecordReader } from '@edl/recordio';
import type { DatasetFn, Minibatch, Mode } from '@edl/worker';

/** Every record of TFRecord files, copied out of the reader's buffers, in file order. */
export async function readTfRecords(files: readonly string[]): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for (const file of files) {
    const reader = await TFRecordReader.open(file);
    try {
      for await (const record of reader.records()) out.push(Uint8Array.from(record));
    } finally {
      reader.close();
    }
  }
  return out;
}

/** The minibatches a datasetFn makes of `records`, as a worker would feed them. */
export async function minibatchesOf<T>(
  datasetFn: DatasetFn<T>,
  records: readonly T[],
  mode: Mode,
  minibatchSize: number,
): Promise<Minibatch[]> {
  const out: Minibatch[] = [];
  const dataset = IterDataset.fromIterable(async function* () {
    yield* records;
  });
  for await (const batch of datasetFn(dataset, mode, { minibatchSize, reader: {} })) out.push(batch);
  return out;
}
