import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { type Attribution, attributionOf, type UnitPlace, type UnitWindows } from '../attribution.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import { DatasetError } from '../errors.js';
import { hashIntegers } from '../hash.js';
import { epochSeed, IndexShuffler } from '../index-shuffle.js';
import { joinIndex, type MapNode, splitIndex } from '../map-node.js';
import type { MaybePromise } from '../maybe-promise.js';
import { Rng } from '../rng.js';
import { copyState, expectStateObject, stateCount, stateObject } from '../state.js';

/**
 * `MapDataset.shuffle`: a global shuffle by index permutation, with nothing loaded in memory. Epoch
 * `e` (indices `[e * n, (e + 1) * n)`, reached through `repeat`) uses the permutation keyed by
 * `epochSeed(seed, e)`, so every epoch has its own order and no epoch of one seed repeats an epoch of
 * a neighbouring seed.
 */
export class ShuffleNode<T> implements MapNode<T> {
  readonly #parent: MapNode<T>;
  readonly #seed: number;
  // The shuffler of the epoch read last: consecutive reads stay in one epoch.
  #shuffler: IndexShuffler | undefined;
  #epoch = -1;

  constructor(parent: MapNode<T>, seed: number) {
    this.#parent = parent;
    this.#seed = seed;
  }

  get length(): number {
    return this.#parent.length;
  }

  get(index: number): MaybePromise<T | undefined> {
    const length = this.#parent.length;
    const [epoch, offset] = splitIndex(index, length);
    if (this.#shuffler === undefined || this.#epoch !== epoch) {
      this.#shuffler = new IndexShuffler(length, epochSeed(this.#seed, epoch));
      this.#epoch = epoch;
    }
    return this.#parent.get(joinIndex(epoch, length, this.#shuffler.get(offset)));
  }

  toString(): string {
    return `${this.#parent} -> Shuffle(seed=${this.#seed})`;
  }
}

/** An element read past the end of a window of a re-issuable source, kept for the next window. */
interface CarriedPlace<T> {
  readonly value: T;
  readonly place: UnitPlace;
  readonly position: number;
}

/** Options of `IterDataset.shuffle`. */
export interface WindowShuffleOptions {
  /** Elements per window: each window of consecutive elements is shuffled on its own. */
  readonly bufferSize: number;
  /** Any safe integer; window `w` is shuffled with a generator keyed by `(seed, w)`. */
  readonly seed: number;
}

/**
 * `IterDataset.shuffle`: Grain's window shuffle. The parent is cut into windows of `bufferSize`
 * consecutive elements (the last may be shorter); a window is read whole, permuted by a Fisher-Yates
 * shuffle drawn from `Rng.forIndex(seed, window)`, and returned in that order.
 *
 * State: `{ parent, window, position }`: the parent's state at the start of the current window, the
 * window's number and how many of its elements were returned. No buffered element is saved, so the
 * shuffle's own part stays a few dozen bytes whatever `bufferSize`; a restore replays the window from
 * the parent (re-reading up to `bufferSize` elements) in the next `next()`.
 *
 * Over an attributed source (a worker's records, see attribution.ts) a window also ends where the
 * source's unit (task) changes, so records never move from one task to another. Such a source
 * cannot be restored, so the state there only reports the position. Where its units can be re-issued
 * from a position inside them (`Attribution.windows`), windows start every `bufferSize` records from
 * the unit's first record as created and are permuted by their place (`permuteUnitWindow`), so a
 * re-issued rest replays its first window from the window's start and skips the outputs already
 * consumed: every record comes out once, as Grain's replay from the window start does.
 */
export class WindowShuffleIterator<T> extends DatasetIteratorBase<T> {
  readonly #parent: DatasetIterator<T>;
  readonly #bufferSize: number;
  readonly #seed: number;
  /** The parent's state before the first element of the current window. */
  #windowStart: JsonObject;
  #window = 0;
  #position = 0;
  /** The shuffled current window; undefined until it is read (at the start, after a restore). */
  #buffer: T[] | undefined;
  /** Elements in the current window: `bufferSize`, or fewer where a unit ended it. */
  #windowEnd: number;
  readonly #units: Attribution | undefined;
  /** The element that ended the window being read (attributed sources only), with its place. */
  #carried: { readonly value: T } | CarriedPlace<T> | undefined;

  constructor(parent: DatasetIterator<T>, options: WindowShuffleOptions) {
    super();
    this.#parent = parent;
    this.#bufferSize = options.bufferSize;
    this.#seed = options.seed;
    this.#windowStart = parent.getState();
    this.#windowEnd = options.bufferSize;
    this.#units = attributionOf(parent);
    this.#units?.windows?.align(options.bufferSize);
  }

