import { createOptimizer, type OptimizerConfig, SeededRandom } from '@edl/common';
import { describe, expect, it } from 'vitest';
import { EmbeddingTable } from '../src/sparse/embedding-table.js';

const DIM = 5;
const IDS = [3, 17, 2 ** 40 + 3, 99];

/** Random gradients for a random subset of IDS (at least one), some repeated. */
function randomPush(random: SeededRandom): { ids: number[]; grads: number[][] } {
  const ids = IDS.filter(() => random.next() < 0.5);
  if (ids.length === 0) ids.push(IDS[random.int(IDS.length)] as number);
  return { ids, grads: ids.map(() => Array.from({ length: DIM }, () => random.normal())) };
}

const configs: OptimizerConfig[] = [
  { type: 'sgd', learningRate: 0.1 },
  { type: 'momentum', learningRate: 0.05, momentum: 0.9 },
  { type: 'momentum', learningRate: 0.05, momentum: 0.8, nesterov: true },
  { type: 'adagrad', learningRate: 0.3, initialAccumulatorValue: 0.2 },
  { type: 'adam', learningRate: 0.02 },
];

describe('sparse optimizer kernels', () => {
  for (const config of configs) {
    it(`${JSON.stringify(config)}: a row's update is the dense optimizer's on that row alone; other rows stay`, () => {
      const table = new EmbeddingTable({ name: 'emb', dim: DIM, seed: 7, optimizer: config });
      const ids = Float64Array.from(IDS);
      // One dense optimizer per row, stepped only when its row is touched: for lazy Adam that is
      // exactly "bias correction by the row's own update count".
      const dense = IDS.map(() => createOptimizer(config));
      const rows = IDS.map((_, i) => table.pull(ids.subarray(i, i + 1)));
      const random = new SeededRandom(11);
      for (let step = 0; step < 12; step++) {
        const push = randomPush(random);
        const lrScale = step % 3 === 0 ? 0.5 : 1;
        table.push(Float64Array.from(push.ids), Float32Array.from(push.grads.flat()), lrScale);
        IDS.forEach((id, i) => {
          const k = push.ids.indexOf(id);
          if (k >= 0) {
            const opt = dense[i]!;
            opt.beginStep();
            opt.apply('row', rows[i]!, Float32Array.from(push.grads[k]!), lrScale);
          }
          expect(table.readRow(id)).toEqual(rows[i]);
        });
      }
      // The slots are the dense optimizer's slots of that row.
      IDS.forEach((id, i) => {
        for (const slot of table.optimizer.slotNames)
          expect(table.readRow(id, slot)).toEqual(dense[i]!.slots.get('row')?.get(slot));
        if (config.type === 'adam') expect(table.rowStep(id)).toBe(dense[i]!.step);
      });
    });
  }

  for (const config of configs) {
    it(`${config.type}${'nesterov' in config ? ' (nesterov)' : ''} with a cosine decay: the rate at the version a push names is the dense kernel's at the next update`, () => {
      const decayed: OptimizerConfig = { ...config, decay: { type: 'cosine', steps: 6, alpha: 0.1 } };
      const table = new EmbeddingTable({ name: 'emb', dim: DIM, seed: 5, optimizer: decayed });
      const ids = Float64Array.from(IDS);
      // Every row is pushed at every step, so lazy Adam's row steps are the dense step count.
      const whole = table.pull(ids);
      const dense = createOptimizer(decayed);
      const undecayed = new EmbeddingTable({ name: 'emb', dim: DIM, seed: 5, optimizer: config });
      undecayed.pull(ids);
      const random = new SeededRandom(23);
      // Past `steps` the rate stays at alpha times the initial one.
      for (let version = 0; version < 9; version++) {
        const grads = Float32Array.from({ length: IDS.length * DIM }, () => random.normal());
        dense.beginStep();
        dense.apply('table', whole, grads);
        table.push(ids, grads, 1, version);
        undecayed.push(ids, grads, 1, version);
        IDS.forEach((id, i) => {
          expect(table.readRow(id)).toEqual(whole.subarray(i * DIM, (i + 1) * DIM));
        });
      }
      // The schedule is what moved the rows: without it they end elsewhere.
      expect(undecayed.readRow(IDS[0] as number)).not.toEqual(table.readRow(IDS[0] as number));
      expect(table.optimizer.rateFactor(0)).toBe(1);
      expect(table.optimizer.rateFactor(6)).toBeCloseTo(0.1, 12);
    });
  }

  it('merges duplicate ids by summing their gradients, one update per row and push', () => {
    const config: OptimizerConfig = { type: 'adam', learningRate: 0.1 };
    const merged = new EmbeddingTable({ name: 't', dim: 2, seed: 1, optimizer: config });
    const repeated = new EmbeddingTable({ name: 't', dim: 2, seed: 1, optimizer: config });
    repeated.push(new Float64Array([4, 9, 4]), new Float32Array([0.5, -1, 2, 2, 0.25, 3]));
    merged.push(new Float64Array([4, 9]), new Float32Array([0.5 + 0.25, -1 + 3, 2, 2]));
    expect(repeated.readRow(4)).toEqual(merged.readRow(4));
    expect(repeated.readRow(9)).toEqual(merged.readRow(9));
    expect(repeated.rowStep(4)).toBe(1);
  });

  it('lazy Adam differs from dense Adam on a row left out of a step; SGD and Adagrad do not', () => {
    for (const type of ['adam', 'sgd', 'adagrad'] as const) {
      const table = new EmbeddingTable({
        name: 't',
        dim: 1,
        seed: 3,
        optimizer: { type, learningRate: 0.1 },
      });
      const ids = new Float64Array([1, 2]);
      const whole = table.pull(ids);
      const dense = createOptimizer({ type, learningRate: 0.1 });
      // Step 1 touches both rows, step 2 only row 1: dense sees a zero gradient for row 2.
      for (const grads of [
        [1, 1],
        [1, 0],
      ]) {
        dense.beginStep();
        dense.apply('table', whole, Float32Array.from(grads));
        table.push(
          grads[1] === 0 ? ids.subarray(0, 1) : ids,
          Float32Array.from(grads[1] === 0 ? [1] : grads),
        );
      }
      const sparseRow2 = table.readRow(2)![0];
      if (type === 'adam') expect(sparseRow2).not.toBe(whole[1]);
      else expect(sparseRow2).toBe(whole[1]);
      // Row 1, touched at every step, agrees in every case.
      expect(table.readRow(1)![0]).toBe(whole[0]);
    }
  });

  it("starts Adagrad's accumulator at initialAccumulatorValue and Adam's moments at zero", () => {
    const adagrad = new EmbeddingTable({
      name: 't',
      dim: 3,
      seed: 1,
      optimizer: { type: 'adagrad', initialAccumulatorValue: 0.3 },
    });
    adagrad.pull(new Float64Array([5]));
    expect(Array.from(adagrad.readRow(5, 'accumulator')!)).toEqual([0.3, 0.3, 0.3].map(Math.fround));
    const adam = new EmbeddingTable({ name: 't', dim: 3, seed: 1, optimizer: { type: 'adam' } });
    adam.pull(new Float64Array([5]));
    expect(Array.from(adam.readRow(5, 'v')!)).toEqual([0, 0, 0]);
    expect(() => adam.readRow(5, 'momentum')).toThrow(
      "Expected one of 'm', 'v' for the slot of embedding table 't' but received 'momentum'",
    );
  });
});
