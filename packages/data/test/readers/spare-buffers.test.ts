import { describe, expect, it } from 'vitest';
import { SpareBuffers } from '../../src/readers/remote/spare-buffers.js';

const KIB = 1024;

describe('SpareBuffers', () => {
  it('keeps buffers only within the bytes allowed, and gives back the smallest that fits', () => {
    const spares = new SpareBuffers(8, 4 * KIB);
    const small = new ArrayBuffer(8 * KIB);
    const large = new ArrayBuffer(32 * KIB);
    spares.give(large, 40 * KIB);
    spares.give(small, 40 * KIB);
    // Over the bytes allowed: not kept.
    spares.give(new ArrayBuffer(16 * KIB), 40 * KIB);
    // Too small to be worth keeping.
    spares.give(new ArrayBuffer(KIB));
    expect(spares.bytes).toBe(40 * KIB);
    expect(spares.take(6 * KIB)).toBe(small);
    expect(spares.take(64 * KIB)).toBeUndefined();
    expect(spares.bytes).toBe(32 * KIB);
  });

  it('trims the oldest spares down to the bytes left, and counts what is taken out', () => {
    const spares = new SpareBuffers(8, 4 * KIB);
    const buffers = [16, 8, 8].map((size) => new ArrayBuffer(size * KIB));
    for (const buffer of buffers) spares.give(buffer);
    spares.trim(20 * KIB);
    expect(spares.bytes).toBe(16 * KIB);
    expect(spares.takeAny()).toBe(buffers[2]);
    expect(spares.takeAny()).toBe(buffers[1]);
    expect(spares.takeAny()).toBeUndefined();
    expect(spares.bytes).toBe(0);
  });
});
