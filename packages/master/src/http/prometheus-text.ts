/**
 * Prometheus text exposition format 0.0.4: metric families with `# HELP` and `# TYPE`, then one
 * sample per line. The job's metrics are a dozen families read when scraped, so this writer is all
 * /metrics needs; a client library cost every `edl train` 0.1 CPU-s of start-up and four packages.
 */

/** The Content-Type of a scrape answer. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Label names and their values: names match `[a-zA-Z_][a-zA-Z0-9_]*`, values are any text. */
export type Labels = Readonly<Record<string, string>>;

/** One sample of a counter or gauge family. */
export interface Sample {
  readonly labels?: Labels;
  readonly value: number;
}

/** A histogram's state for one label set: cumulative counts per upper bound, their sum and count. */
export interface HistogramSample {
  readonly labels?: Labels;
  /** Counts of observations at or below each bucket's upper bound, in the order of `buckets`. */
  readonly cumulative: readonly number[];
  readonly sum: number;
  readonly count: number;
}

/** A metric family: its samples as they are at the time of the scrape. */
export type Family =
  | {
      readonly name: string;
      readonly help: string;
      readonly type: 'counter' | 'gauge';
      readonly samples: readonly Sample[];
    }
  | {
      readonly name: string;
      readonly help: string;
      readonly type: 'histogram';
      /** Upper bounds, ascending; `+Inf` is added. */
      readonly buckets: readonly number[];
      readonly samples: readonly HistogramSample[];
    };

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function escapeLabelValue(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** A sample value as the format writes it: `+Inf`, `-Inf` and `NaN` by name. */
export function formatValue(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  if (Number.isNaN(value)) return 'NaN';
  return String(value);
}

function labelText(labels: Labels): string {
  const pairs = Object.entries(labels);
  if (pairs.length === 0) return '';
  for (const [name] of pairs) {
    if (!LABEL_NAME.test(name))
      throw new RangeError(`Expected a Prometheus label name but received ${JSON.stringify(name)}`);
  }
  return `{${pairs.map(([name, value]) => `${name}="${escapeLabelValue(value)}"`).join(',')}}`;
}

/**
 * The exposition text of `families`, each sample with `constantLabels` (e.g. the job id) after its
 * own labels, and a bucket's `le` first, in the order prom-client writes them.
 * Throws a RangeError for a metric or label name the format does not allow.
 */
export function writePrometheusText(families: readonly Family[], constantLabels: Labels = {}): string {
  const lines: string[] = [];
  for (const family of families) {
    if (!METRIC_NAME.test(family.name)) {
      throw new RangeError(`Expected a Prometheus metric name but received ${JSON.stringify(family.name)}`);
    }
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`);
    if (family.type === 'histogram') {
      const bounds = [...family.buckets.map(formatValue), '+Inf'];
      for (const sample of family.samples) {
        const labels = { ...sample.labels, ...constantLabels };
        bounds.forEach((le, i) => {
          const count = i < sample.cumulative.length ? (sample.cumulative[i] as number) : sample.count;
          lines.push(`${family.name}_bucket${labelText({ le, ...labels })} ${formatValue(count)}`);
        });
        lines.push(`${family.name}_sum${labelText(labels)} ${formatValue(sample.sum)}`);
        lines.push(`${family.name}_count${labelText(labels)} ${formatValue(sample.count)}`);
      }
    } else {
      for (const sample of family.samples) {
        lines.push(
          `${family.name}${labelText({ ...sample.labels, ...constantLabels })} ${formatValue(sample.value)}`,
        );
      }
    }
  }
  return `${lines.join('\n')}\n`;
}

/**
 * A histogram that keeps per-label-set bucket counts from the start of the job, for
 * {@link writePrometheusText}. Observations below a bound count in that bucket and every one above.
 */
export class HistogramCounts {
  readonly #buckets: readonly number[];
  readonly #byKey = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();

  constructor(buckets: readonly number[]) {
    this.#buckets = buckets;
  }

  /** The upper bounds counted, for the family's `buckets`. */
  get buckets(): readonly number[] {
    return this.#buckets;
  }

  /** Counts `value` `times` times for `labels`. */
  observe(labels: Labels, value: number, times = 1): void {
    const key = JSON.stringify(Object.entries(labels));
    let state = this.#byKey.get(key);
    if (state === undefined) {
      state = { labels, counts: this.#buckets.map(() => 0), sum: 0, count: 0 };
      this.#byKey.set(key, state);
    }
    for (let i = 0; i < this.#buckets.length; i++) {
      if (value <= (this.#buckets[i] as number)) state.counts[i] = (state.counts[i] as number) + times;
    }
    state.sum += value * times;
    state.count += times;
  }

  /** The samples now, one per label set observed. */
  samples(): HistogramSample[] {
    return [...this.#byKey.values()].map((s) => ({
      labels: s.labels,
      cumulative: [...s.counts],
      sum: s.sum,
      count: s.count,
    }));
  }
}
