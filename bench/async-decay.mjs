// How a learning-rate schedule changes what asynchronous training ends at (docs/worker.md,
// "Accuracy of asynchronous training"): the demo's MNIST CNN and data split, trained in one process
// with gradients `stale` versions old applied by the master's own optimizer code (@edl/common), at a
// fixed rate or with a schedule. Prints the held-out accuracy after each epoch, one JSON line each.
// Usage: node bench/async-decay.mjs '{"schedule":"cosine","epochs":6,"stale":1,"seed":7}'
// (schedule: none | cosine | linear | step; also lr, batch, floor, backend, model).
import { createOptimizer, SeededRandom } from '../packages/common/dist/index.js';
import { buildMnistModel, loadMnistDigits } from '../packages/model-zoo/dist/index.js';
import { selectBackend, tf } from '../packages/worker/dist/index.js';

const cfg = JSON.parse(process.argv[2] ?? '{}');
const epochs = cfg.epochs ?? 6,
  batch = cfg.batch ?? 32,
  lr = cfg.lr ?? 0.002,
  stale = cfg.stale ?? 1;
const schedule = cfg.schedule ?? 'none',
  floor = cfg.floor ?? 0,
  runSeed = cfg.seed ?? 7;
await selectBackend({ backend: cfg.backend ?? 'wasm' });
const digits = loadMnistDigits();
const order = Array.from({ length: digits.count }, (_, i) => i);
const random = new SeededRandom(1);
for (let i = order.length - 1; i > 0; i--) {
  const j = random.int(i + 1);
  [order[i], order[j]] = [order[j], order[i]];
}
const test = order.slice(0, 2000),
  train = order.slice(2000);
function batchOf(ids) {
  const px = new Float32Array(ids.length * 784),
    lab = new Int32Array(ids.length);
  ids.forEach((id, i) => {
    lab[i] = digits.labels[id];
    for (let p = 0; p < 784; p++) px[i * 784 + p] = digits.pixels[id * 784 + p] / 255;
  });
  return {
    x: tf.tensor4d(px, [ids.length, 28, 28, 1]),
    y: tf.oneHot(tf.tensor1d(lab, 'int32'), 10).toFloat(),
    lab,
  };
}
const model = buildMnistModel(cfg.model ?? {});
const vars = model.trainableWeights.map((w) => w.read());
const names = model.trainableWeights.map((w) => w.originalName ?? w.name);
const weights = vars.map((v) => v.dataSync().slice());
const opt = createOptimizer({ type: 'adam', learningRate: lr });
const history = [weights.map((w) => w.slice())];
const total = Math.floor(train.length / batch) * epochs;
const rng = new SeededRandom(runSeed);
let step = 0;
function evalAcc() {
  for (const [i, w] of model.trainableWeights.entries()) w.write(tf.tensor(weights[i], w.shape));
  let correct = 0;
  for (let s = 0; s < test.length; s += 500) {
    const b = batchOf(test.slice(s, s + 500));
    const pred = tf.tidy(() => model.predict(b.x).argMax(-1).dataSync());
    pred.forEach((p, i) => {
      if (p === b.lab[i]) correct++;
    });
    tf.dispose([b.x, b.y]);
  }
  return correct / test.length;
}
const t0 = Date.now();
for (let e = 0; e < epochs; e++) {
  const perm = train.slice();
  for (let i = perm.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [perm[i], perm[j]] = [perm[j], perm[i]];
  }
  for (let s = 0; s + batch <= perm.length; s += batch) {
    const from = history[Math.max(0, history.length - 1 - stale)];
    for (const [i, w] of model.trainableWeights.entries()) w.write(tf.tensor(from[i], w.shape));
    const b = batchOf(perm.slice(s, s + batch));
    const { grads } = tf.variableGrads(
      () => {
        const out = model.apply(b.x, { training: true });
        return tf.mean(tf.neg(tf.sum(tf.mul(b.y, tf.log(tf.clipByValue(out, 1e-7, 1))), -1)));
      },
      model.trainableWeights.map((w) => w.val),
    );
    const gs = model.trainableWeights.map((w) => grads[w.val.name].dataSync());
    tf.dispose([b.x, b.y, ...Object.values(grads)]);
    const frac = step / total;
    let scale = 1;
    if (schedule === 'cosine') scale = floor + (1 - floor) * 0.5 * (1 + Math.cos(Math.PI * frac));
    else if (schedule === 'linear') scale = floor + (1 - floor) * (1 - frac);
    else if (schedule === 'step') scale = frac < 0.66 ? 1 : frac < 0.9 ? 0.3 : 0.1;
    opt.beginStep();
    for (const [i, w] of weights.entries()) opt.apply(names[i], w, gs[i], scale);
    history.push(weights.map((w) => w.slice()));
    if (history.length > stale + 1) history.shift();
    step++;
  }
  console.log(JSON.stringify({ cfg, epoch: e + 1, acc: evalAcc(), s: Math.round((Date.now() - t0) / 1000) }));
}
