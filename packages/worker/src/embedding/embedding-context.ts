import { EdlError } from '@edl/common';
import type * as tfTypes from '@tensorflow/tfjs-core';
import { tf } from '../../hooks/tfjs-commonjs.mjs';

/**
 * Stable codes of {@link EmbeddingError}: `NO_EMBEDDING_CONTEXT` (a distributed embedding layer ran
 * outside {@link withEmbeddingContext}), `ROWS_NOT_PULLED` (it met an id, or a table, whose rows
 * were not pulled for the step), `IDS_NOT_FROM_INPUT` (its ids are not a model input, so the step
 * loop cannot know them before the model runs), `TABLE_MISMATCH` (layers sharing a table disagree
 * on its dimension).
 */
export type EmbeddingErrorCode =
  | 'NO_EMBEDDING_CONTEXT'
  | 'ROWS_NOT_PULLED'
  | 'IDS_NOT_FROM_INPUT'
  | 'TABLE_MISMATCH';

/** A distributed embedding used against its protocol (see `prepareEmbeddings`). */
export class EmbeddingError extends EdlError<EmbeddingErrorCode> {
  override readonly name = 'EmbeddingError';
}

/** The rows gradient of one table for one step: what a worker pushes to the parameter servers. */
export interface RowGradients {
  readonly table: string;
  /** The unique ids pulled for the step. */
  readonly ids: Float64Array;
  /** `[ids.length, dim]` row-major: each id's gradient, its repeats in the minibatch summed. */
  readonly gradients: Float32Array;
}

interface PulledTable {
  readonly ids: Float64Array;
  readonly indexOf: Map<number, number>;
  readonly rows: tfTypes.Variable;
  readonly dim: number;
}

/**
 * The rows one step pulled, per table: a small trainable `tf.Variable` of `[unique ids, dim]` each,
 * which the distributed embedding layers gather from while the model runs, and whose gradients are
 * the (ids, rows gradient) pairs the step pushes. One context per step; dispose it after the push.
 */
export class EmbeddingContext {
  readonly #tables = new Map<string, PulledTable>();

  /** Adds `table`'s pulled rows (`[ids.length, dim]` row-major) for unique `ids`. */
  provide(table: string, ids: Float64Array, rows: Float32Array, dim: number): void {
    if (rows.length !== ids.length * dim)
      throw new RangeError(
        `Expected ${ids.length} x ${dim} = ${ids.length * dim} values for the rows of table '${table}' but received ${rows.length}`,
      );
    if (this.#tables.has(table))
      throw new RangeError(`The rows of table '${table}' are already in this step's context`);
    const indexOf = new Map<number, number>();
    ids.forEach((id, i) => {
      indexOf.set(id, i);
    });
    const rowsVariable = tf.variable(tf.tensor2d(rows, [ids.length, dim]), true);
    this.#tables.set(table, { ids, indexOf, rows: rowsVariable, dim });
  }

  /** The tables with rows in this context. */
  get tables(): string[] {
    return [...this.#tables.keys()];
  }

  /** The rows variables, to differentiate with respect to (with the dense variables). */
  get variables(): tfTypes.Variable[] {
    return [...this.#tables.values()].map((t) => t.rows);
  }

  /** `table`'s rows variable and the index of each of `ids` in it; `layer` names the caller in errors. */
  gatherSource(
    table: string,
    ids: ArrayLike<number>,
    layer: string,
  ): { rows: tfTypes.Variable; indices: Int32Array } {
    const pulled = this.#tables.get(table);
    if (pulled === undefined)
      throw new EmbeddingError(
        'ROWS_NOT_PULLED',
        `Embedding layer '${layer}' found no rows of table '${table}' in this step's context: the step must pull them before running the model`,
      );
    const indices = new Int32Array(ids.length);
    for (let i = 0; i < ids.length; i++) {
      const index = pulled.indexOf.get(ids[i] as number);
      if (index === undefined)
        throw new EmbeddingError(
          'ROWS_NOT_PULLED',
          `Embedding layer '${layer}' met id ${ids[i]} of table '${table}', which this step did not pull`,
        );
      indices[i] = index;
    }
    return { rows: pulled.rows, indices };
  }

  /**
   * The rows gradient of every table from the gradients `tf.variableGrads` returned (keyed by
   * variable name); a table the loss did not reach gets none.
   */
  async rowGradients(grads: tfTypes.NamedTensorMap): Promise<RowGradients[]> {
    const out: RowGradients[] = [];
    for (const [table, pulled] of this.#tables) {
      const grad = grads[pulled.rows.name];
      if (grad === undefined) continue;
      out.push({ table, ids: pulled.ids, gradients: (await grad.data()) as Float32Array });
    }
    return out;
  }

  /**
   * Bytes of rows this step moves: each unique id's row pulled and its gradient pushed,
   * `unique ids x dim x 4 x 2` summed over the tables (the ids themselves, 8 bytes each way, not
   * counted). The dense path moves the whole table twice instead.
   */
  rowBytesPerStep(): number {
    let bytes = 0;
    for (const { ids, dim } of this.#tables.values()) bytes += ids.length * dim * 4 * 2;
    return bytes;
  }

  /** Frees the rows variables. */
  dispose(): void {
    for (const { rows } of this.#tables.values()) rows.dispose();
    this.#tables.clear();
  }
}

/**
 * The slot of the context in use, on `globalThis` rather than in this module: a model definition
 * can reach another instance of this module than the worker's (loaded through tsx, or as a
 * separate copy of @edl/worker), and its layers must still see the worker's context.
 */
const ACTIVE = Symbol.for('@edl/worker.activeEmbeddingContext');
const slot = globalThis as { [ACTIVE]?: EmbeddingContext | undefined };

/**
 * Runs `fn` (which runs the model, synchronously) with `context` as the one the distributed
 * embedding layers read; the previous one is back afterwards. TensorFlow.js layers run
 * synchronously, so one slot is enough.
 */
export function withEmbeddingContext<T>(context: EmbeddingContext, fn: () => T): T {
  const previous = slot[ACTIVE];
  slot[ACTIVE] = context;
  try {
    return fn();
  } finally {
    slot[ACTIVE] = previous;
  }
}

/** The context of the {@link withEmbeddingContext} call in progress, if any. */
export function activeEmbeddingContext(): EmbeddingContext | undefined {
  return slot[ACTIVE];
}
