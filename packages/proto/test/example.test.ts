import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  decodeExample,
  ExampleParseError,
  encodeExample,
  exampleToJson,
  parseExample,
  parseExamples,
} from '../src/example/index.js';

const GOLDEN = join(import.meta.dirname, '..', '..', 'recordio', 'test', 'golden-tfrecord');

/** The records of an uncompressed TFRecord file, split by the framing alone (CRCs are the reader's job). */
function tfrecordRecords(path: string): Uint8Array[] {
  const bytes = new Uint8Array(readFileSync(path));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; ) {
    const length = Number(view.getBigUint64(at, true));
    out.push(bytes.subarray(at + 12, at + 12 + length));
    at += 16 + length;
  }
  return out;
}

/** The same records as one batch: data + [begin, end) bounds, as RecordBatch lays them out. */
function asBatch(records: readonly Uint8Array[]): { data: Uint8Array; bounds: Uint32Array } {
  const data = new Uint8Array(records.reduce((n, r) => n + r.length + 3, 0));
  const bounds = new Uint32Array(2 * records.length);
  let at = 3; // unaligned on purpose
  records.forEach((r, i) => {
    data.set(r, at);
    bounds[2 * i] = at;
    at += r.length;
    bounds[2 * i + 1] = at;
    at += 3;
  });
  return { data, bounds };
}

interface JsonExample {
  features: {
    feature: Record<
      string,
      { floatList?: { value?: number[] }; int64List?: { value?: string[] }; bytesList?: { value?: string[] } }
    >;
  };
}

const records = tfrecordRecords(join(GOLDEN, 'examples.tfrecord'));
const expected: JsonExample[] = readFileSync(join(GOLDEN, 'examples.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as JsonExample);

const spec = {
  x: { type: 'float32', shape: [3] },
  label: { type: 'int64', shape: [] },
  id: { type: 'int64', shape: [] },
  name: { type: 'bytes', shape: [] },
  tags: { type: 'int64' },
  weight: { type: 'float32', shape: [], default: -1 },
} as const;

describe('parseExamples on Examples written by python3-protobuf', () => {
  it.each([
    ['an array of records', records],
    ['a record batch', asBatch(records)],
  ] as const)('%s: every feature matches protobuf JSON', (_, batch) => {
    const parsed = parseExamples(batch, spec);
    expect(parsed.x.shape).toEqual([24, 3]);
    expect(parsed.x.values).toBeInstanceOf(Float32Array);
    expect(parsed.label.values).toBeInstanceOf(Float64Array);
    expect(parsed.tags.rowSplits).toBeInstanceOf(Uint32Array);
    expected.forEach((ex, i) => {
      const f = ex.features.feature;
      expect(Array.from(parsed.x.values.subarray(3 * i, 3 * i + 3))).toEqual(f.x?.floatList?.value);
      expect(parsed.label.values[i]).toBe(Number(f.label?.int64List?.value?.[0]));
      expect(parsed.id.values[i]).toBe(Number(f.id?.int64List?.value?.[0]));
      expect(Buffer.from(parsed.name.values[i] as Uint8Array).toString('base64')).toBe(
        f.name?.bytesList?.value?.[0],
      );
      const splits = parsed.tags.rowSplits;
      expect(Array.from(parsed.tags.values.subarray(splits[i], splits[i + 1]))).toEqual(
        (f.tags?.int64List?.value ?? []).map(Number),
      );
      expect(parsed.weight.values[i]).toBe(f.weight === undefined ? -1 : f.weight.floatList?.value?.[0]);
    });
    expect(parsed.id.values[23]).toBe(-23 * 1000003);
  });

  it('parseExample maps one record, as a dataset map transform', () => {
    const parse = parseExample(spec);
    const one = parse(records[5] as Uint8Array);
    expect(Array.from(one.x)).toEqual([5 / 8, -5 / 4, 0.5]);
    expect(Array.from(one.tags)).toEqual([0]);
    expect(Array.from(one.label)).toEqual([2]);
  });

  it('exampleToJson prints the canonical proto3 JSON mapping, as protobuf does', () => {
    records.forEach((r, i) => {
      expect(JSON.parse(exampleToJson(r))).toEqual(expected[i]);
    });
    expect(
      exampleToJson(
        encodeExample({ x: { type: 'float32', values: [0.5] }, n: { type: 'int64', values: [17] } }),
      ),
    ).toBe('{"features":{"feature":{"x":{"floatList":{"value":[0.5]}},"n":{"int64List":{"value":["17"]}}}}}');
  });

  it('encodeExample round-trips through the generated decoder and the fast parser', () => {
    const bytes = encodeExample({
      v: { type: 'float32', values: new Float32Array([1.5, -2]) },
      big: { type: 'int64', values: [2 ** 53 - 1, -(2 ** 53 - 1)] },
      s: { type: 'bytes', values: ['héllo', new Uint8Array([0, 255])] },
    });
    const decoded = decodeExample(bytes);
    expect(decoded.features?.feature.v?.kind.case).toBe('floatList');
    const parsed = parseExamples([bytes], {
      v: { type: 'float32', shape: [2] },
      big: { type: 'int64', shape: [2] },
      s: { type: 'bytes' },
    });
    expect(Array.from(parsed.v.values)).toEqual([1.5, -2]);
    expect(Array.from(parsed.big.values)).toEqual([2 ** 53 - 1, -(2 ** 53 - 1)]);
    expect(parsed.s.values.map((b) => Buffer.from(b).toString('hex'))).toEqual([
      Buffer.from('héllo').toString('hex'),
      '00ff',
    ]);
  });
});

describe('parseExamples errors', () => {
  const bad = (batch: Uint8Array[], s: Parameters<typeof parseExamples>[1]) => {
    try {
      parseExamples(batch, s);
    } catch (error) {
      return error as ExampleParseError;
    }
    throw new Error('expected an error');
  };

  it('names the example and feature', () => {
    let e = bad(records.slice(0, 5), { weight: { type: 'float32', shape: [] } });
    expect(e).toBeInstanceOf(ExampleParseError);
    expect(e.code).toBe('BAD_EXAMPLE');
    expect(e.message).toBe('example 4: feature "weight" is missing and its spec has no default');
    expect([e.example, e.feature]).toEqual([4, 'weight']);
    e = bad(records.slice(0, 2), { x: { type: 'float32', shape: [2] } });
    expect(e.message).toBe('example 0: feature "x" has 3 values, but its shape [2] needs 2');
    e = bad(records.slice(0, 2), { x: { type: 'int64', shape: [3] } });
    expect(e.message).toBe('example 0: feature "x" is a float_list, but the spec says int64');
    e = bad([(records[0] as Uint8Array).subarray(0, 20)], { x: { type: 'float32', shape: [3] } });
    expect(e.message).toMatch(/^example 0: malformed Example: /);
    const huge = encodeExample({ n: { type: 'int64', values: [2n ** 60n] } });
    expect(bad([huge], { n: { type: 'int64', shape: [] } }).message).toBe(
      'example 0: malformed Example: int64 value beyond 2^53 (not exact as a number)',
    );
  });

  it('checks the spec', () => {
    expect(() => parseExamples(records, { x: { type: 'float64' as 'float32', shape: [3] } })).toThrow(
      new TypeError(`Expected one of 'float32', 'int64', 'bytes' for spec["x"].type but received "float64"`),
    );
    expect(() => parseExamples(records, { x: { type: 'float32', shape: [3], default: [1, 2] } })).toThrow(
      new RangeError('Expected 1 or 3 values for spec["x"].default but received 2'),
    );
  });
});
