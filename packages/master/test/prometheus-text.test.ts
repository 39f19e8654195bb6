/**
 * The Prometheus text writer of /metrics, read back by an independent parser: the Python
 * Prometheus client's `text_string_to_metric_families` (Debian's python3-prometheus-client), the
 * parser of the library that defined the format's reference clients.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  type Family,
  formatValue,
  HistogramCounts,
  PROMETHEUS_CONTENT_TYPE,
  writePrometheusText,
} from '../src/http/prometheus-text.js';

const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

interface ParsedSample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number | string;
}
interface ParsedFamily {
  readonly name: string;
  readonly type: string;
  readonly documentation: string;
  readonly samples: ParsedSample[];
}

/** Families as prometheus_client parses `text` (values that are not finite come back as strings). */
function parseWithPython(text: string): ParsedFamily[] {
  const script = `
import json, math, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for f in text_string_to_metric_families(sys.stdin.read()):
    out.append({"name": f.name, "type": f.type, "documentation": f.documentation,
                "samples": [{"name": s.name, "labels": s.labels,
                             "value": s.value if math.isfinite(s.value) else repr(s.value)} for s in f.samples]})
print(json.dumps(out))
`;
  return JSON.parse(
    execFileSync(PYTHON, ['-c', script], { input: text, encoding: 'utf8' }),
  ) as ParsedFamily[];
}

describe('writePrometheusText', () => {
  it('writes counters, gauges and a histogram that the Python Prometheus client parses back', () => {
    const steps = new HistogramCounts([0.01, 0.1, 1]);
    steps.observe({ worker: 'worker-0' }, 0.05, 3);
    steps.observe({ worker: 'worker-0' }, 0.5);
    steps.observe({ worker: 'worker-1' }, 2);
    const families: Family[] = [
      {
        name: 'edl_records_total',
        help: 'Records done',
        type: 'counter',
        samples: [
          { labels: { kind: 'training' }, value: 1200 },
          { labels: { kind: 'evaluation' }, value: 0 },
        ],
      },
      { name: 'edl_loss', help: 'Loss', type: 'gauge', samples: [{ value: 0.25 }] },
      { name: 'edl_empty', help: 'No samples yet', type: 'gauge', samples: [] },
      {
        name: 'edl_step_seconds',
        help: 'Step time',
        type: 'histogram',
        buckets: steps.buckets,
        samples: steps.samples(),
      },
    ];
    const parsed = parseWithPython(writePrometheusText(families, { job_id: 'j1' }));

    expect(parsed.map((f) => [f.name, f.type])).toEqual([
      ['edl_records', 'counter'],
      ['edl_loss', 'gauge'],
      ['edl_empty', 'gauge'],
      ['edl_step_seconds', 'histogram'],
    ]);
    expect(parsed[0]?.samples).toEqual([
      { name: 'edl_records_total', labels: { kind: 'training', job_id: 'j1' }, value: 1200 },
      { name: 'edl_records_total', labels: { job_id: 'j1', kind: 'evaluation' }, value: 0 },
    ]);
    expect(parsed[1]?.samples).toEqual([{ name: 'edl_loss', labels: { job_id: 'j1' }, value: 0.25 }]);
    expect(parsed[2]?.samples).toEqual([]);
    const worker0 = parsed[3]?.samples.filter((s) => s.labels.worker === 'worker-0') ?? [];
    expect(worker0.map((s) => [s.name, s.labels.le ?? '', s.value])).toEqual([
      ['edl_step_seconds_bucket', '0.01', 0],
      ['edl_step_seconds_bucket', '0.1', 3],
      ['edl_step_seconds_bucket', '1', 4],
      ['edl_step_seconds_bucket', '+Inf', 4],
      ['edl_step_seconds_sum', '', 0.65],
      ['edl_step_seconds_count', '', 4],
    ]);
    const worker1 = parsed[3]?.samples.filter((s) => s.labels.worker === 'worker-1') ?? [];
    expect(worker1.filter((s) => s.name.endsWith('_bucket')).map((s) => s.value)).toEqual([0, 0, 0, 1]);
  });

  it('escapes help text and label values, and names the values that are not numbers', () => {
    const text = writePrometheusText([
      {
        name: 'edl_evaluation_metric',
        help: 'Back\\slash and\nnew line',
        type: 'gauge',
        samples: [
          { labels: { metric: 'say "hi"\\\nthere' }, value: Number.POSITIVE_INFINITY },
          { labels: { metric: 'low' }, value: Number.NEGATIVE_INFINITY },
          { labels: { metric: 'nan' }, value: Number.NaN },
        ],
      },
    ]);
    expect(text).toContain('# HELP edl_evaluation_metric Back\\\\slash and\\nnew line\n');
    expect(text).toContain('edl_evaluation_metric{metric="say \\"hi\\"\\\\\\nthere"} +Inf\n');
    const [family] = parseWithPython(text);
    expect(family?.documentation).toBe('Back\\slash and\nnew line');
    expect(family?.samples).toEqual([
      { name: 'edl_evaluation_metric', labels: { metric: 'say "hi"\\\nthere' }, value: 'inf' },
      { name: 'edl_evaluation_metric', labels: { metric: 'low' }, value: '-inf' },
      { name: 'edl_evaluation_metric', labels: { metric: 'nan' }, value: 'nan' },
    ]);
    expect([formatValue(1e21), formatValue(-0.5)]).toEqual(['1e+21', '-0.5']);
    expect(PROMETHEUS_CONTENT_TYPE).toBe('text/plain; version=0.0.4; charset=utf-8');
  });

  it('refuses metric and label names that the format does not allow, naming them', () => {
    expect(() => writePrometheusText([{ name: 'edl-loss', help: 'x', type: 'gauge', samples: [] }])).toThrow(
      'Expected a Prometheus metric name but received "edl-loss"',
    );
    expect(() =>
      writePrometheusText([
        { name: 'edl_loss', help: 'x', type: 'gauge', samples: [{ labels: { '1st': 'a' }, value: 1 }] },
      ]),
    ).toThrow('Expected a Prometheus label name but received "1st"');
  });
});
