/** Reads the Prometheus text of `/metrics` back, for tests that check what a scrape sees. */

/** One sample line: `name{labels} value`. */
export interface PrometheusSample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/** Prometheus text exposition format: families with HELP/TYPE, samples `name{labels} value`. */
export function parsePrometheus(text: string): { types: Map<string, string>; samples: PrometheusSample[] } {
  const types = new Map<string, string>();
  const samples: PrometheusSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      types.set(type[1] as string, type[2] as string);
      continue;
    }
    if (/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*$/.test(line)) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.e+-]+|NaN|\+Inf|-Inf)$/.exec(line);
    if (sample === null) throw new Error(`not Prometheus text: ${line}`);
    const labels: Record<string, string> = {};
    for (const m of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[m[1] as string] = m[2] as string;
    }
    samples.push({ name: sample[1] as string, labels, value: Number(sample[3]) });
  }
  return { types, samples };
}
