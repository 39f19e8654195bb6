import {
  adagradUpdate,
  adamStepSize,
  adamUpdate,
  learningRateFactor,
  momentumUpdate,
  type OptimizerConfig,
  type ResolvedOptimizerConfig,
  resolveOptimizerConfig,
  sgdUpdate,
} from '@edl/common';

/**
 * An optimizer for embedding rows, with its state kept per row: the same config and the same
 * update rules as the dense optimizers of `@edl/common` (one definition of each rule serves both),
 * applied only to the rows a gradient names.
 *
 * A row's record in a table slab is its `dim` weights followed by one `dim`-float block per slot in
 * {@link slotNames} order. SGD, momentum and Adagrad give a row exactly the update the dense
 * optimizer would give that row alone, and leave other rows alone: for SGD and Adagrad a zero
 * gradient changes nothing, so that is also what the dense optimizer does to the whole table. For
 * momentum it differs: the dense optimizer keeps moving rows whose gradient is zero by their
 * velocity, the sparse one moves only the rows in the gradient (as TensorFlow's sparse momentum).
 *
 * Adam is lazy Adam: only the touched rows' moments decay and advance, and the bias correction
 * uses the row's own update count (`rowStep`), not the model's step. Dense Adam decays every
 * element's moments at every step and corrects by the global step, so the two agree only for rows
 * touched at every step; for rare ids lazy Adam takes larger steps than dense Adam would.
 *
 * A learning-rate schedule (the config's `decay`, `--learning-rate-decay`) has no step count of its
 * own here: a shard's rows are pushed by many workers, out of order, so the rate of a push is the
 * schedule's at the model version the push names ({@link SparseOptimizer.rateFactor}), the rate the
 * dense optimizer applies at the update that follows that version.
 */
export interface SparseOptimizer {
  readonly config: ResolvedOptimizerConfig;
  /** The per-row slots, in the order they follow the weights: `momentum`, `accumulator`, `m` and `v`. */
  readonly slotNames: readonly string[];
  /** The value each slot's elements start at (Adagrad's accumulator starts at `initialAccumulatorValue`). */
  readonly slotInitialValues: readonly number[];
  /** Whether each row keeps its own update count (lazy Adam's bias correction needs it). */
  readonly countsRowSteps: boolean;
  /**
   * The schedule's factor on the learning rate for a push computed on `modelVersion`: what the
   * dense optimizer multiplies its rate by at update `modelVersion + 1` (1 without a schedule).
   */
  rateFactor(modelVersion: number): number;
  /**
   * Updates one row in place: the record at `data[at ..]`, the gradient at
   * `gradient[gradientAt .. gradientAt + dim)`. `rowStep` counts the row's updates including this
   * one (read only by lazy Adam); `lrScale` multiplies the learning rate (staleness modulation).
   */
  updateRow(
    data: Float32Array,
    at: number,
    dim: number,
    gradient: Float32Array,
    gradientAt: number,
    rowStep: number,
    lrScale: number,
  ): void;
}

/** Builds the sparse kernel of an optimizer config, checked and defaulted as the dense optimizers are. */
export function createSparseOptimizer(config: OptimizerConfig): SparseOptimizer {
  const resolved = resolveOptimizerConfig(config);
  const rateFactor = (modelVersion: number) => learningRateFactor(resolved.decay, modelVersion);
  switch (resolved.type) {
    case 'sgd':
      return {
        config: resolved,
        slotNames: [],
        slotInitialValues: [],
        countsRowSteps: false,
        rateFactor,
        updateRow(data, at, dim, gradient, gradientAt, _rowStep, lrScale) {
          sgdUpdate(data, at, gradient, gradientAt, dim, resolved.learningRate * lrScale);
        },
      };
    case 'momentum':
      return {
        config: resolved,
        slotNames: ['momentum'],
        slotInitialValues: [0],
        countsRowSteps: false,
        rateFactor,
        updateRow(data, at, dim, gradient, gradientAt, _rowStep, lrScale) {
          const lr = resolved.learningRate * lrScale;
          momentumUpdate(data, at, data, at + dim, gradient, gradientAt, dim, lr, resolved);
        },
      };
    case 'adagrad':
      return {
        config: resolved,
        slotNames: ['accumulator'],
        slotInitialValues: [resolved.initialAccumulatorValue],
        countsRowSteps: false,
        rateFactor,
        updateRow(data, at, dim, gradient, gradientAt, _rowStep, lrScale) {
          const lr = resolved.learningRate * lrScale;
          adagradUpdate(data, at, data, at + dim, gradient, gradientAt, dim, lr);
        },
      };
    case 'adam':
      return {
        config: resolved,
        slotNames: ['m', 'v'],
        slotInitialValues: [0, 0],
        countsRowSteps: true,
        rateFactor,
        updateRow(data, at, dim, gradient, gradientAt, rowStep, lrScale) {
          const alpha = adamStepSize(resolved.learningRate * lrScale, rowStep, resolved);
          adamUpdate(
            data,
            at,
            data,
            at + dim,
            data,
            at + 2 * dim,
            gradient,
            gradientAt,
            dim,
            alpha,
            resolved,
          );
        },
      };
  }
}
