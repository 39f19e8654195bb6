/**
 * @edl/common: what every elasticdl-ts package shares, at the bottom of the package order (it
 * imports no other @edl package): the argument checks with one message format, the {@link EdlError}
 * base class with a typed UPPER_SNAKE `code`, the optimizers (shared by the master and the workers
 * that mirror its updates), and a seeded PRNG.
 */
export {
  type ArgumentErrorKind,
  argumentError,
  checkBoolean,
  checkFunction,
  checkInteger,
  checkNonEmptyString,
  checkNumber,
  checkObject,
  checkOneOf,
  checkOptionalInteger,
  checkOptions,
  checkSafeInteger,
  integerRange,
  invalidArgument,
} from './checks.js';
export { describeValue, expectedMessage } from './describe-value.js';
export { EdlError, type EdlErrorOptions, hasErrorCode } from './edl-error.js';
export { fmix32 } from './fmix32.js';
export {
  type CosineDecay,
  type LearningRateDecay,
  learningRateFactor,
  type ResolvedLearningRateDecay,
  resolveLearningRateDecay,
} from './learning-rate-decay.js';
export {
  ADAGRAD_EPSILON,
  adagradUpdate,
  adamStepSize,
  adamUpdate,
  checkOptimizerParams,
  createOptimizer,
  momentumUpdate,
  OPTIMIZER_PARAMS,
  OPTIMIZER_TYPES,
  type Optimizer,
  type OptimizerConfig,
  type OptimizerSlots,
  type ResolvedOptimizerConfig,
  resolveOptimizerConfig,
  sgdUpdate,
} from './optimizers.js';
export { mulberry32, SeededRandom } from './seeded-random.js';
