import { EdlProtoError } from '../errors.js';
import {
  type CompiledFeature,
  compileSpec,
  type ExampleSpec,
  type ParsedExample,
  type ParsedExamples,
} from './example-spec.js';

/** An Example that does not parse as the spec asks (`code` `BAD_EXAMPLE`). */
export class ExampleParseError extends EdlProtoError {
  override readonly name: string = 'ExampleParseError';
  constructor(
    message: string,
    /** Index of the Example in the batch. */
    readonly example: number,
    /** The feature concerned, when there is one. */
    readonly feature: string | undefined,
  ) {
    super('BAD_EXAMPLE', message);
  }
}

/**
 * Serialized Examples: a record batch (`data` plus `[begin, end)` offsets in `bounds`, as
 * `@edl/recordio`'s `RecordBatch` and the readers' `readBatches` deliver them) or an array of
 * records.
 */
export type ExampleBatch =
  | { readonly data: Uint8Array; readonly bounds: Uint32Array }
  | readonly Uint8Array[];

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const TWO_32 = 2 ** 32;
const compiled = new WeakMap<object, CompiledFeature[]>();

function compiledFor(spec: ExampleSpec): CompiledFeature[] {
  let c = compiled.get(spec);
  if (c === undefined) {
    c = compileSpec(spec);
    compiled.set(spec, c);
  }
  return c;
}

/** Malformed wire data; turned into an ExampleParseError naming the example by the caller. */
class WireError extends Error {}

/** The decoding state: one buffer and a cursor, so the hot helpers take no objects. */
class Cursor {
  buf: Uint8Array = new Uint8Array(0);
  view: DataView = new DataView(new ArrayBuffer(0));
  pos = 0;

  reset(buf: Uint8Array): void {
    if (buf.buffer !== this.buf.buffer) this.view = new DataView(buf.buffer);
    this.buf = buf;
  }

  /** A varint of up to 32 significant bits (tags, lengths). */
  uint32(end: number): number {
    const buf = this.buf;
    let pos = this.pos;
    let result = 0;
    let shift = 0;
    for (;;) {
      if (pos >= end) throw new WireError('truncated varint');
      const b = buf[pos++] as number;
      if (shift < 28) result |= (b & 0x7f) << shift;
      else if (shift === 28) result += (b & 0x7f) * 2 ** 28;
      if (b < 0x80) break;
      shift += 7;
      if (shift > 63) throw new WireError('varint longer than 10 bytes');
    }
    this.pos = pos;
    return result;
  }

  /** A length-delimited field's end, checked against the enclosing `end`. */
  length(end: number): number {
    const n = this.uint32(end);
    const stop = this.pos + n;
    if (n > end - this.pos) throw new WireError('length past the end of the message');
    return stop;
  }

  /** An int64 varint as an exact double; throws beyond 2^53. */
  int64(end: number): number {
    const buf = this.buf;
    let pos = this.pos;
    let lo = 0;
    let hi = 0;
    let shift = 0;
    for (;;) {
      if (pos >= end) throw new WireError('truncated varint');
      const b = buf[pos++] as number;
      if (shift < 28) lo |= (b & 0x7f) << shift;
      else if (shift === 28) {
        lo |= (b & 0x0f) << 28;
        hi |= (b & 0x7f) >> 4;
      } else hi |= (b & 0x7f) << (shift - 32);
      if (b < 0x80) break;
      shift += 7;
      if (shift > 63) throw new WireError('varint longer than 10 bytes');
    }
    this.pos = pos;
    lo >>>= 0;
    hi >>>= 0;
    let value: number;
    if (hi & 0x80000000) value = -((~hi >>> 0) * TWO_32 + (~lo >>> 0) + 1);
    else value = hi * TWO_32 + lo;
    if (!Number.isSafeInteger(value)) throw new WireError('int64 value beyond 2^53 (not exact as a number)');
    return value;
  }

  /** Skips a field of wire type `wire`. */
  skip(wire: number, end: number): void {
    switch (wire) {
      case 0:
        this.int64Skip(end);
        return;
      case 1:
        this.pos += 8;
        break;
      case 2:
        this.pos = this.length(end);
        return;
      case 5:
        this.pos += 4;
        break;
      default:
        throw new WireError(`unsupported wire type ${wire}`);
    }
    if (this.pos > end) throw new WireError('fixed-size field past the end of the message');
  }

