import { checkNumber, checkOneOf } from './checks.js';
import { describeValue } from './describe-value.js';
import {
  type LearningRateDecay,
  learningRateFactor,
  type ResolvedLearningRateDecay,
  resolveLearningRateDecay,
} from './learning-rate-decay.js';

/**
 * The optimizers the master applies, with ElasticDL's (Keras') defaults. They live here, below both
 * the master and the worker, because a worker that mirrors the master's updates must run the very
 * same arithmetic: its replica has to match the master's model bit for bit.
 */
export type OptimizerConfig = BaseOptimizerConfig & {
  /** A learning-rate schedule over the model's updates; left out, the rate stays `learningRate`. */
  readonly decay?: LearningRateDecay;
};

/** Each optimizer type's own parameters. */
type BaseOptimizerConfig =
  | { readonly type: 'sgd'; readonly learningRate?: number }
  | {
      readonly type: 'momentum';
      readonly learningRate?: number;
      readonly momentum?: number;
      readonly nesterov?: boolean;
    }
  | {
      readonly type: 'adam';
      readonly learningRate?: number;
      readonly beta1?: number;
      readonly beta2?: number;
      readonly epsilon?: number;
    }
  | {
      readonly type: 'adagrad';
      readonly learningRate?: number;
      /** The accumulator's starting value (TensorFlow.js' and Keras' name); it keeps early steps finite. */
      readonly initialAccumulatorValue?: number;
    };

/** A config with every default filled in: what an optimizer runs with and a checkpoint records. */
export type ResolvedOptimizerConfig = Required<BaseOptimizerConfig> & {
  readonly decay?: ResolvedLearningRateDecay;
};

/** Per-variable optimizer state (momentum's velocity, Adam's m and v), checkpointed with the weights. */
export type OptimizerSlots = Map<string, Map<string, Float32Array>>;

/**
 * An optimizer in plain typed-array math. `beginStep()` once per model version, then `apply` per
 * variable: `weights -= update(gradient)` in place.
 */
export interface Optimizer {
  readonly config: ResolvedOptimizerConfig;
  /** Model updates applied so far (Adam's bias correction needs it). */
  step: number;
  readonly slots: OptimizerSlots;
  beginStep(): void;
  /** `lrScale` multiplies the learning rate of this update (staleness modulation); default 1. */
  apply(name: string, weights: Float32Array, gradient: Float32Array, lrScale?: number): void;
}

/** The parameters each optimizer type takes, besides `type`. */
export const OPTIMIZER_PARAMS = {
  sgd: ['learningRate', 'decay'],
  momentum: ['learningRate', 'momentum', 'nesterov', 'decay'],
  adam: ['learningRate', 'beta1', 'beta2', 'epsilon', 'decay'],
  adagrad: ['learningRate', 'initialAccumulatorValue', 'decay'],
} as const satisfies Record<OptimizerConfig['type'], readonly string[]>;

/**
 * Throws a TypeError naming the first of `keys` that optimizer `type` does not take, the ones it
 * takes, and the one meant where only the spelling differs (`learning_rate` for `learningRate`):
 * a misspelt parameter would otherwise leave its default in force without a word.
 */
export function checkOptimizerParams(
  type: OptimizerConfig['type'],
  keys: Iterable<string>,
  where: string,
): void {
  const known: readonly string[] = OPTIMIZER_PARAMS[type];
  const loose = (k: string) => k.replace(/[-_]/g, '').toLowerCase();
  for (const key of keys) {
    if (known.includes(key)) continue;
    const meant = known.find((k) => loose(k) === loose(key));
    throw new TypeError(
      `Expected one of ${known.map((k) => `'${k}'`).join(', ')} for a parameter of ${where} but received ${describeValue(key)}${meant === undefined ? '' : ` (did you mean '${meant}'?)`}`,
    );
  }
}

/** The optimizer types, in the order error messages list them. */
export const OPTIMIZER_TYPES = [
  'sgd',
  'momentum',
  'adam',
  'adagrad',
] as const satisfies readonly OptimizerConfig['type'][];

/**
 * Checks a config's type and parameters and fills in the defaults (ElasticDL's, which are Keras';
 * Adagrad's are TensorFlow.js' and Keras': learning rate 0.001, accumulator 0.1). A key that the
 * type does not take is an error. The dense optimizers and the parameter servers' sparse kernels
 * both start from this, so one config means the same arithmetic in both.
 */
export function resolveOptimizerConfig(config: OptimizerConfig): ResolvedOptimizerConfig {
  const base = resolveBaseConfig(config);
  return config.decay === undefined
    ? base
    : { ...base, decay: resolveLearningRateDecay(config.decay, 'optimizer.decay') };
}

