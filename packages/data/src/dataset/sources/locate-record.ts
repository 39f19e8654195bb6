import { checkInteger } from '@edl/common';

/**
 * Where record `index` of files read one after another lives: the file, and the index within it.
 * `starts[f]` is the index of file f's first record and the last entry the total, so a source over
 * several files answers `get(i)` with one binary search.
 */
export function locateRecord(starts: readonly number[], index: number): [file: number, local: number] {
  const length = starts[starts.length - 1] as number;
  if (!(Number.isInteger(index) && index >= 0 && index < length)) {
    checkInteger(index, 'index', 0, Math.max(0, length - 1));
  }
  let lo = 0;
  let hi = starts.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if ((starts[mid] as number) <= index) lo = mid;
    else hi = mid - 1;
  }
  return [lo, index - (starts[lo] as number)];
}
