import { checkNumber, checkOneOf } from './checks.js';
import { describeValue } from './describe-value.js';

/**
 * The optimizers the master applies, with ElasticDL's (Keras') defaults. They live here, below both
 * the master and the worker, because a worker that mirrors the master's updates must run the very
 * same arithmetic: its replica has to match the master's model bit for bit.
 */
export type OptimizerConfig =
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
    };

/** Per-variable optimizer state (momentum's velocity, Adam's m and v), checkpointed with the weights. */
export type OptimizerSlots = Map<string, Map<string, Float32Array>>;

/**
 * An optimizer in plain typed-array math. `beginStep()` once per model version, then `apply` per
 * variable: `weights -= update(gradient)` in place.
 */
export interface Optimizer {
  readonly config: Required<OptimizerConfig>;
  /** Model updates applied so far (Adam's bias correction needs it). */
  step: number;
  readonly slots: OptimizerSlots;
  beginStep(): void;
  /** `lrScale` multiplies the learning rate of this update (staleness modulation); default 1. */
  apply(name: string, weights: Float32Array, gradient: Float32Array, lrScale?: number): void;
}

/** The parameters each optimizer type takes, besides `type`. */
export const OPTIMIZER_PARAMS = {
  sgd: ['learningRate'],
  momentum: ['learningRate', 'momentum', 'nesterov'],
  adam: ['learningRate', 'beta1', 'beta2', 'epsilon'],
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

/** Builds an optimizer after checking its parameters; a key that its type does not take is an error. */
export function createOptimizer(config: OptimizerConfig): Optimizer {
  const type = checkOneOf(config?.type, 'optimizer.type', ['sgd', 'momentum', 'adam'] as const);
  const given = config as unknown as Readonly<Record<string, unknown>>;
  checkOptimizerParams(
    type,
    Object.keys(given).filter((k) => k !== 'type' && given[k] !== undefined),
    `the ${type} optimizer`,
  );
  switch (type) {
    case 'sgd':
      return new Sgd({
        type,
        learningRate: checkNumber(config.learningRate ?? 0.01, 'optimizer.learningRate', -1e9),
      });
    case 'momentum': {
      const c = config as Extract<OptimizerConfig, { type: 'momentum' }>;
      return new Momentum({
        type,
        learningRate: checkNumber(c.learningRate ?? 0.01, 'optimizer.learningRate', -1e9),
        momentum: checkNumber(c.momentum ?? 0.9, 'optimizer.momentum', 0, 1),
        nesterov: c.nesterov ?? false,
      });
    }
    case 'adam': {
      const c = config as Extract<OptimizerConfig, { type: 'adam' }>;
      return new Adam({
        type,
        learningRate: checkNumber(c.learningRate ?? 0.001, 'optimizer.learningRate', -1e9),
        beta1: checkNumber(c.beta1 ?? 0.9, 'optimizer.beta1', 0, 1),
        beta2: checkNumber(c.beta2 ?? 0.999, 'optimizer.beta2', 0, 1),
        epsilon: checkNumber(c.epsilon ?? 1e-7, 'optimizer.epsilon', 0),
      });
    }
  }
}

function slot(slots: OptimizerSlots, variable: string, name: string, length: number): Float32Array {
  let byName = slots.get(variable);
  if (byName === undefined) {
    byName = new Map();
    slots.set(variable, byName);
  }
  let values = byName.get(name);
  if (values === undefined) {
    values = new Float32Array(length);
    byName.set(name, values);
  }
  return values;
}

/** w -= lr * g. (A negative learning rate is allowed: tests use -1 to make w count gradients.) */
class Sgd implements Optimizer {
  step = 0;
  readonly slots: OptimizerSlots = new Map();
  constructor(readonly config: Required<Extract<OptimizerConfig, { type: 'sgd' }>>) {}
  beginStep(): void {
    this.step++;
  }
  apply(_name: string, weights: Float32Array, gradient: Float32Array, lrScale = 1): void {
    const lr = this.config.learningRate * lrScale;
    for (let i = 0; i < weights.length; i++)
      weights[i] = (weights[i] as number) - lr * (gradient[i] as number);
  }
}

/** Keras SGD with momentum: v = m*v - lr*g; w += v (Nesterov: w += m*v - lr*g). */
class Momentum implements Optimizer {
  step = 0;
  readonly slots: OptimizerSlots = new Map();
  constructor(readonly config: Required<Extract<OptimizerConfig, { type: 'momentum' }>>) {}
  beginStep(): void {
    this.step++;
  }
  apply(name: string, weights: Float32Array, gradient: Float32Array, lrScale = 1): void {
    const { momentum: m, nesterov } = this.config;
    const lr = this.config.learningRate * lrScale;
    const v = slot(this.slots, name, 'momentum', weights.length);
    for (let i = 0; i < weights.length; i++) {
      const g = gradient[i] as number;
      const vi = m * (v[i] as number) - lr * g;
      v[i] = vi;
      weights[i] = (weights[i] as number) + (nesterov ? m * vi - lr * g : vi);
    }
  }
}

/** Adam (Kingma & Ba) with the bias correction folded into the step size, as Keras does. */
class Adam implements Optimizer {
  step = 0;
  readonly slots: OptimizerSlots = new Map();
  constructor(readonly config: Required<Extract<OptimizerConfig, { type: 'adam' }>>) {}
  beginStep(): void {
    this.step++;
  }
  apply(name: string, weights: Float32Array, gradient: Float32Array, lrScale = 1): void {
    const { beta1, beta2, epsilon } = this.config;
    const lr = this.config.learningRate * lrScale;
    const m = slot(this.slots, name, 'm', weights.length);
    const v = slot(this.slots, name, 'v', weights.length);
    const t = Math.max(1, this.step);
    const alpha = (lr * Math.sqrt(1 - beta2 ** t)) / (1 - beta1 ** t);
    for (let i = 0; i < weights.length; i++) {
      const g = gradient[i] as number;
      const mi = beta1 * (m[i] as number) + (1 - beta1) * g;
      const vi = beta2 * (v[i] as number) + (1 - beta2) * g * g;
      m[i] = mi;
      v[i] = vi;
      weights[i] = (weights[i] as number) - (alpha * mi) / (Math.sqrt(vi) + epsilon);
    }
  }
}