function resolveBaseConfig(config: OptimizerConfig): Required<BaseOptimizerConfig> {
  const type = checkOneOf(config?.type, 'optimizer.type', OPTIMIZER_TYPES);
  const given = config as unknown as Readonly<Record<string, unknown>>;
  checkOptimizerParams(
    type,
    Object.keys(given).filter((k) => k !== 'type' && given[k] !== undefined),
    `the ${type} optimizer`,
  );
  const learningRate = (fallback: number) =>
    checkNumber(config.learningRate ?? fallback, 'optimizer.learningRate', -1e9);
  switch (type) {
    case 'sgd':
      return { type, learningRate: learningRate(0.01) };
    case 'momentum': {
      const c = config as Extract<OptimizerConfig, { type: 'momentum' }>;
      return {
        type,
        learningRate: learningRate(0.01),
        momentum: checkNumber(c.momentum ?? 0.9, 'optimizer.momentum', 0, 1),
        nesterov: c.nesterov ?? false,
      };
    }
    case 'adam': {
      const c = config as Extract<OptimizerConfig, { type: 'adam' }>;
      return {
        type,
        learningRate: learningRate(0.001),
        beta1: checkNumber(c.beta1 ?? 0.9, 'optimizer.beta1', 0, 1),
        beta2: checkNumber(c.beta2 ?? 0.999, 'optimizer.beta2', 0, 1),
        epsilon: checkNumber(c.epsilon ?? 1e-7, 'optimizer.epsilon', 0),
      };
    }
    case 'adagrad': {
      const c = config as Extract<OptimizerConfig, { type: 'adagrad' }>;
      return {
        type,
        learningRate: learningRate(0.001),
        initialAccumulatorValue: checkNumber(
          c.initialAccumulatorValue ?? 0.1,
          'optimizer.initialAccumulatorValue',
          0,
        ),
      };
    }
  }
}

/** Builds an optimizer after checking its parameters; a key that its type does not take is an error. */
export function createOptimizer(config: OptimizerConfig): Optimizer {
  const resolved = resolveOptimizerConfig(config);
  switch (resolved.type) {
    case 'sgd':
      return new Sgd(resolved);
    case 'momentum':
      return new Momentum(resolved);
    case 'adam':
      return new Adam(resolved);
    case 'adagrad':
      return new Adagrad(resolved);
  }
}

function slot(
  slots: OptimizerSlots,
  variable: string,
  name: string,
  length: number,
  initialValue = 0,
): Float32Array {
  let byName = slots.get(variable);
  if (byName === undefined) {
    byName = new Map();
    slots.set(variable, byName);
  }
  let values = byName.get(name);
  if (values === undefined) {
    values = new Float32Array(length);
    if (initialValue !== 0) values.fill(initialValue);
    byName.set(name, values);
  }
  return values;
}

/*
 * The update rules over a range of `length` elements, each array with its own start offset. A
 * dense optimizer runs them over a whole variable; a parameter server's sparse kernel runs them over
 * one embedding row whose weights and slots lie side by side in one slab. One definition of each
 * rule makes a row's sparse update equal, bit for bit, to the dense update of that row alone.
 */

/** SGD over a range: w -= lr * g. */
export function sgdUpdate(
  weights: Float32Array,
  weightsAt: number,
  gradient: Float32Array,
  gradientAt: number,
  length: number,
  lr: number,
): void {
  for (let i = 0; i < length; i++)
    weights[weightsAt + i] = (weights[weightsAt + i] as number) - lr * (gradient[gradientAt + i] as number);
}

/** Keras momentum over a range, with the velocity `v` in its own array. */
export function momentumUpdate(
  weights: Float32Array,
  weightsAt: number,
  velocity: Float32Array,
  velocityAt: number,
  gradient: Float32Array,
  gradientAt: number,
  length: number,
  lr: number,
  config: Readonly<{ momentum: number; nesterov: boolean }>,
): void {
  const { momentum: m, nesterov } = config;
  for (let i = 0; i < length; i++) {
    const g = gradient[gradientAt + i] as number;
    const vi = m * (velocity[velocityAt + i] as number) - lr * g;
    velocity[velocityAt + i] = vi;
    weights[weightsAt + i] = (weights[weightsAt + i] as number) + (nesterov ? m * vi - lr * g : vi);
  }
}

/**
 * Adam over a range, given the step size `alpha` with the bias correction of step `t` folded in
 * ({@link adamStepSize}). The first moment is `m` from `mAt`, the second `v` from `vAt`; they may
 * be one array (a sparse row's slots).
 */
export function adamUpdate(
  weights: Float32Array,
  weightsAt: number,
  m: Float32Array,
  mAt: number,
  v: Float32Array,
  vAt: number,
  gradient: Float32Array,
  gradientAt: number,
  length: number,
  alpha: number,
  config: Readonly<{ beta1: number; beta2: number; epsilon: number }>,
): void {
  const { beta1, beta2, epsilon } = config;
  for (let i = 0; i < length; i++) {
    const g = gradient[gradientAt + i] as number;
    const mi = beta1 * (m[mAt + i] as number) + (1 - beta1) * g;
    const vi = beta2 * (v[vAt + i] as number) + (1 - beta2) * g * g;
    m[mAt + i] = mi;
    v[vAt + i] = vi;
    weights[weightsAt + i] = (weights[weightsAt + i] as number) - (alpha * mi) / (Math.sqrt(vi) + epsilon);
  }
}

