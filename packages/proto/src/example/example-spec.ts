import { describeValue } from '@edl/common';
/** The value types of a `tf.train.Example` feature, as `tf.io.parse_example` names them. */
export type FeatureType = 'float32' | 'int64' | 'bytes';

/** A feature's default when an Example lacks it: one value (repeated to the shape) or all of them. */
export type FeatureDefault =
  | number
  | string
  | Uint8Array
  | readonly number[]
  | readonly (string | Uint8Array)[];

/**
 * How to parse one feature, in the spirit of `tf.io.FixedLenFeature` / `tf.io.VarLenFeature`:
 *
 * - with `shape` (e.g. `[]` for a scalar, `[28, 28]` for an image) the feature is dense: every
 *   Example must hold exactly `product(shape)` values, or lack the feature and have `default`;
 * - without `shape` it is ragged: any number of values per Example (none when missing), returned
 *   with row splits.
 */
export interface FeatureSpec {
  readonly type: FeatureType;
  readonly shape?: readonly number[];
  readonly default?: FeatureDefault;
}

/** Feature name -> how to parse it. Features of the Example not named here are skipped. */
export type ExampleSpec = Readonly<Record<string, FeatureSpec>>;

/** The typed array a feature type parses into: int64 values become exact doubles (|v| <= 2^53). */
export type FeatureValues<T extends FeatureType> = T extends 'float32'
  ? Float32Array
  : T extends 'int64'
    ? Float64Array
    : Uint8Array[];

/** One parsed feature: its values, row-major, and their shape (batch dimension first). */
export interface DenseFeature<T extends FeatureType = FeatureType> {
  readonly values: FeatureValues<T>;
  readonly shape: number[];
}

/** A ragged feature: example `i`'s values are `values[rowSplits[i], rowSplits[i + 1])`. */
export interface RaggedFeature<T extends FeatureType = FeatureType> {
  readonly values: FeatureValues<T>;
  readonly rowSplits: Uint32Array;
}

/** What {@link parseExamples} returns for a spec. */
export type ParsedExamples<S extends ExampleSpec> = {
  [K in keyof S]: S[K] extends { shape: readonly number[] }
    ? DenseFeature<S[K]['type']>
    : RaggedFeature<S[K]['type']>;
};

/** What {@link parseExample} returns for one Example: dense features' values, ragged features' values. */
export type ParsedExample<S extends ExampleSpec> = {
  [K in keyof S]: FeatureValues<S[K]['type']>;
};

/** A spec checked once and laid out for the parser. */
export interface CompiledFeature {
  readonly name: string;
  readonly key: Uint8Array;
  readonly type: FeatureType;
  /** Wire field number of the list in a Feature message: bytes 1, float 2, int64 3. */
  readonly field: 1 | 2 | 3;
  /** Values per Example for a dense feature; -1 for a ragged one. */
  readonly size: number;
  readonly shape: readonly number[] | undefined;
  /** The default, expanded to `size` values (dense features that have one). */
  readonly fill: readonly (number | Uint8Array)[] | undefined;
}

const TYPES: readonly FeatureType[] = ['float32', 'int64', 'bytes'];
const encoder = new TextEncoder();

/** Checks `spec` and lays it out for the parser. */
export function compileSpec(spec: ExampleSpec): CompiledFeature[] {
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) {
    throw new TypeError(`Expected an object of feature specs for spec but received ${describeValue(spec)}`);
  }
  const out: CompiledFeature[] = [];
  for (const [name, feature] of Object.entries(spec)) {
    const where = `spec[${JSON.stringify(name)}]`;
    if (feature === null || typeof feature !== 'object') {
      throw new TypeError(
        `Expected { type, shape?, default? } for ${where} but received ${describeValue(feature)}`,
      );
    }
    if (!TYPES.includes(feature.type)) {
      throw new TypeError(
        `Expected one of 'float32', 'int64', 'bytes' for ${where}.type but received ${describeValue(feature.type)}`,
      );
    }
    let size = -1;
    if (feature.shape !== undefined) {
      if (!Array.isArray(feature.shape) || !feature.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
        throw new TypeError(
          `Expected an array of non-negative integers for ${where}.shape but received ${describeValue(feature.shape)}`,
        );
      }
      size = feature.shape.reduce((a, b) => a * b, 1);
    }
    let fill: (number | Uint8Array)[] | undefined;
    if (feature.default !== undefined) {
      if (size < 0) {
        throw new TypeError(`Expected no default for ${where} (a ragged feature has none) but received one`);
      }
      const given = Array.isArray(feature.default) ? [...feature.default] : [feature.default];
      const values = given.map((v) => {
        if (feature.type === 'bytes') {
          if (typeof v === 'string') return encoder.encode(v);
          if (v instanceof Uint8Array) return v;
        } else if (typeof v === 'number') {
          return v;
        }
        throw new TypeError(
          `Expected ${feature.type === 'bytes' ? 'strings or Uint8Arrays' : 'numbers'} for ${where}.default but received ${describeValue(v)}`,
        );
      });
      if (values.length !== 1 && values.length !== size) {
        throw new RangeError(
          `Expected 1 or ${size} values for ${where}.default but received ${values.length}`,
        );
      }
      fill =
        values.length === size
          ? values
          : Array.from({ length: size }, () => values[0] as number | Uint8Array);
    }
    out.push({
      name,
      key: encoder.encode(name),
      type: feature.type,
      field: feature.type === 'bytes' ? 1 : feature.type === 'float32' ? 2 : 3,
      size,
      shape: feature.shape === undefined ? undefined : [...feature.shape],
      fill,
    });
  }
  return out;
}
