import { checkInteger, checkNonEmptyString, checkOneOf } from '@edl/common';
import type { DeclaredEmbeddingTable } from '@edl/proto';
import type * as tfTypes from '@tensorflow/tfjs-core';
import type * as tflTypes from '@tensorflow/tfjs-layers';
import { tf, tfl } from '../../hooks/tfjs-commonjs.mjs';
import { activeEmbeddingContext, EmbeddingError } from './embedding-context.js';
import { type EmbeddingCombiner, gatherRows } from './gather-rows.js';

/** Arguments of {@link embedding}. */
export interface EmbeddingLayerArgs {
  /** The layer's name; also its table's, unless `table` names another. */
  readonly name: string;
  /** Floats per row (the table's `dim`). */
  readonly outputDim: number;
  /**
   * Where given, an id `x` looks up row `x % numBuckets`, so the table has at most this many rows;
   * otherwise ids are rows as they are, with no fixed input dimension.
   */
  readonly numBuckets?: number;
  /** Combines an example's ids (the last axis of the input); without one, every id gets its row. */
  readonly combiner?: EmbeddingCombiner;
  /** The table on the parameter servers; layers that name one table share its rows. Default `name`. */
  readonly table?: string;
  /** For the first layer of a `tfl.sequential` model: the shape of one example's ids. */
  readonly inputShape?: (number | null)[];
  /**
   * How the table's rows start on the parameter servers (default uniform in [-0.05, 0.05), as
   * `tfl.layers.embedding`); layers sharing a table must agree. The seed is the job's.
   */
  readonly initializer?: DeclaredEmbeddingTable['initializer'];
}

/**
 * An embedding layer whose table is not one of the model's weights: it lives on the parameter
 * servers, and each step puts the rows of the minibatch's ids in an `EmbeddingContext` before the
 * model runs (see `prepareEmbeddings`). The layer has no weights of its own; its `call` reads its
 * ids, finds their rows in the context's small rows variable and gathers them, so the gradient
 * with respect to that variable is the per-id rows gradient the step pushes.
 *
 * Ids are the input tensor's values: non-negative integers (int32, or float32 below 2^24).
 */
export class DistributedEmbedding extends tfl.layers.Layer {
  static readonly className = 'EdlDistributedEmbedding';
  readonly outputDim: number;
  readonly numBuckets: number | undefined;
  readonly combiner: EmbeddingCombiner | undefined;
  readonly table: string;
  readonly initializer: DeclaredEmbeddingTable['initializer'];

  constructor(args: EmbeddingLayerArgs) {
    const name = checkNonEmptyString(args?.name, 'embedding.name');
    super({ name, ...(args.inputShape === undefined ? {} : { inputShape: args.inputShape }) });
    this.outputDim = checkInteger(args.outputDim, 'embedding.outputDim', 1);
    this.numBuckets =
      args.numBuckets === undefined ? undefined : checkInteger(args.numBuckets, 'embedding.numBuckets', 1);
    this.combiner =
      args.combiner === undefined
        ? undefined
        : checkOneOf(args.combiner, 'embedding.combiner', ['sum', 'mean', 'sqrtn'] as const);
    this.table = args.table === undefined ? name : checkNonEmptyString(args.table, 'embedding.table');
    if (args.initializer !== undefined)
      checkOneOf(args.initializer.type, 'embedding.initializer.type', ['uniform', 'normal'] as const);
    this.initializer = args.initializer;
  }

  /** The table ids of raw input ids: themselves, or their buckets where `numBuckets` is set. */
  tableIds(rawIds: ArrayLike<number>): Float64Array {
    const ids = Float64Array.from(rawIds);
    const buckets = this.numBuckets;
    if (buckets !== undefined) for (let i = 0; i < ids.length; i++) ids[i] = (ids[i] as number) % buckets;
    return ids;
  }

  override computeOutputShape(inputShape: tflTypes.Shape | tflTypes.Shape[]): tflTypes.Shape {
    const ids = (Array.isArray(inputShape[0]) ? inputShape[0] : inputShape) as tflTypes.Shape;
    return [...(this.combiner === undefined ? ids : ids.slice(0, -1)), this.outputDim];
  }

  override call(inputs: tfTypes.Tensor | tfTypes.Tensor[]): tfTypes.Tensor {
    const input = Array.isArray(inputs) ? (inputs[0] as tfTypes.Tensor) : inputs;
    const context = activeEmbeddingContext();
    if (context === undefined)
      throw new EmbeddingError(
        'NO_EMBEDDING_CONTEXT',
        `Distributed embedding layer '${this.name}' ran outside an embedding context: its rows live on the parameter servers, so run the model through prepareEmbeddings and withEmbeddingContext`,
      );
    const { rows, indices } = context.gatherSource(this.table, this.tableIds(input.dataSync()), this.name);
    return gatherRows(rows, indices, input.shape, this.combiner);
  }

  override getConfig(): tfTypes.serialization.ConfigDict {
    return {
      ...super.getConfig(),
      outputDim: this.outputDim,
      table: this.table,
      ...(this.numBuckets === undefined ? {} : { numBuckets: this.numBuckets }),
      ...(this.combiner === undefined ? {} : { combiner: this.combiner }),
      ...(this.initializer === undefined ? {} : { initializer: { ...this.initializer } }),
    };
  }
}

tf.serialization.registerClass(DistributedEmbedding);

/**
 * Whether `layer` is a distributed embedding layer: an instance of this module's class, or of
 * another instance of this module's (a model definition loaded through tsx can get its own copy
 * of @edl/worker), recognised by its class name and its `tableIds`.
 */
export function isDistributedEmbedding(layer: unknown): layer is DistributedEmbedding {
  if (layer instanceof DistributedEmbedding) return true;
  const candidate = layer as Partial<DistributedEmbedding> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.getClassName === 'function' &&
    candidate.getClassName() === DistributedEmbedding.className &&
    typeof candidate.tableIds === 'function' &&
    typeof candidate.table === 'string' &&
    typeof candidate.outputDim === 'number'
  );
}

/**
 * A distributed embedding layer for model definitions: `embedding({ name, outputDim, numBuckets?,
 * combiner?, table? })`, used like `tfl.layers.embedding` but with the table on the parameter
 * servers, read and updated by the rows a minibatch uses.
 */
export function embedding(args: EmbeddingLayerArgs): DistributedEmbedding {
  return new DistributedEmbedding(args);
}
