import { checkSafeInteger, invalidArgument } from '@edl/common';
import type { RandomAccessDataSource } from '../../protocols.js';

/** The integers `start, start + step, ...` below `stop` (above it for a negative step), like `range()`. */
export class RangeDataSource implements RandomAccessDataSource<number> {
  readonly start: number;
  readonly stop: number;
  readonly step: number;
  readonly length: number;

  /**
   * @param start - first value (safe integer).
   * @param stop - the bound, excluded (safe integer).
   * @param step - distance between values, non-zero (default 1).
   */
  constructor(start: number, stop: number, step = 1) {
    this.start = checkSafeInteger(start, 'start');
    this.stop = checkSafeInteger(stop, 'stop');
    this.step = checkSafeInteger(step, 'step');
    if (step === 0) invalidArgument('a non-zero integer', 'step', step);
    this.length = Math.max(0, Math.ceil((stop - start) / step));
  }

  get(index: number): number {
    return this.start + index * this.step;
  }

  /** A plain description from which the same source can be re-created. */
  describe(): { type: 'range'; start: number; stop: number; step: number } {
    return { type: 'range', start: this.start, stop: this.stop, step: this.step };
  }

  toString(): string {
    return `RangeDataSource(${this.start}, ${this.stop}, ${this.step})`;
  }
}
