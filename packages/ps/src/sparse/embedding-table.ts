import { checkInteger, checkNonEmptyString, checkSafeInteger, type OptimizerConfig } from '@edl/common';
import { isRowId, MAX_ROW_ID } from './id-hash.js';
import { RowInitializer, type RowInitializerConfig } from './row-initializer.js';
import { createSparseOptimizer, type SparseOptimizer } from './sparse-optimizer.js';

/** Options of an {@link EmbeddingTable}. */
export interface EmbeddingTableOptions {
  /** The table's name: it salts the initializer and names the table in errors and checkpoints. */
  readonly name: string;
  /** Floats per row. */
  readonly dim: number;
  /** The job's seed: with `name` and a row's id it fixes the row's initial value. */
  readonly seed: number;
  /** The optimizer whose sparse kernel {@link EmbeddingTable.push} applies. */
  readonly optimizer: OptimizerConfig;
  /** Default `{ type: 'uniform', scale: 0.05 }`. */
  readonly initializer?: RowInitializerConfig;
  /** Rows per memory slab, a power of two in [1, 2^20]; default 16384. */
  readonly rowsPerSlab?: number;
}

/** One slab's rows in slot order, as views into the table's memory (see {@link EmbeddingTable.slabViews}). */
export interface TableSlabView {
  /** The rows' ids. */
  readonly ids: Float64Array;
  /** Each row's record: `dim` weights, then one `dim`-float block per optimizer slot. */
  readonly records: Float32Array;
  /** Each row's update count, where the optimizer keeps one (lazy Adam). */
  readonly rowSteps: Uint32Array | undefined;
}

/** A slab whose first `rows` rows are in use; the last slab grows by doubling up to its full size. */
interface Slab {
  ids: Float64Array;
  records: Float32Array;
  rowSteps: Uint32Array | undefined;
}

const FIRST_SLAB_ROWS = 64;

/**
 * One embedding table of a parameter-server shard: rows of `dim` floats by integer id, created on
 * first use and updated by a sparse optimizer kernel with its state kept per row.
 *
 * Ids are numbers: non-negative integers up to 2^53 - 1 (`Number.MAX_SAFE_INTEGER`), passed as a
 * Float64Array. A double holds every such id exactly, a `Map` keys them without the cost of BigInt
 * keys, and a tensor of int32 or float32 ids converts to it without loss.
 *
 * Memory is a list of slabs of `rowsPerSlab` rows (Float32Array records, Float64Array ids), never
 * one object per row, with an id -> slot `Map`. Rows are never removed, so slots are dense: slot s
 * lies in slab `s / rowsPerSlab` at row `s % rowsPerSlab`. (A `Map` keyed by doubles was kept; an
 * open-addressing map was not measured against it.)
 */
export class EmbeddingTable {
  readonly name: string;
  readonly dim: number;
  readonly seed: number;
  readonly optimizer: SparseOptimizer;
  readonly initializer: RowInitializer;
  /** Floats per row record: the weights and the optimizer's slots. */
  readonly recordLength: number;
  readonly rowsPerSlab: number;
  readonly #slotOf = new Map<number, number>();
  readonly #slabs: Slab[] = [];
  readonly #slabShift: number;
  #rowCount = 0;

