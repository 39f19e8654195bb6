import { describe, expect, it } from 'vitest';
import { ParameterStore } from '../src/parameter-store.js';
import { decodeStoreCheckpoint, encodeStoreCheckpoint } from '../src/store-checkpoint.js';

const fail = (message: string): never => {
  throw new Error(message);
};

function trainedStore(): ParameterStore {
  const store = new ParameterStore({ optimizer: { type: 'adam', learningRate: 0.1 } });
  store.initialize([
    { name: 'dense/kernel', shape: [2, 2], values: new Float32Array([1, 2, 3, 4]) },
    { name: 'dense/bias', shape: [2], values: new Float32Array([0.5, -0.5]) },
  ]);
  for (let i = 0; i < 3; i++) {
    store.applyGradient([
      { name: 'dense/kernel', shape: [2, 2], values: new Float32Array([0.1, -0.2, 0.3, i]) },
      { name: 'dense/bias', shape: [2], values: new Float32Array([1, -1]) },
    ]);
  }
  return store;
}

describe('the store part of a checkpoint', () => {
  it('lays variables then slots out as float32 little-endian, in the snapshot order', () => {
    const snapshot = trainedStore().snapshot();
    const { header, payload } = encodeStoreCheckpoint(snapshot, { type: 'adam', learningRate: 0.1 });
    expect(header.version).toBe(3);
    expect(header.optimizerStep).toBe(3);
    expect(header.variables).toEqual([
      { name: 'dense/kernel', shape: [2, 2], offset: 0, length: 4 },
      { name: 'dense/bias', shape: [2], offset: 4, length: 2 },
    ]);
    // Adam keeps m and v per variable: 2 x (4 + 2) floats after the 6 of the variables.
    expect(header.slots.map((s) => `${s.variable}/${s.slot}@${s.offset}`)).toEqual([
      'dense/kernel/m@6',
      'dense/kernel/v@10',
      'dense/bias/m@14',
      'dense/bias/v@16',
    ]);
    expect(payload.length).toBe(18 * 4);
    const kernel = snapshot.variables[0]!.values;
    for (let i = 0; i < 4; i++) expect(payload.readFloatLE(i * 4)).toBe(kernel[i]);
    const biasV = snapshot.slots.get('dense/bias')!.get('v')!;
    expect(payload.readFloatLE(17 * 4)).toBe(biasV[1]);
  });

  it('decodes what it encodes, and a store restored from it carries on identically', () => {
    const original = trainedStore();
    const { header, payload } = encodeStoreCheckpoint(original.snapshot(), original.optimizer.config);
    // Through JSON, as the header travels in the file.
    const decoded = decodeStoreCheckpoint(JSON.parse(JSON.stringify(header)), payload, fail);
    expect(decoded.optimizer).toEqual(original.optimizer.config);
    const restored = new ParameterStore({ optimizer: { type: 'adam', learningRate: 0.1 } });
    restored.restore(decoded.store);
    const step = [
      { name: 'dense/kernel', shape: [2, 2], values: new Float32Array([1, 1, 1, 1]) },
      { name: 'dense/bias', shape: [2], values: new Float32Array([0, 2]) },
    ];
    original.applyGradient(step);
    restored.applyGradient(step);
    expect(restored.version).toBe(4);
    expect(restored.checksum()).toBe(original.checksum());
  });

  it('names the entry that lies outside the payload', () => {
    const { header, payload } = encodeStoreCheckpoint(trainedStore().snapshot(), { type: 'adam' });
    const shortened = payload.subarray(0, 16 * 4);
    expect(() => decodeStoreCheckpoint(header, shortened, fail)).toThrow(
      "slot 'v' of 'dense/bias' lies outside the payload",
    );
    const moved = { ...header, variables: [{ ...header.variables[0]!, offset: -1 }] };
    expect(() => decodeStoreCheckpoint(moved, payload, fail)).toThrow(
      "variable 'dense/kernel' lies outside the payload",
    );
  });
});
