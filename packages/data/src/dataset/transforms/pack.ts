import { checkInteger, checkOptions } from '@edl/common';
import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import { DatasetError } from '../errors.js';
import { copyState, expectStateObject, stateCount, stateObject } from '../state.js';
import type { NumericSequence } from './padded-batch.js';

/** A record to pack: every feature (named by `K`) a numeric sequence, all of one length. */
export type PackableRecord<K extends string = string> = Readonly<Record<K, NumericSequence>>;

/** One packed row: each feature padded with 0 to the row length, and where each segment lies. */
export interface PackedRow<K extends string = string> {
  /** The features of the packed records, one after the other, then zeros. */
  readonly features: Record<K, number[]>;
  /** 1 for the first record of the row, 2 for the second, ...; 0 on padding. */
  readonly segmentIds: number[];
  /** The position of each value inside its record; 0 on padding. */
  readonly positions: number[];
}

/** Options of `pack`. */
export interface PackOptions {
  /** Length of a packed row; a longer record is cut to it, as Grain does. */
  readonly rowLength: number;
  /** Rows filled at once (Grain's `num_packing_bins`, default 1). */
  readonly numBins?: number;
}

/** `PackOptions` checked, with defaults. */
export interface ResolvedPackOptions {
  readonly rowLength: number;
  readonly numBins: number;
}

/** Checks `pack` options ("Expected a positive integer for options.rowLength ..."). */
export function resolvePackOptions(options: PackOptions): ResolvedPackOptions {
  const o = checkOptions(options ?? {}, 'options', ['rowLength', 'numBins']);
  return {
    rowLength: checkInteger(o.rowLength, 'options.rowLength', 1),
    numBins: o.numBins === undefined ? 1 : checkInteger(o.numBins, 'options.numBins', 1),
  };
}

interface Bin<K extends string> {
  readonly records: Array<{ record: PackableRecord<K>; length: number }>;
  used: number;
}

/**
 * `IterDataset.pack`: Grain's first-fit packing. Records go to the first of `numBins` open rows with
 * room for them; when a record fits in none, the rows are finished, returned one per `next()`, and the
 * record opens the next group of rows.
 *
 * State: `{ parent, rows }`: the parent's state before the first record of the group being returned
 * (or being filled), and the rows of that group already returned. A restore re-reads the group (at
 * most `numBins * rowLength` values' worth of records, plus the one that overflowed) and skips `rows`.
 */
export class PackIterator<K extends string> extends DatasetIteratorBase<PackedRow<K>> {
  readonly #parent: DatasetIterator<PackableRecord<K>>;
  readonly #options: ResolvedPackOptions;
  #bins: Bin<K>[] = [];
  /** The parent's state before the first record in `#bins`. */
  #groupStart: JsonObject | undefined;
  /** The record that fitted no bin, with the parent's state before it: it opens the next group. */
  #carry: { record: PackableRecord<K>; start: JsonObject } | undefined;
  /** Finished rows being returned, the state before their group and how many were returned. */
  #ready: PackedRow<K>[] = [];
  #readyStart: JsonObject | undefined;
  #returned = 0;
  /** Rows of the next finished group to skip (after a restore). */
  #skipRows = 0;

  constructor(parent: DatasetIterator<PackableRecord<K>>, options: ResolvedPackOptions) {
    super();
    this.#parent = parent;
    this.#options = options;
  }

  protected async advance(): Promise<IteratorResult<PackedRow<K>>> {
    for (;;) {
      if (this.#returned < this.#ready.length) return { done: false, value: this.#ready[this.#returned++]! };
      this.#ready = [];
      this.#returned = 0;
      let next = this.#carry;
      this.#carry = undefined;
      if (next === undefined) {
        const start = this.#parent.getState();
        const result = await this.#parent.next();
        if (result.done) {
          if (this.#bins.length === 0) return DONE;
          this.#finish();
          continue;
        }
        next = { record: result.value, start };
      }
      if (!this.#place(next.record, next.start)) {
        this.#carry = next;
        this.#finish();
      }
    }
  }

  /** Puts a record in the first bin with room (opening one if allowed); false when none fits. */
  #place(record: PackableRecord<K>, start: JsonObject): boolean {
    const length = Math.min(this.#recordLength(record), this.#options.rowLength);
    let bin = this.#bins.find((b) => b.used + length <= this.#options.rowLength);
    if (bin === undefined) {
      if (this.#bins.length >= this.#options.numBins) return false;
      bin = { records: [], used: 0 };
      this.#bins.push(bin);
    }
    if (this.#groupStart === undefined) this.#groupStart = start;
    bin.records.push({ record, length });
    bin.used += length;
    return true;
  }

  #recordLength(record: PackableRecord<K>): number {
    const features = Object.keys(record) as K[];
    if (features.length === 0) throw new DatasetError('ERR_BAD_ELEMENT', `${this}: a record has no features`);
    const length = record[features[0]!]!.length;
    for (const feature of features) {
      if (record[feature]!.length !== length) {
        throw new DatasetError(
          'ERR_BAD_ELEMENT',
          `${this}: feature '${feature}' has ${record[feature]!.length} values but '${features[0]}' has ${length}; a record's features must have one length`,
        );
      }
    }
    return length;
  }

  /** Turns the bins into rows to return and starts an empty group. */
  #finish(): void {
    this.#ready = this.#bins.map((bin) => this.#toRow(bin));
    this.#readyStart = this.#groupStart;
    this.#returned = Math.min(this.#skipRows, this.#ready.length);
    this.#skipRows = 0;
    this.#bins = [];
    this.#groupStart = undefined;
  }

  #toRow(bin: Bin<K>): PackedRow<K> {
    const rowLength = this.#options.rowLength;
    const features = {} as Record<K, number[]>;
    const segmentIds = new Array<number>(rowLength).fill(0);
    const positions = new Array<number>(rowLength).fill(0);
    let offset = 0;
    bin.records.forEach(({ record, length }, k) => {
      for (const name of Object.keys(record) as K[]) {
        const values = record[name];
        const row = features[name] ?? new Array<number>(rowLength).fill(0);
        features[name] = row;
        for (let i = 0; i < length; i++) row[offset + i] = values[i]!;
      }
      for (let i = 0; i < length; i++) {
        segmentIds[offset + i] = k + 1;
        positions[offset + i] = i;
      }
      offset += length;
    });
    return { features, segmentIds, positions };
  }

  getState(): JsonObject {
    if (this.#returned < this.#ready.length && this.#readyStart !== undefined) {
      return { parent: copyState(this.#readyStart), rows: this.#returned };
    }
    const start = this.#groupStart ?? this.#carry?.start;
    return { parent: start === undefined ? this.#parent.getState() : copyState(start), rows: this.#skipRows };
  }

  protected restore(state: JsonObject): void {
    const checked = expectStateObject(state, 'Pack');
    const rows = stateCount(checked, 'rows', 'Pack');
    this.#parent.setState(stateObject(checked, 'parent', 'Pack'));
    this.#bins = [];
    this.#groupStart = undefined;
    this.#carry = undefined;
    this.#ready = [];
    this.#readyStart = undefined;
    this.#returned = 0;
    this.#skipRows = rows;
  }

  toString(): string {
    return `${this.#parent} -> Pack(rowLength=${this.#options.rowLength}, numBins=${this.#options.numBins})`;
  }
}
