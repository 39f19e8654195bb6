import { create } from '@bufbuild/protobuf';
import { type MetricPartial, MetricPartialSchema } from './generated/edl/v1/master_pb.js';

/**
 * Number of fixed score buckets of AUC histograms. Workers and the master must agree on it, which is
 * why it lives in the protocol package.
 */
export const AUC_BUCKETS = 200;

/** Partial sums of accuracy: correct predictions over predictions (labels and predicted classes). */
export function accuracyPartial(
  labels: ArrayLike<number>,
  predictedClasses: ArrayLike<number>,
): MetricPartial {
  checkSameLength(labels, predictedClasses, 'predictedClasses');
  let correct = 0;
  for (let i = 0; i < labels.length; i++) if (labels[i] === predictedClasses[i]) correct++;
  return create(MetricPartialSchema, {
    kind: { case: 'mean', value: { sum: correct, count: labels.length } },
  });
}

/** Partial sums of the mean squared error. */
export function msePartial(labels: ArrayLike<number>, predictions: ArrayLike<number>): MetricPartial {
  checkSameLength(labels, predictions, 'predictions');
  let sum = 0;
  for (let i = 0; i < labels.length; i++) {
    const diff = (predictions[i] as number) - (labels[i] as number);
    sum += diff * diff;
  }
  return create(MetricPartialSchema, { kind: { case: 'mean', value: { sum, count: labels.length } } });
}

/** Partial sums of any mean (a loss, a custom per-record metric). */
export function meanPartial(sum: number, count: number): MetricPartial {
  return create(MetricPartialSchema, { kind: { case: 'mean', value: { sum, count } } });
}

/**
 * Histograms of scores in [0, 1] per binary label (label > 0.5 is positive), AUC_BUCKETS buckets
 * each; the master sums them over tasks and integrates the ROC curve.
 */
export function aucPartial(labels: ArrayLike<number>, scores: ArrayLike<number>): MetricPartial {
  checkSameLength(labels, scores, 'scores');
  const positives = new Array<number>(AUC_BUCKETS).fill(0);
  const negatives = new Array<number>(AUC_BUCKETS).fill(0);
  for (let i = 0; i < labels.length; i++) {
    const score = Math.min(1, Math.max(0, scores[i] as number));
    const bucket = Math.min(AUC_BUCKETS - 1, Math.floor(score * AUC_BUCKETS));
    if ((labels[i] as number) > 0.5) positives[bucket] = (positives[bucket] as number) + 1;
    else negatives[bucket] = (negatives[bucket] as number) + 1;
  }
  return create(MetricPartialSchema, { kind: { case: 'auc', value: { positives, negatives } } });
}

function checkSameLength(labels: ArrayLike<number>, other: ArrayLike<number>, name: string): void {
  if (labels.length !== other.length) {
    throw new RangeError(`Expected ${labels.length} values for ${name} but received ${other.length}`);
  }
}
