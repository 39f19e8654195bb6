import {
  checkInteger,
  checkOneOf,
  checkOptions,
  describeValue,
  EdlError,
  hasErrorCode,
  invalidArgument,
  mulberry32,
  SeededRandom,
} from '@edl/common';
import { describe, expect, it } from 'vitest';

describe('describeValue', () => {
  it('renders each kind of value in one style', () => {
    expect(describeValue('lz4')).toBe('"lz4"');
    expect(describeValue('0')).toBe('"0"');
    expect(describeValue(0)).toBe('0');
    expect(describeValue(-1.5)).toBe('-1.5');
    expect(describeValue(Number.NaN)).toBe('NaN');
    expect(describeValue(true)).toBe('true');
    expect(describeValue(5n)).toBe('5n');
    expect(describeValue(null)).toBe('null');
    expect(describeValue(undefined)).toBe('undefined');
    expect(describeValue([1, 2, 3])).toBe('an array of length 3');
    expect(describeValue(new Uint32Array(1))).toBe('a Uint32Array of 4 bytes');
    expect(describeValue({ name: 'sgd' })).toBe('{"name":"sgd"}');
    expect(describeValue(new Map())).toBe('an instance of Map');
    expect(describeValue(() => 1)).toBe('a function');
    expect(describeValue(function named() {})).toBe('function named');
  });

  it('cuts long strings and objects', () => {
    const text = describeValue('x'.repeat(1000));
    expect(text).toBe(`"${'x'.repeat(60)}..."`);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(describeValue(cyclic)).toBe('an object');
    expect(describeValue({ long: 'y'.repeat(500) }).length).toBeLessThanOrEqual(63);
  });
});

describe('argument checks', () => {
  it('throws TypeError for a wrong type and RangeError for a number out of range', () => {
    expect(() => checkInteger('3', 'count', 1)).toThrow(
      new TypeError('Expected a positive integer for count but received "3"'),
    );
    expect(() => checkInteger(0, 'count', 1)).toThrow(
      new RangeError('Expected a positive integer for count but received 0'),
    );
    expect(() => checkInteger(1.5, 'n')).toThrow(
      new RangeError('Expected a non-negative integer for n but received 1.5'),
    );
    expect(() => checkInteger(10, 'level', 1, 9)).toThrow(
      new RangeError('Expected an integer in [1, 9] for level but received 10'),
    );
    expect(() => checkInteger(2, 'port', 1024)).toThrow('Expected an integer >= 1024 for port');
    expect(checkInteger(9, 'level', 1, 9)).toBe(9);
  });

  it('checks choices and option keys', () => {
    expect(() => checkOneOf('lz4', 'compressor', ['none', 'gzip'])).toThrow(
      new RangeError("Expected one of 'none', 'gzip' for compressor but received \"lz4\""),
    );
    expect(() => checkOneOf(1, 'compressor', ['none'])).toThrow(TypeError);
    expect(() => checkOptions({ maxChunkSize: 1 }, 'options', ['maxChunkBytes'])).toThrow(
      new TypeError('Expected one of maxChunkBytes for a key of options but received "maxChunkSize"'),
    );
    expect(checkOptions(undefined, 'options', [])).toEqual({});
    expect(() => invalidArgument('a function', 'fn', 3, 'type')).toThrow(TypeError);
  });
});

describe('EdlError', () => {
  type CacheErrorCode = 'FULL' | 'CLOSED';
  class CacheError extends EdlError<CacheErrorCode> {
    override readonly name = 'CacheError';
  }

  it('carries a typed code, a cause and the class chain', () => {
    const cause = new Error('disk full');
    const error = new CacheError('FULL', 'cache is full', { cause });
    expect(error).toBeInstanceOf(CacheError);
    expect(error).toBeInstanceOf(EdlError);
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe('FULL');
    expect(error.cause).toBe(cause);
    expect(error.name).toBe('CacheError');
    expect(String(error)).toBe('CacheError: cache is full');
    expect(error.stack).toContain('common.test.ts');
    expect('cause' in new CacheError('CLOSED', 'closed')).toBe(false);
    expect(hasErrorCode(error, 'FULL', 'CLOSED')).toBe(true);
    expect(hasErrorCode(error, 'CLOSED')).toBe(false);
    expect(hasErrorCode(cause, 'FULL')).toBe(false);
  });
});

describe('SeededRandom', () => {
  /** mulberry32 written out independently, from its published definition. */
  function reference(seed: number): () => number {
    let a = seed | 0;
    return () => {
      a = (a + 0x6d2b79f5) | 0;
      let t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  it('draws the mulberry32 sequence, deterministically per seed', () => {
    for (const seed of [0, 1, 42, 0xffffffff, -7]) {
      const r = new SeededRandom(seed);
      const f = mulberry32(seed);
      const ref = reference(seed);
      for (let i = 0; i < 1000; i++) {
        const expected = ref();
        expect(r.next()).toBe(expected);
        expect(f()).toBe(expected);
      }
    }
    const a = Array.from({ length: 8 }, mulberry32(1));
    const b = Array.from({ length: 8 }, mulberry32(2));
    expect(a).not.toEqual(b);
  });

  it('resumes from its state', () => {
    const r = new SeededRandom(7);
    for (let i = 0; i < 10; i++) r.next();
    const resumed = new SeededRandom(r.state);
    for (let i = 0; i < 10; i++) expect(resumed.next()).toBe(r.next());
  });

  it('is uniform in [0, 1), and int, normal and shuffle keep their contracts', () => {
    const r = new SeededRandom(123);
    const buckets = new Array<number>(10).fill(0);
    const n = 100_000;
    let sum = 0;
    let squares = 0;
    for (let i = 0; i < n; i++) {
      const x = r.next();
      expect(x >= 0 && x < 1).toBe(true);
      buckets[Math.floor(x * 10)] = (buckets[Math.floor(x * 10)] ?? 0) + 1;
      const z = r.normal();
      sum += z;
      squares += z * z;
    }
    // Each bucket expects 10,000 draws (sd ~95): 600 is more than 6 standard deviations.
    for (const count of buckets) expect(Math.abs(count - n / 10)).toBeLessThan(600);
    expect(Math.abs(sum / n)).toBeLessThan(0.02);
    expect(Math.abs(squares / n - 1)).toBeLessThan(0.03);
    for (let i = 0; i < 1000; i++) {
      const k = r.int(5);
      expect(Number.isInteger(k) && k >= 0 && k < 5).toBe(true);
    }
    const items = Array.from({ length: 50 }, (_, i) => i);
    const shuffled = r.shuffle([...items]);
    expect(shuffled).not.toEqual(items);
    expect([...shuffled].sort((x, y) => x - y)).toEqual(items);
    expect(new SeededRandom(9).shuffle([...items])).toEqual(new SeededRandom(9).shuffle([...items]));
  });
});