  int64Skip(end: number): void {
    const buf = this.buf;
    let pos = this.pos;
    for (let i = 0; ; i++) {
      if (pos >= end || i >= 10) throw new WireError('bad varint');
      if ((buf[pos++] as number) < 0x80) break;
    }
    this.pos = pos;
  }
}

/** Output being filled for one feature. */
interface Sink {
  readonly f: CompiledFeature;
  dense: Float32Array | Float64Array | Uint8Array[] | undefined;
  ragged: (number | Uint8Array)[];
  splits: Uint32Array | undefined;
}

/**
 * Parses serialized `tf.train.Example`s in one call, into one typed array per feature (`float32`
 * -> Float32Array, `int64` -> Float64Array of exact integers, `bytes` -> Uint8Array views into the
 * batch), like `tf.io.parse_example`. Features of the Examples that the spec does not name are
 * skipped without being decoded. A missing dense feature takes its `default` (an error without
 * one); a dense feature with the wrong number of values, a feature of another type than the spec
 * says, and malformed wire data are {@link ExampleParseError}s naming the Example and feature.
 *
 * ```ts
 * const spec = { image: { type: 'float32', shape: [28, 28] }, label: { type: 'int64', shape: [] } } as const;
 * for await (const batch of reader.batches()) {
 *   const { image, label } = parseExamples(batch, spec); // image.values: Float32Array of n*784
 *   batch.release();
 * }
 * ```
 */
export function parseExamples<S extends ExampleSpec>(batch: ExampleBatch, spec: S): ParsedExamples<S> {
  const features = compiledFor(spec);
  const isArray = Array.isArray(batch);
  const bounds = isArray ? undefined : (batch as { bounds: Uint32Array }).bounds;
  if (
    !isArray &&
    !(bounds instanceof Uint32Array && (batch as { data: unknown }).data instanceof Uint8Array)
  ) {
    throw new TypeError('Expected a record batch { data, bounds } or an array of Uint8Array for batch');
  }
  const n = isArray ? (batch as readonly Uint8Array[]).length : (bounds as Uint32Array).length >>> 1;
  const sinks: Sink[] = features.map((f) => ({
    f,
    dense:
      f.size < 0
        ? undefined
        : f.type === 'float32'
          ? new Float32Array(n * f.size)
          : f.type === 'int64'
            ? new Float64Array(n * f.size)
            : new Array<Uint8Array>(n * f.size),
    ragged: [],
    splits: f.size < 0 ? new Uint32Array(n + 1) : undefined,
  }));
  const cursor = new Cursor();
  const starts = new Int32Array(features.length);
  const ends = new Int32Array(features.length);
  let data: Uint8Array | undefined;
  let whole: Uint8Array | undefined;
  if (!isArray) {
    data = (batch as { data: Uint8Array }).data;
    cursor.reset(data);
    // Positions are absolute within the ArrayBuffer, so that views and aligned reads are direct.
    whole = data.byteOffset === 0 ? data : new Uint8Array(data.buffer);
    cursor.buf = whole;
  }
  for (let i = 0; i < n; i++) {
    let begin: number;
    let end: number;
    if (isArray) {
      const record = (batch as readonly Uint8Array[])[i];
      if (!(record instanceof Uint8Array)) {
        throw new TypeError(`Expected a Uint8Array for batch[${i}] but received ${typeof record}`);
      }
      cursor.reset(record);
      begin = record.byteOffset;
      end = begin + record.byteLength;
      // Positions are absolute within the record's ArrayBuffer.
      cursor.buf = new Uint8Array(record.buffer);
    } else {
      begin = (data as Uint8Array).byteOffset + ((bounds as Uint32Array)[2 * i] as number);
      end = (data as Uint8Array).byteOffset + ((bounds as Uint32Array)[2 * i + 1] as number);
      if (end > (whole as Uint8Array).length || begin > end) {
        throw new RangeError(`Expected bounds within data for batch.bounds[${2 * i}..${2 * i + 1}]`);
      }
    }
    starts.fill(-1);
    try {
      locate(cursor, begin, end, features, starts, ends);
      for (let k = 0; k < sinks.length; k++)
        fill(cursor, sinks[k] as Sink, i, starts[k] as number, ends[k] as number);
    } catch (error) {
      if (error instanceof WireError) {
        throw new ExampleParseError(`example ${i}: malformed Example: ${error.message}`, i, undefined);
      }
      throw error;
    }
  }
  const out: Record<string, unknown> = {};
  for (const sink of sinks) {
    const f = sink.f;
    if (f.size >= 0) {
      out[f.name] = { values: sink.dense, shape: [n, ...(f.shape as number[])] };
    } else {
      const values =
        f.type === 'float32'
          ? Float32Array.from(sink.ragged as number[])
          : f.type === 'int64'
            ? Float64Array.from(sink.ragged as number[])
            : sink.ragged;
      out[f.name] = { values, rowSplits: sink.splits };
    }
  }
  return out as ParsedExamples<S>;
}

