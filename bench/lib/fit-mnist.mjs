/**
 * The baseline of bench/train-vs-fit.mjs, in its own process: plain TensorFlow.js `model.fit` on
 * the same records, model, optimizer, minibatch and backend as `edl train`, with no elasticdl-ts in
 * the training path (only @edl/worker's backend set-up, which plain tfjs-backend-wasm needs for
 * Conv2DBackpropFilter). Prints one JSON line with the trained weights' file.
 *
 * Usage: node fit-mnist.mjs TRAIN_RIO EPOCHS MINIBATCH BACKEND OUT_JSON [SLICE/SLICES]
 *
 * With SLICE/SLICES (e.g. `0/2`) it trains on every SLICES-th record from the SLICE-th on: one
 * disjoint share of the data, for the bound of train-vs-fit (SLICES such processes at once, no
 * communication between them).
 */
import { writeFileSync } from 'node:fs';
import { RecordIOReader } from '../../packages/recordio/dist/index.js';
import { selectBackend, tf } from '../../packages/worker/dist/index.js';
import { buildMnistCnn } from './mnist-cnn-model.mjs';
import { MNIST_SIDE, toArrays } from './mnist-data.mjs';

const [trainFile, epochs, minibatch, backend, out, share = '0/1'] = process.argv.slice(2);
const [slice, slices] = share.split('/').map(Number);
if (!(Number.isInteger(slices) && slices >= 1 && Number.isInteger(slice) && slice >= 0 && slice < slices)) {
  throw new RangeError(`Expected SLICE/SLICES with 0 <= SLICE < SLICES for the share but received ${share}`);
}
await selectBackend({ backend });
const reader = await RecordIOReader.open(trainFile);
const records = [];
let index = 0;
for await (const record of reader.records())
  if (index++ % slices === slice) records.push(Uint8Array.from(record));
reader.close();
const { pixels, labels } = toArrays(records);
const x = tf.tensor4d(pixels, [records.length, MNIST_SIDE, MNIST_SIDE, 1]);
const y = tf.tensor2d(labels, [records.length, 10]);
const model = buildMnistCnn();
model.compile({ optimizer: tf.train.adam(0.001), loss: 'categoricalCrossentropy' });
const begin = performance.now();
await model.fit(x, y, { batchSize: Number(minibatch), epochs: Number(epochs), shuffle: true, verbose: 0 });
const trainSeconds = (performance.now() - begin) / 1000;
const weights = await Promise.all(
  model.trainableWeights.map(async (w) => ({
    name: w.originalName,
    shape: w.shape,
    values: Array.from(await w.read().data()),
  })),
);
writeFileSync(
  out,
  JSON.stringify({
    weights,
    trainSeconds,
    steps: Math.ceil(records.length / Number(minibatch)) * Number(epochs),
  }),
);
console.log(JSON.stringify({ out, trainSeconds }));
