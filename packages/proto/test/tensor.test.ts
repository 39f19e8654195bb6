import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import {
  fromTaskMessage,
  fromTensorMessage,
  TaskType,
  TensorSchema,
  toTaskMessage,
  toTensorMessage,
} from '../src/index.js';

describe('tensors on the wire', () => {
  it('round-trips float32 values and shape through the binary encoding', () => {
    const values = new Float32Array([1.5, -2, 3.25, Number.NaN, Number.POSITIVE_INFINITY, 0]);
    const wire = toBinary(TensorSchema, toTensorMessage({ name: 'dense/kernel', shape: [2, 3], values }));
    const back = fromTensorMessage(fromBinary(TensorSchema, wire));
    expect(back.name).toBe('dense/kernel');
    expect(back.shape).toEqual([2, 3]);
    expect(Array.from(back.values)).toEqual(Array.from(values));
  });

  it('encodes only the view of a Float32Array over a larger buffer', () => {
    const big = new Float32Array([9, 1, 2, 9]);
    const back = fromTensorMessage(toTensorMessage({ name: 'v', shape: [2], values: big.subarray(1, 3) }));
    expect(Array.from(back.values)).toEqual([1, 2]);
  });

  it('rejects a shape that does not match the values', () => {
    expect(() => toTensorMessage({ name: 'w', shape: [2, 2], values: new Float32Array(3) })).toThrow(
      new RangeError("Expected 4 values for tensor 'w' of shape [2, 2] but received 3"),
    );
  });

  it('rejects wire data of the wrong length', () => {
    const message = toTensorMessage({ name: 'w', shape: [2], values: new Float32Array(2) });
    message.shape = [3];
    expect(() => fromTensorMessage(message)).toThrow(
      new RangeError("Expected 12 bytes for tensor 'w' of shape [3] but received 8"),
    );
  });
});

describe('task assignments', () => {
  it('convert to and from the wire with numbers', () => {
    const task = {
      id: 7,
      type: TaskType.EVALUATION,
      shardName: '/data/a.rio',
      start: 2 ** 40,
      end: 2 ** 40 + 512,
      modelVersion: 12,
      epoch: 1,
      leaseMs: 30_000,
      extendedConfig: { round: '3' },
    };
    expect(fromTaskMessage(toTaskMessage(task))).toEqual(task);
  });

  it('refuses record indices a number cannot hold exactly', () => {
    const message = toTaskMessage({
      id: 1,
      type: TaskType.TRAINING,
      shardName: 's',
      start: 0,
      end: 1,
      modelVersion: 0,
      epoch: 0,
      leaseMs: 1,
      extendedConfig: {},
    });
    message.shard!.end = 2n ** 60n;
    expect(() => fromTaskMessage(message)).toThrow(
      new RangeError('Expected a safe integer for task.shard.end but received 1152921504606846976'),
    );
  });
});