  constructor(options: EmbeddingTableOptions) {
    this.name = checkNonEmptyString(options?.name, 'options.name');
    this.dim = checkInteger(options.dim, 'options.dim', 1, 1 << 16);
    this.seed = checkSafeInteger(options.seed, 'options.seed');
    this.optimizer = createSparseOptimizer(options.optimizer);
    this.initializer = new RowInitializer(this.seed, this.name, options.initializer);
    this.recordLength = this.dim * (1 + this.optimizer.slotNames.length);
    this.rowsPerSlab = checkInteger(options.rowsPerSlab ?? 16384, 'options.rowsPerSlab', 1, 1 << 20);
    this.#slabShift = Math.log2(this.rowsPerSlab);
    if (!Number.isInteger(this.#slabShift))
      throw new RangeError(
        `Expected a power of two for options.rowsPerSlab but received ${this.rowsPerSlab}`,
      );
  }

  /** Rows created so far. */
  get rowCount(): number {
    return this.#rowCount;
  }

  /**
   * Bytes of the slabs allocated (records, ids and row steps). The id map is not counted: V8 does
   * not report it, and it adds some tens of bytes per row.
   */
  get allocatedBytes(): number {
    let bytes = 0;
    for (const slab of this.#slabs)
      bytes += slab.records.byteLength + slab.ids.byteLength + (slab.rowSteps?.byteLength ?? 0);
    return bytes;
  }

  /** Whether row `id` exists. */
  has(id: number): boolean {
    return this.#slotOf.has(id);
  }

  /**
   * The rows of `ids` for training, `[ids.length, dim]` row-major into `out` (allocated when not
   * given): rows not yet created are created with the initializer's value.
   */
  pull(ids: Float64Array, out?: Float32Array): Float32Array {
    const rows = this.#output(ids, out);
    for (let i = 0; i < ids.length; i++) {
      const slot = this.#slotOf.get(ids[i] as number) ?? this.#create(this.#checkedId(ids, i));
      this.#copyWeights(slot, rows, i * this.dim);
    }
    return rows;
  }

  /**
   * The rows of `ids` for evaluation and prediction, like {@link pull} but creating nothing: an id
   * without a row reads as the initializer's value for it, the value training would start it at.
   */
  lookup(ids: Float64Array, out?: Float32Array): Float32Array {
    const rows = this.#output(ids, out);
    for (let i = 0; i < ids.length; i++) {
      const slot = this.#slotOf.get(ids[i] as number);
      if (slot !== undefined) this.#copyWeights(slot, rows, i * this.dim);
      else this.initializer.fill(this.#checkedId(ids, i), rows, i * this.dim, this.dim);
    }
    return rows;
  }

  /**
   * Applies the sparse optimizer to the rows of `ids` with `gradients` (`[ids.length, dim]`,
   * row-major). Duplicate ids are merged here, their gradients summed (what the gradient of a
   * gather gives), so each row is updated once per push. A row not yet created is created first
   * (with the value a pull would have given it). `lrScale` multiplies the learning rate;
   * `modelVersion`, the version the gradient was computed on, picks the rate of the optimizer's
   * schedule (`decay`), as the dense optimizer's rate at the update after that version.
   */
  push(ids: Float64Array, gradients: Float32Array, lrScale = 1, modelVersion = 0): void {
    if (gradients.length !== ids.length * this.dim) {
      throw new RangeError(
        `Expected ${ids.length} x ${this.dim} = ${ids.length * this.dim} gradient values for the ${ids.length} ids pushed to embedding table '${this.name}' but received ${gradients.length}`,
      );
    }
    // Every id is checked before any row changes, so a bad push changes nothing.
    for (let i = 0; i < ids.length; i++) this.#checkedId(ids, i);
    const { ids: uniqueIds, gradients: merged } = mergeDuplicateIds(ids, gradients, this.dim);
    const countsSteps = this.optimizer.countsRowSteps;
    const scale = lrScale * this.optimizer.rateFactor(modelVersion);
    for (let i = 0; i < uniqueIds.length; i++) {
      const id = uniqueIds[i] as number;
      const slot = this.#slotOf.get(id) ?? this.#create(id);
      const slab = this.#slabs[slot >>> this.#slabShift] as Slab;
      const row = slot & (this.rowsPerSlab - 1);
      let rowStep = 0;
      if (countsSteps) {
        const steps = slab.rowSteps as Uint32Array;
        rowStep = (steps[row] as number) + 1;
        steps[row] = rowStep;
      }
      this.optimizer.updateRow(
        slab.records,
        row * this.recordLength,
        this.dim,
        merged,
        i * this.dim,
        rowStep,
        scale,
      );
    }
  }

  /**
   * A copy of row `id`'s record, or of one of its optimizer slots (`slot` from
   * `optimizer.slotNames`); undefined where the row does not exist.
   */
  readRow(id: number, slot?: string): Float32Array | undefined {
    const at = this.#slotOf.get(id);
    if (at === undefined) return undefined;
    let block = 0;
    if (slot !== undefined) {
      block = this.optimizer.slotNames.indexOf(slot) + 1;
      if (block === 0)
        throw new RangeError(
          `Expected one of ${this.optimizer.slotNames.map((s) => `'${s}'`).join(', ') || 'no slots'} for the slot of embedding table '${this.name}' but received '${slot}'`,
        );
    }
    const slab = this.#slabs[at >>> this.#slabShift] as Slab;
    const start = (at & (this.rowsPerSlab - 1)) * this.recordLength + block * this.dim;
    return slab.records.slice(start, start + this.dim);
  }

  /** Row `id`'s update count (lazy Adam's), 0 for other optimizers and for rows not created. */
  rowStep(id: number): number {
    const at = this.#slotOf.get(id);
    if (at === undefined) return 0;
    return (this.#slabs[at >>> this.#slabShift] as Slab).rowSteps?.[at & (this.rowsPerSlab - 1)] ?? 0;
  }

  /**
   * Every row in slot order, one view per slab over its rows in use: the memory itself, not a
   * copy, valid until the next call that creates rows. Checkpoints are written from these.
   */
  *slabViews(): Generator<TableSlabView> {
    for (let s = 0; s < this.#slabs.length; s++) {
      const slab = this.#slabs[s] as Slab;
      const rows = Math.min(this.rowsPerSlab, this.#rowCount - s * this.rowsPerSlab);
      yield {
        ids: slab.ids.subarray(0, rows),
        records: slab.records.subarray(0, rows * this.recordLength),
        rowSteps: slab.rowSteps?.subarray(0, rows),
      };
    }
  }

  /**
   * Adds rows with their optimizer state, as a checkpoint holds them: `records` is
   * `[ids.length, recordLength]`, `rowSteps` one count per row where the optimizer keeps them.
   * An id that already has a row is an error.
   */
  restoreRows(ids: Float64Array, records: Float32Array, rowSteps?: Uint32Array): void {
    if (records.length !== ids.length * this.recordLength)
      throw new RangeError(
        `Expected ${ids.length * this.recordLength} record values for ${ids.length} rows of embedding table '${this.name}' but received ${records.length}`,
      );
    if (
      this.optimizer.countsRowSteps !== (rowSteps !== undefined) ||
      (rowSteps && rowSteps.length !== ids.length)
    )
      throw new RangeError(
        `Expected ${this.optimizer.countsRowSteps ? `${ids.length} row steps` : 'no row steps'} for embedding table '${this.name}' (optimizer ${this.optimizer.config.type}) but received ${rowSteps ? rowSteps.length : 'none'}`,
      );
    for (let i = 0; i < ids.length; i++) {
      const id = this.#checkedId(ids, i);
      if (this.#slotOf.has(id))
        throw new RangeError(`Row ${id} of embedding table '${this.name}' is restored twice`);
      const slot = this.#allocate(id);
      const slab = this.#slabs[slot >>> this.#slabShift] as Slab;
      const row = slot & (this.rowsPerSlab - 1);
      slab.records.set(
        records.subarray(i * this.recordLength, (i + 1) * this.recordLength),
        row * this.recordLength,
      );
      if (slab.rowSteps && rowSteps) slab.rowSteps[row] = rowSteps[i] as number;
    }
  }

  #output(ids: Float64Array, out: Float32Array | undefined): Float32Array {
    const length = ids.length * this.dim;
    if (out === undefined) return new Float32Array(length);
    if (out.length !== length)
      throw new RangeError(
        `Expected an output of ${ids.length} x ${this.dim} = ${length} floats for embedding table '${this.name}' but received ${out.length}`,
      );
    return out;
  }

  #checkedId(ids: Float64Array, index: number): number {
    const id = ids[index] as number;
    if (!isRowId(id))
      throw new RangeError(
        `Expected an integer in [0, ${MAX_ROW_ID}] for id ${index} of embedding table '${this.name}' but received ${id}`,
      );
    return id;
  }

  #copyWeights(slot: number, out: Float32Array, at: number): void {
    const slab = this.#slabs[slot >>> this.#slabShift] as Slab;
    const start = (slot & (this.rowsPerSlab - 1)) * this.recordLength;
    out.set(slab.records.subarray(start, start + this.dim), at);
  }

  /** A new row for `id`, its weights from the initializer and its slots at their initial values. */
  #create(id: number): number {
    const slot = this.#allocate(id);
    const slab = this.#slabs[slot >>> this.#slabShift] as Slab;
    const start = (slot & (this.rowsPerSlab - 1)) * this.recordLength;
    this.initializer.fill(id, slab.records, start, this.dim);
    const initial = this.optimizer.slotInitialValues;
    for (let k = 0; k < initial.length; k++) {
      const value = initial[k] as number;
      if (value !== 0) slab.records.fill(value, start + (k + 1) * this.dim, start + (k + 2) * this.dim);
    }
    return slot;
  }

  /** Takes the next slot for `id`, growing the last slab or adding one; the record is zeros. */
  #allocate(id: number): number {
    const slot = this.#rowCount;
    const index = slot >>> this.#slabShift;
    const row = slot & (this.rowsPerSlab - 1);
    let slab = this.#slabs[index];
    if (slab === undefined) {
      slab = this.#newSlab(Math.min(FIRST_SLAB_ROWS, this.rowsPerSlab));
      this.#slabs.push(slab);
    } else if (row === slab.ids.length) {
      const grown = this.#newSlab(Math.min(2 * row, this.rowsPerSlab));
      grown.ids.set(slab.ids);
      grown.records.set(slab.records);
      grown.rowSteps?.set(slab.rowSteps as Uint32Array);
      slab = grown;
      this.#slabs[index] = slab;
    }
    slab.ids[row] = id;
    this.#slotOf.set(id, slot);
    this.#rowCount++;
    return slot;
  }

  #newSlab(rows: number): Slab {
    return {
      ids: new Float64Array(rows),
      records: new Float32Array(rows * this.recordLength),
      rowSteps: this.optimizer.countsRowSteps ? new Uint32Array(rows) : undefined,
    };
  }
}

/**
 * `ids` without repeats, in order of first appearance, with the gradient rows of repeated ids
 * summed in float32; the inputs themselves when there is no repeat.
 */
export function mergeDuplicateIds(
  ids: Float64Array,
  gradients: Float32Array,
  dim: number,
): { ids: Float64Array; gradients: Float32Array } {
  const firstIndex = new Map<number, number>();
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i] as number;
    if (!firstIndex.has(id)) firstIndex.set(id, firstIndex.size);
  }
  if (firstIndex.size === ids.length) return { ids, gradients };
  const uniqueIds = new Float64Array(firstIndex.keys());
  const merged = new Float32Array(firstIndex.size * dim);
  for (let i = 0; i < ids.length; i++) {
    const at = (firstIndex.get(ids[i] as number) as number) * dim;
    for (let j = 0; j < dim; j++)
      merged[at + j] = (merged[at + j] as number) + (gradients[i * dim + j] as number);
  }
  return { ids: uniqueIds, gradients: merged };
}