/**
 * A map transform for datasets of serialized Examples: `records.map(parseExample(spec))` gives,
 * per Example, each feature's values (a dense feature's `product(shape)` values, a ragged
 * feature's own). Same rules and errors as {@link parseExamples}; for whole batches, prefer
 * `parseExamples` (one call per batch).
 */
export function parseExample<S extends ExampleSpec>(spec: S): (record: Uint8Array) => ParsedExample<S> {
  const features = compileSpec(spec);
  compiled.set(spec, features);
  return (record: Uint8Array) => {
    const parsed = parseExamples([record], spec) as Record<string, { values: unknown }>;
    const out: Record<string, unknown> = {};
    for (const f of features) out[f.name] = (parsed[f.name] as { values: unknown }).values;
    return out as ParsedExample<S>;
  };
}

/** Finds each spec feature's Feature message in the Example at [begin, end) (last one wins). */
function locate(
  c: Cursor,
  begin: number,
  end: number,
  features: readonly CompiledFeature[],
  starts: Int32Array,
  ends: Int32Array,
): void {
  const buf = c.buf;
  c.pos = begin;
  while (c.pos < end) {
    const tag = c.uint32(end);
    if (tag !== 0x0a) {
      c.skip(tag & 7, end);
      continue;
    }
    // Example.features (field 1): entries of the map<string, Feature>.
    const fend = c.length(end);
    while (c.pos < fend) {
      const t = c.uint32(fend);
      if (t !== 0x0a) {
        c.skip(t & 7, fend);
        continue;
      }
      const eend = c.length(fend);
      let keyStart = -1;
      let keyEnd = -1;
      let valStart = -1;
      let valEnd = -1;
      while (c.pos < eend) {
        const et = c.uint32(eend);
        if (et === 0x0a) {
          keyEnd = c.length(eend);
          keyStart = c.pos;
          c.pos = keyEnd;
        } else if (et === 0x12) {
          valEnd = c.length(eend);
          valStart = c.pos;
          c.pos = valEnd;
        } else {
          c.skip(et & 7, eend);
        }
      }
      if (keyStart < 0) {
        keyStart = 0;
        keyEnd = 0;
      }
      const keyLength = keyEnd - keyStart;
      for (let k = 0; k < features.length; k++) {
        const key = (features[k] as CompiledFeature).key;
        if (key.length !== keyLength) continue;
        let same = true;
        for (let j = 0; j < keyLength; j++) {
          if (key[j] !== buf[keyStart + j]) {
            same = false;
            break;
          }
        }
        if (same) {
          // An entry without a value is an empty Feature.
          starts[k] = valStart < 0 ? eend : valStart;
          ends[k] = valStart < 0 ? eend : valEnd;
          break;
        }
      }
    }
  }
}

const KIND_NAMES = ['', 'bytes_list', 'float_list', 'int64_list'];