/** Adam's step size at update `t` (1 for the first): lr * sqrt(1 - beta2^t) / (1 - beta1^t). */
export function adamStepSize(
  lr: number,
  t: number,
  config: Readonly<{ beta1: number; beta2: number }>,
): number {
  const step = Math.max(1, t);
  return (lr * Math.sqrt(1 - config.beta2 ** step)) / (1 - config.beta1 ** step);
}

/**
 * The constant TensorFlow.js adds under Adagrad's square root (its backend epsilon for float32);
 * TensorFlow.js' Adagrad takes no epsilon parameter, so neither does this one.
 */
export const ADAGRAD_EPSILON = 1e-7;

/** Adagrad over a range: acc += g^2; w -= lr * g / sqrt(acc + 1e-7), as TensorFlow.js does. */
export function adagradUpdate(
  weights: Float32Array,
  weightsAt: number,
  accumulator: Float32Array,
  accumulatorAt: number,
  gradient: Float32Array,
  gradientAt: number,
  length: number,
  lr: number,
): void {
  for (let i = 0; i < length; i++) {
    const g = gradient[gradientAt + i] as number;
    // The square root reads the float32 accumulator, as TensorFlow.js' does.
    const acc = Math.fround((accumulator[accumulatorAt + i] as number) + g * g);
    accumulator[accumulatorAt + i] = acc;
    weights[weightsAt + i] = (weights[weightsAt + i] as number) - (lr * g) / Math.sqrt(acc + ADAGRAD_EPSILON);
  }
}

/** What every optimizer shares: its config, the step count and the per-variable slots. */
abstract class SteppedOptimizer<C extends ResolvedOptimizerConfig> implements Optimizer {
  step = 0;
  readonly slots: OptimizerSlots = new Map();
  constructor(readonly config: C) {}
  beginStep(): void {
    this.step++;
  }
  /** The learning rate of the current update: the schedule's, times `lrScale`. */
  protected rate(lrScale: number): number {
    return this.config.learningRate * lrScale * learningRateFactor(this.config.decay, this.step - 1);
  }
  abstract apply(name: string, weights: Float32Array, gradient: Float32Array, lrScale?: number): void;
}

/** w -= lr * g. (A negative learning rate is allowed: tests use -1 to make w count gradients.) */
class Sgd extends SteppedOptimizer<Extract<ResolvedOptimizerConfig, { type: 'sgd' }>> {
  apply(_name: string, weights: Float32Array, gradient: Float32Array, lrScale = 1): void {
    sgdUpdate(weights, 0, gradient, 0, weights.length, this.rate(lrScale));
  }
}

/** Keras SGD with momentum: v = m*v - lr*g; w += v (Nesterov: w += m*v - lr*g). */
class Momentum extends SteppedOptimizer<Extract<ResolvedOptimizerConfig, { type: 'momentum' }>> {
  apply(name: string, weights: Float32Array, gradient: Float32Array, lrScale = 1): void {
    const v = slot(this.slots, name, 'momentum', weights.length);
    momentumUpdate(weights, 0, v, 0, gradient, 0, weights.length, this.rate(lrScale), this.config);
  }
}

/** Adam (Kingma & Ba) with the bias correction folded into the step size, as Keras does. */
class Adam extends SteppedOptimizer<Extract<ResolvedOptimizerConfig, { type: 'adam' }>> {
  apply(name: string, weights: Float32Array, gradient: Float32Array, lrScale = 1): void {
    const m = slot(this.slots, name, 'm', weights.length);
    const v = slot(this.slots, name, 'v', weights.length);
    const alpha = adamStepSize(this.rate(lrScale), this.step, this.config);
    adamUpdate(weights, 0, m, 0, v, 0, gradient, 0, weights.length, alpha, this.config);
  }
}

/**
 * Adagrad (Duchi et al.) as TensorFlow.js' `tf.train.adagrad`: a per-element accumulator of squared
 * gradients, starting at `initialAccumulatorValue`, scales each element's step down as it grows.
 */
class Adagrad extends SteppedOptimizer<Extract<ResolvedOptimizerConfig, { type: 'adagrad' }>> {
  apply(name: string, weights: Float32Array, gradient: Float32Array, lrScale = 1): void {
    const acc = slot(this.slots, name, 'accumulator', weights.length, this.config.initialAccumulatorValue);
    adagradUpdate(weights, 0, acc, 0, gradient, 0, weights.length, this.rate(lrScale));
  }
}
