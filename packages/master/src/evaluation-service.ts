import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { MetricPartial } from '@edl/proto';
import { MetricsAccumulator } from './evaluation-metrics.js';

/** One finished evaluation, as logged and written to the metrics file (one JSON line each). */
export interface EvaluationResult {
  readonly round: number;
  readonly modelVersion: number;
  readonly records: number;
  readonly metrics: Record<string, number>;
  readonly time: string;
}

/**
 * Collects the metric partial sums of evaluation rounds (each for one fixed model version) and, when
 * a round completes, computes the metrics, hands them to `onResult` and appends them to `metricsFile`.
 */
export class EvaluationService {
  readonly #rounds = new Map<number, { version: number; acc: MetricsAccumulator }>();
  readonly #results: EvaluationResult[] = [];
  #writes: Promise<void> = Promise.resolve();

  constructor(
    readonly metricsFile: string | undefined,
    readonly onResult: (result: EvaluationResult) => void = () => {},
  ) {}

  startRound(round: number, modelVersion: number): void {
    this.#rounds.set(round, { version: modelVersion, acc: new MetricsAccumulator() });
  }

  /** Adds partials of a range; throws RangeError for partials that do not fit the round. */
  add(round: number, partials: Readonly<Record<string, MetricPartial>>, records: number): void {
    const open = this.#rounds.get(round);
    if (open === undefined)
      throw new RangeError(`Expected an open evaluation round but received round ${round}`);
    open.acc.add(partials, records);
  }

  /** Closes a round: computes, reports and (asynchronously, in order) writes its metrics. */
  completeRound(round: number): EvaluationResult | undefined {
    const open = this.#rounds.get(round);
    if (open === undefined) return undefined;
    this.#rounds.delete(round);
    const result: EvaluationResult = {
      round,
      modelVersion: open.version,
      records: open.acc.records,
      metrics: open.acc.values(),
      time: new Date().toISOString(),
    };
    this.#results.push(result);
    this.onResult(result);
    const file = this.metricsFile;
    if (file !== undefined) {
      this.#writes = this.#writes.then(async () => {
        await mkdir(dirname(file), { recursive: true });
        await appendFile(file, `${JSON.stringify(result)}\n`);
      });
    }
    return result;
  }

  /** Every result so far, oldest first. */
  get results(): readonly EvaluationResult[] {
    return this.#results;
  }

  /** Resolves when every metrics line is on disk (rejects if a write failed). */
  flush(): Promise<void> {
    return this.#writes;
  }
}
