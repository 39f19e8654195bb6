import { checkInteger, checkNumber, checkOneOf } from './checks.js';

/**
 * A learning-rate schedule over the model's updates, as Keras' `CosineDecay(initial_learning_rate,
 * decay_steps, alpha)`: the rate falls from the optimizer's `learningRate` along half a cosine to
 * `alpha` times it at update `steps`, and stays there. At a fixed rate, asynchronous training ends
 * wherever the noise of its last stale updates leaves the model; decaying the rate lets it settle
 * (see docs/worker.md, "Accuracy of asynchronous training").
 */
export interface CosineDecay {
  readonly type: 'cosine';
  /** Updates over which the rate decays (Keras' `decay_steps`); at least 1. */
  readonly steps: number;
  /** The final rate as a fraction of `learningRate` (Keras' `alpha`; default 0). */
  readonly alpha?: number;
}

/** The learning-rate schedules an optimizer config may name in `decay`. */
export type LearningRateDecay = CosineDecay;

/** A schedule with every default filled in, as an optimizer runs it and a checkpoint records it. */
export type ResolvedLearningRateDecay = Required<LearningRateDecay>;

/** Checks a `decay` value (`where` names it in errors) and fills in its defaults. */
export function resolveLearningRateDecay(value: LearningRateDecay, where: string): ResolvedLearningRateDecay {
  if (value === null || typeof value !== 'object')
    throw new TypeError(`Expected an object like {"type":"cosine","steps":1000} for ${where}`);
  const type = checkOneOf(value.type, `${where}.type`, ['cosine'] as const);
  const known = ['type', 'steps', 'alpha'];
  const unknown = Object.keys(value).find((k) => !known.includes(k));
  if (unknown !== undefined)
    throw new TypeError(`Expected only 'type', 'steps' and 'alpha' in ${where} but received '${unknown}'`);
  return {
    type,
    steps: checkInteger(value.steps, `${where}.steps`, 1),
    alpha: checkNumber(value.alpha ?? 0, `${where}.alpha`, 0, 1),
  };
}

/**
 * The factor on the learning rate of the update that follows `updatesBefore` earlier ones (Keras
 * passes the optimizer's `iterations`, counted from 0): 1 without a schedule.
 */
export function learningRateFactor(
  decay: ResolvedLearningRateDecay | undefined,
  updatesBefore: number,
): number {
  if (decay === undefined) return 1;
  const progress = Math.min(Math.max(updatesBefore, 0), decay.steps) / decay.steps;
  const cosine = 0.5 * (1 + Math.cos(Math.PI * progress));
  return (1 - decay.alpha) * cosine + decay.alpha;
}
