import { describe, expect, it } from 'vitest';
import { RingBuffer } from '../../src/dataset/ring-buffer.js';

describe('RingBuffer', () => {
  it('is a bounded FIFO', () => {
    const ring = new RingBuffer<number>(3);
    const reference: number[] = [];
    for (let step = 0; step < 100; step++) {
      if (step % 3 !== 2 && ring.length < 3) {
        ring.push(step);
        reference.push(step);
      } else {
        expect(ring.shift()).toBe(reference.shift());
      }
      expect(ring.length).toBe(reference.length);
    }
    ring.clear();
    expect(ring.shift()).toBeUndefined();
    ring.push(1);
    ring.push(2);
    ring.push(3);
    expect(() => ring.push(4)).toThrow(RangeError);
    expect(() => new RingBuffer(0)).toThrow(
      new RangeError('Expected a positive integer for capacity but received 0'),
    );
  });

  it('resizes to a larger ring with the same items in order, wrapped or not', () => {
    const ring = new RingBuffer<number>(3);
    ring.push(1);
    ring.push(2);
    ring.shift();
    ring.push(3);
    ring.push(4); // wrapped: 2 3 4 from slot 1
    const larger = ring.resized(5);
    larger.push(5);
    larger.push(6);
    expect([1, 2, 3, 4, 5].map(() => larger.shift())).toEqual([2, 3, 4, 5, 6]);
    expect(() => ring.resized(2)).toThrow(/at least 3/);
  });
});