  protected async advance(): Promise<IteratorResult<T>> {
    if (this.#buffer === undefined) this.#buffer = await this.#readWindow();
    if (this.#position >= this.#buffer.length) return DONE;
    const value = this.#buffer[this.#position++]!;
    if (this.#position === this.#windowEnd) {
      // Start the next window now, so a state saved at a window boundary replays nothing.
      this.#window++;
      this.#position = 0;
      this.#windowStart = this.#parent.getState();
      this.#buffer = undefined;
      this.#windowEnd = this.#bufferSize;
    }
    return { done: false, value };
  }

  async #readWindow(): Promise<T[]> {
    if (this.#units?.windows !== undefined) return this.#readUnitWindow(this.#units.windows);
    const values: T[] = [];
    let unit = -1;
    if (this.#carried !== undefined) {
      values.push(this.#carried.value);
      unit = this.#units?.lastUnit() ?? -1;
      this.#carried = undefined;
    }
    while (values.length < this.#bufferSize) {
      const result = await this.#parent.next();
      if (result.done) break;
      if (this.#units !== undefined) {
        const next = this.#units.lastUnit();
        if (values.length > 0 && next !== unit) {
          this.#carried = { value: result.value };
          this.#windowEnd = values.length;
          break;
        }
        unit = next;
      }
      values.push(result.value);
    }
    return permuteWindow(values, this.#seed, this.#window);
  }

  /**
   * The next window of a re-issuable source: windows start every `bufferSize` records from their
   * unit's origin and are permuted by their place, and the outputs of a window's replayed records
   * (those before where a re-issued unit resumes) are skipped.
   */
  async #readUnitWindow(windows: UnitWindows): Promise<T[]> {
    const values: T[] = [];
    let first: { readonly place: UnitPlace; readonly position: number } | undefined;
    let replayed = 0;
    let end = 0;
    for (;;) {
      let value: T;
      let place: UnitPlace;
      let position: number;
      if (this.#carried !== undefined) {
        ({ value, place, position } = this.#carried as CarriedPlace<T>);
        this.#carried = undefined;
      } else {
        const result = await this.#parent.next();
        if (result.done) break;
        value = result.value;
        place = windows.lastPlace();
        position = windows.lastPosition();
      }
      if (first === undefined) {
        first = { place, position };
        end = unitWindowEnd(position, place.origin, this.#bufferSize);
      } else if (place.unit !== first.place.unit || position >= end) {
        this.#carried = { value, place, position } satisfies CarriedPlace<T>;
        break;
      }
      values.push(value);
      if (place.replay) replayed++;
    }
    this.#windowEnd = values.length;
    if (first === undefined) return values;
    // Replayed records come first (they precede the resume point): their outputs were consumed.
    this.#position = replayed;
    return permuteUnitWindow(values, this.#seed, first.place.key, first.position);
  }

  getState(): JsonObject {
    return { parent: copyState(this.#windowStart), window: this.#window, position: this.#position };
  }

  protected restore(state: JsonObject): void {
    const owner = 'WindowShuffle';
    const checked = expectStateObject(state, owner);
    const parentState = stateObject(checked, 'parent', owner);
    const window = stateCount(checked, 'window', owner);
    const position = stateCount(checked, 'position', owner);
    if (position > this.#bufferSize) {
      throw new DatasetError(
        'ERR_BAD_STATE',
        `Expected a position <= ${this.#bufferSize} for ${owner} state key 'position' but received ${position}`,
      );
    }
    this.#parent.setState(parentState);
    this.#windowStart = copyState(parentState);
    this.#window = window;
    this.#position = position;
    this.#buffer = undefined;
    this.#windowEnd = this.#bufferSize;
    this.#carried = undefined;
  }

  toString(): string {
    return `${this.#parent} -> WindowShuffle(bufferSize=${this.#bufferSize}, seed=${this.#seed})`;
  }
}

/**
 * Permutes `values` in place, as window `window` of a window shuffle keyed by `seed` does (Fisher-Yates
 * from `Rng.forIndex(seed, window)`), and returns them.
 */
export function permuteWindow<T>(values: T[], seed: number, window: number): T[] {
  return permuteWith(values, Rng.forIndex(seed, window));
}

/**
 * Permutes `values` in place as the window starting at record `windowStart` of a re-issuable unit
 * keyed `unitKey` (see `UnitPlace`): a function of nothing that changes when the unit is re-issued,
 * so a replayed window comes out in the order its first issue had.
 */
export function permuteUnitWindow<T>(values: T[], seed: number, unitKey: number, windowStart: number): T[] {
  const [key] = hashIntegers([seed, unitKey]);
  return permuteWith(values, Rng.forIndex(key, windowStart));
}

/**
 * The end (exclusive) of the window of `bufferSize` records, counted from `origin`, that holds record
 * `position`.
 */
export function unitWindowEnd(position: number, origin: number, bufferSize: number): number {
  return origin + (Math.floor((position - origin) / bufferSize) + 1) * bufferSize;
}

function permuteWith<T>(values: T[], rng: Rng): T[] {
  for (let i = values.length - 1; i > 0; i--) {
    const j = rng.integer(i + 1);
    const kept = values[i] as T;
    values[i] = values[j] as T;
    values[j] = kept;
  }
  return values;
}
