import { checkInteger } from '@edl/common';
import { encodeExample } from '@edl/proto/example';

/** How many features of each kind a click log's Examples carry. */
export interface ClickLogLayout {
  /** Categorical features, each one id per Example (default 3). */
  readonly categorical?: number;
  /** Numeric features, float32 (default 3). */
  readonly numeric?: number;
}

/** The layout of the zoo's click log: 3 categorical and 3 numeric features. */
export const CLICK_LOG_LAYOUT = { categorical: 3, numeric: 3 } as const;

/** A layout with its defaults filled in and checked. */
export function resolveClickLogLayout(layout: ClickLogLayout = {}): Required<ClickLogLayout> {
  return {
    categorical: checkInteger(
      layout.categorical ?? CLICK_LOG_LAYOUT.categorical,
      'layout.categorical',
      1,
      64,
    ),
    numeric: checkInteger(layout.numeric ?? CLICK_LOG_LAYOUT.numeric, 'layout.numeric', 0, 64),
  };
}

/**
 * The `tf.train.Example` layout of a click, in `tf.io.parse_example` terms: `ids` a
 * FixedLenFeature([categorical], int64) (one id per categorical feature), `numeric` a
 * FixedLenFeature([numeric], float32), `click` a FixedLenFeature([], int64), 0 or 1.
 */
export function clickLogSpec(layout: ClickLogLayout = {}) {
  const { categorical, numeric } = resolveClickLogLayout(layout);
  return {
    ids: { type: 'int64', shape: [categorical] },
    numeric: { type: 'float32', shape: [numeric] },
    click: { type: 'int64', shape: [] },
  } as const;
}

/** One click Example, serialized. */
export function encodeClickExample(
  ids: ArrayLike<number>,
  numeric: ArrayLike<number>,
  click: number,
): Uint8Array {
  return encodeExample({
    ids: { type: 'int64', values: ids },
    numeric: { type: 'float32', values: numeric },
    click: { type: 'int64', values: [click] },
  });
}
