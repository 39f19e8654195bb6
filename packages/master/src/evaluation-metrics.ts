import { AUC_BUCKETS, type MetricPartial } from '@edl/proto';
import { MasterStateError } from './errors.js';

type Accumulator =
  | { kind: 'mean'; sum: number; count: number }
  | { kind: 'auc'; positives: number[]; negatives: number[] };

/**
 * Sums metric partials of one evaluation round and turns them into values: `sum / count` for means
 * (accuracy, MSE, a loss) and the area under the ROC curve for AUC histograms.
 */
export class MetricsAccumulator {
  readonly #metrics = new Map<string, Accumulator>();
  #records = 0;

  /** Adds the partials of one reported range of `records` records. */
  add(partials: Readonly<Record<string, MetricPartial>>, records: number): void {
    // Check everything first so a bad report adds nothing.
    for (const [name, partial] of Object.entries(partials)) {
      const existing = this.#metrics.get(name);
      const kind = partial.kind.case;
      if (kind === undefined)
        throw new RangeError(`Expected a mean or auc partial for metric '${name}' but received none`);
      if (existing !== undefined && existing.kind !== kind) {
        throw new RangeError(`Expected a ${existing.kind} partial for metric '${name}' but received ${kind}`);
      }
      if (kind === 'auc') {
        const { positives, negatives } = partial.kind.value as { positives: number[]; negatives: number[] };
        if (positives.length !== AUC_BUCKETS || negatives.length !== AUC_BUCKETS) {
          throw new RangeError(
            `Expected ${AUC_BUCKETS} AUC buckets for metric '${name}' but received ${positives.length}/${negatives.length}`,
          );
        }
      }
    }
    for (const [name, partial] of Object.entries(partials)) {
      const existing = this.#metrics.get(name);
      if (partial.kind.case === 'mean') {
        const { sum, count } = partial.kind.value;
        if (existing?.kind === 'mean') {
          existing.sum += sum;
          existing.count += count;
        } else this.#metrics.set(name, { kind: 'mean', sum, count });
      } else if (partial.kind.case === 'auc') {
        const { positives, negatives } = partial.kind.value;
        if (existing?.kind === 'auc') {
          for (let i = 0; i < AUC_BUCKETS; i++) {
            existing.positives[i] = (existing.positives[i] as number) + (positives[i] as number);
            existing.negatives[i] = (existing.negatives[i] as number) + (negatives[i] as number);
          }
        } else this.#metrics.set(name, { kind: 'auc', positives: [...positives], negatives: [...negatives] });
      }
    }
    this.#records += records;
  }

  get records(): number {
    return this.#records;
  }

  /** The metric values; a mean with no count or an AUC with one class only is NaN. */
  values(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, acc] of this.#metrics) out[name] = acc.kind === 'mean' ? acc.sum / acc.count : auc(acc);
    return out;
  }
}

/** AUC from per-label score histograms: ties within a bucket count one half. */
export function auc(histograms: { positives: readonly number[]; negatives: readonly number[] }): number {
  const p = histograms.positives.reduce((a, b) => a + b, 0);
  const n = histograms.negatives.reduce((a, b) => a + b, 0);
  if (p === 0 || n === 0) return Number.NaN;
  let positivesAbove = 0;
  let area = 0;
  for (let b = histograms.positives.length - 1; b >= 0; b--) {
    const pos = histograms.positives[b] as number;
    const neg = histograms.negatives[b] as number;
    area += neg * (positivesAbove + pos / 2);
    positivesAbove += pos;
  }
  return area / (p * n);
}

/** Raised when metrics arrive for a round that is not open. */
export function roundNotOpen(round: number): MasterStateError {
  return new MasterStateError('ROUND_NOT_OPEN', `Evaluation round ${round} is not open`);
}
