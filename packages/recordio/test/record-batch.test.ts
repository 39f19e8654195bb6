import { describe, expect, it } from 'vitest';
import { planChunkAlignedRanges } from '../src/chunk-info.js';
import { RecordBatch } from '../src/index.js';

describe('RecordBatch', () => {
  const data = Buffer.from('helloworld!');
  const batch = new RecordBatch(data, Uint32Array.of(0, 5, 5, 5, 5, 10), 100);

  it('gives views into one buffer, not copies', () => {
    expect(batch.length).toBe(3);
    expect(batch.firstRecord).toBe(100);
    const first = batch.get(0);
    expect(Buffer.from(first).toString()).toBe('hello');
    expect(first.buffer).toBe(data.buffer);
    data[0] = 'j'.charCodeAt(0);
    expect(Buffer.from(batch.get(0)).toString()).toBe('jello');
    expect(batch.get(1).length).toBe(0);
    expect(batch.byteLength(2)).toBe(5);
    expect(batch.totalBytes).toBe(10);
  });

  it('is iterable', () => {
    expect([...batch].map((r) => Buffer.from(r).toString())).toEqual(['jello', '', 'world']);
  });

  it('rejects odd bounds', () => {
    expect(() => new RecordBatch(data, Uint32Array.of(0), 0)).toThrow(
      new RangeError('Expected an even number of offsets for bounds but received a Uint32Array of 4 bytes'),
    );
  });
});

describe('chunk-aligned read planning', () => {
  const chunks = [10, 0, 5, 20].reduce<
    {
      index: number;
      offset: number;
      compressor: 'none';
      compressedSize: number;
      numRecords: number;
      firstRecord: number;
    }[]
  >((list, n, index) => {
    const prev = list.at(-1);
    list.push({
      index,
      offset: 0,
      compressor: 'none',
      compressedSize: 100,
      numRecords: n,
      firstRecord: prev ? prev.firstRecord + prev.numRecords : 0,
    });
    return list;
  }, []);

  it('splits on chunk boundaries and clips to the range', () => {
    expect(planChunkAlignedRanges(chunks, 0, 35, 1)).toEqual([
      [0, 10],
      [10, 5],
      [15, 20],
    ]);
    expect(planChunkAlignedRanges(chunks, 3, 20, 1)).toEqual([
      [3, 7],
      [10, 5],
      [15, 8],
    ]);
    expect(planChunkAlignedRanges(chunks, 3, 20, 250)).toEqual([
      [3, 12],
      [15, 8],
    ]);
    expect(planChunkAlignedRanges(chunks, 0, 35, 1e9)).toEqual([[0, 35]]);
    expect(planChunkAlignedRanges(chunks, 12, 0, 1)).toEqual([]);
  });
});