/** Decodes one feature of example `i` into its sink (start < 0: the feature is missing). */
function fill(c: Cursor, sink: Sink, i: number, start: number, end: number): void {
  const f = sink.f;
  if (start < 0) {
    if (f.size < 0) {
      (sink.splits as Uint32Array)[i + 1] = sink.ragged.length;
      return;
    }
    if (f.fill === undefined) {
      throw new ExampleParseError(
        `example ${i}: feature ${JSON.stringify(f.name)} is missing and its spec has no default`,
        i,
        f.name,
      );
    }
    const out = sink.dense as (number | Uint8Array)[];
    const at = i * f.size;
    for (let j = 0; j < f.size; j++) out[at + j] = f.fill[j] as number | Uint8Array;
    return;
  }
  // Feature: the last list field set wins (oneof); none set is an empty list.
  let kind = 0;
  let listStart = 0;
  let listEnd = 0;
  c.pos = start;
  while (c.pos < end) {
    const tag = c.uint32(end);
    const field = tag >>> 3;
    if ((tag & 7) === 2 && field >= 1 && field <= 3) {
      listEnd = c.length(end);
      listStart = c.pos;
      kind = field;
      c.pos = listEnd;
    } else {
      c.skip(tag & 7, end);
    }
  }
  if (kind !== 0 && kind !== f.field) {
    throw new ExampleParseError(
      `example ${i}: feature ${JSON.stringify(f.name)} is a ${KIND_NAMES[kind]}, but the spec says ${f.type}`,
      i,
      f.name,
    );
  }
  const dense = f.size >= 0;
  const base = dense ? i * f.size : 0;
  let count = 0;
  const limit = dense ? f.size : Number.POSITIVE_INFINITY;
  c.pos = listStart;
  const stop = kind === 0 ? listStart : listEnd;
  const ragged = sink.ragged;
  while (c.pos < stop) {
    const tag = c.uint32(stop);
    if (tag >>> 3 !== 1) {
      c.skip(tag & 7, stop);
      continue;
    }
    const wire = tag & 7;
    if (f.type === 'float32') {
      if (wire === 2) {
        const e = c.length(stop);
        const bytes = e - c.pos;
        if (bytes % 4 !== 0) throw new WireError('packed floats not a multiple of 4 bytes');
        const k = bytes / 4;
        if (dense) {
          if (count + k <= limit) {
            const out = sink.dense as Float32Array;
            if (LITTLE_ENDIAN && c.pos % 4 === 0) {
              out.set(new Float32Array(c.buf.buffer, c.pos, k), base + count);
            } else {
              for (let j = 0; j < k; j++) out[base + count + j] = c.view.getFloat32(c.pos + 4 * j, true);
            }
          }
        } else {
          for (let j = 0; j < k; j++) ragged.push(c.view.getFloat32(c.pos + 4 * j, true));
        }
        count += k;
        c.pos = e;
      } else if (wire === 5) {
        if (c.pos + 4 > stop) throw new WireError('float past the end of the message');
        const v = c.view.getFloat32(c.pos, true);
        c.pos += 4;
        if (dense) {
          if (count < limit) (sink.dense as Float32Array)[base + count] = v;
        } else ragged.push(v);
        count++;
      } else {
        c.skip(wire, stop);
      }
    } else if (f.type === 'int64') {
      if (wire === 2) {
        const e = c.length(stop);
        while (c.pos < e) {
          const v = c.int64(e);
          if (dense) {
            if (count < limit) (sink.dense as Float64Array)[base + count] = v;
          } else ragged.push(v);
          count++;
        }
      } else if (wire === 0) {
        const v = c.int64(stop);
        if (dense) {
          if (count < limit) (sink.dense as Float64Array)[base + count] = v;
        } else ragged.push(v);
        count++;
      } else {
        c.skip(wire, stop);
      }
    } else if (wire === 2) {
      const e = c.length(stop);
      const v = new Uint8Array(c.buf.buffer, c.pos, e - c.pos);
      c.pos = e;
      if (dense) {
        if (count < limit) (sink.dense as Uint8Array[])[base + count] = v;
      } else ragged.push(v);
      count++;
    } else {
      c.skip(wire, stop);
    }
  }
  if (dense) {
    if (count !== f.size) {
      throw new ExampleParseError(
        `example ${i}: feature ${JSON.stringify(f.name)} has ${count} values, but its shape [${(f.shape as number[]).join(', ')}] needs ${f.size}`,
        i,
        f.name,
      );
    }
  } else {
    (sink.splits as Uint32Array)[i + 1] = ragged.length;
  }
}
