import type { DatasetIterator, IterDatasetLike, JsonObject } from '../../protocols.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import { DatasetError } from '../errors.js';
import { copyState, expectStateObject, stateArray, stateCount, stateObject } from '../state.js';

/** Makes the dataset of one parent element, e.g. the records of one file. */
export type InterleaveFn<T, U> = (value: T) => IterDatasetLike<U>;

interface Slot<U> {
  /** Parent state just before the element this slot was opened for: how a restore finds it again. */
  readonly parentState: JsonObject;
  readonly iterator: DatasetIterator<U>;
}

/** A slot as saved: `null` when empty. */
type SlotState = { parentState: JsonObject; state: JsonObject } | null;

/**
 * `IterDataset.interleave`: keeps `cycleLength` datasets open (made by `fn` from consecutive parent
 * elements) and takes one element from each in turn. When a dataset runs out, its slot is refilled
 * from the parent and read at once; the iteration ends when the parent and every slot are exhausted.
 *
 * State: `{ parent, cursor, slots }` with `slots` an array of `cycleLength` entries, each `null`
 * (empty) or `{ parentState, state }`: the parent's state just before the slot's element and the
 * state of the slot's iterator. A restore re-reads each slot's element from a fresh parent iterator
 * (parents are deterministic), so no element has to be JSON itself; it happens in the next `next()`.
 */
export class InterleaveIterator<T, U> extends DatasetIteratorBase<U> {
  readonly #makeParent: () => DatasetIterator<T>;
  readonly #parent: DatasetIterator<T>;
  readonly #fn: InterleaveFn<T, U>;
  readonly #cycleLength: number;
  #slots: Array<Slot<U> | null>;
  #cursor = 0;
  #parentDone = false;
  /** Slots of a restored state not reopened yet. */
  #pending: SlotState[] | undefined;

  constructor(makeParent: () => DatasetIterator<T>, fn: InterleaveFn<T, U>, cycleLength: number) {
    super();
    this.#makeParent = makeParent;
    this.#parent = makeParent();
    this.#fn = fn;
    this.#cycleLength = cycleLength;
    this.#slots = new Array<Slot<U> | null>(cycleLength).fill(null);
  }

  protected async advance(): Promise<IteratorResult<U>> {
    if (this.#pending !== undefined) await this.#reopen(this.#pending);
    for (;;) {
      const cursor = this.#cursor;
      let slot: Slot<U> | null = this.#slots[cursor] ?? null;
      if (slot === null) {
        if (!this.#parentDone) slot = await this.#open(cursor);
        if (slot === null) {
          if (this.#slots.every((s) => s === null)) return DONE;
          this.#cursor = (cursor + 1) % this.#cycleLength;
          continue;
        }
      }
      const result = await slot.iterator.next();
      if (result.done) {
        this.#slots[cursor] = null;
        continue;
      }
      this.#cursor = (cursor + 1) % this.#cycleLength;
      return result;
    }
  }

  /** Opens the dataset of the next parent element in slot `index`; null when the parent is done. */
  async #open(index: number): Promise<Slot<U> | null> {
    const parentState = this.#parent.getState();
    const result = await this.#parent.next();
    if (result.done) {
      this.#parentDone = true;
      return null;
    }
    const slot = { parentState, iterator: this.#fn(result.value).iterator() };
    this.#slots[index] = slot;
    return slot;
  }

  async #reopen(saved: SlotState[]): Promise<void> {
    const slots: Array<Slot<U> | null> = [];
    for (const entry of saved) {
      if (entry === null) {
        slots.push(null);
        continue;
      }
      const parent = this.#makeParent();
      parent.setState(entry.parentState);
      const result = await parent.next();
      if (result.done) {
        throw new DatasetError('ERR_BAD_STATE', `Interleave state names a slot past the end of ${parent}`);
      }
      const iterator = this.#fn(result.value).iterator();
      iterator.setState(entry.state);
      slots.push({ parentState: entry.parentState, iterator });
    }
    this.#slots = slots;
    this.#pending = undefined;
  }

  getState(): JsonObject {
    const slots: SlotState[] =
      this.#pending !== undefined
        ? copyState(this.#pending)
        : this.#slots.map((slot) =>
            slot === null
              ? null
              : { parentState: copyState(slot.parentState), state: slot.iterator.getState() },
          );
    return { parent: this.#parent.getState(), cursor: this.#cursor, slots };
  }

  protected restore(state: JsonObject): void {
    const owner = 'Interleave';
    const checked = expectStateObject(state, owner);
    const parentState = stateObject(checked, 'parent', owner);
    const cursor = stateCount(checked, 'cursor', owner);
    const slots = stateArray(checked, 'slots', owner, this.#cycleLength).map((entry, k): SlotState => {
      if (entry === null) return null;
      const slot = expectStateObject(entry, `${owner} slot ${k}`);
      return {
        parentState: stateObject(slot, 'parentState', `${owner} slot ${k}`),
        state: stateObject(slot, 'state', `${owner} slot ${k}`),
      };
    });
    if (cursor >= this.#cycleLength) {
      throw new DatasetError(
        'ERR_BAD_STATE',
        `Expected a cursor below ${this.#cycleLength} for ${owner} but received ${cursor}`,
      );
    }
    this.#parent.setState(parentState);
    this.#cursor = cursor;
    this.#parentDone = false;
    this.#slots = new Array<Slot<U> | null>(this.#cycleLength).fill(null);
    this.#pending = copyState(slots);
  }

  toString(): string {
    return `${this.#parent} -> Interleave(cycleLength=${this.#cycleLength})`;
  }
}
