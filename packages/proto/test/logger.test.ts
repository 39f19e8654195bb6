import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, formatPrettyLine, parseLogLevel } from '../src/logger.js';

function capture(isTTY = false) {
  const lines: string[] = [];
  const stream = Object.assign(new PassThrough(), { isTTY });
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
  return { stream, lines };
}

describe('createLogger', () => {
  it('writes one JSON object per line off a terminal, with the job, worker and task ids', () => {
    const { stream, lines } = capture();
    const log = createLogger({ stream, bindings: { job: 'mnist', worker: 'worker-3' } });
    log.info('task.done', { task: 12, records: 512 });
    log.warn('slow');
    const [first, second] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(first).toMatchObject({
      level: 'info',
      msg: 'task.done',
      job: 'mnist',
      worker: 'worker-3',
      task: 12,
    });
    expect(first?.records).toBe(512);
    expect(first?.pid).toBe(process.pid);
    expect(Date.parse(String(first?.time))).not.toBeNaN();
    expect(second).toMatchObject({ level: 'warn', msg: 'slow', worker: 'worker-3' });
  });

  it('writes the line pino wrote: level, time, pid and bindings first, fields in order, msg last', () => {
    const { stream, lines } = capture();
    const log = createLogger({ stream, bindings: { job: 'mnist', worker: undefined } }).child({ task: 3 });
    const cycle: Record<string, unknown> = { id: 1 };
    cycle.self = cycle;
    log.info('task "done"', { records: 512, loss: Number.NaN, skipped: undefined, big: 12n, cycle });
    const time = /"time":"([^"]+)"/.exec(lines[0] ?? '')?.[1] ?? '';
    expect(new Date(time).toISOString()).toBe(time);
    expect(lines[0]).toBe(
      `{"level":"info","time":"${time}","pid":${process.pid},"job":"mnist","task":3,"records":512,` +
        '"loss":null,"big":12,"cycle":{"id":1,"self":"[Circular]"},"msg":"task \\"done\\""}',
    );
  });

  it('writes readable lines on a terminal', () => {
    const { stream, lines } = capture(true);
    createLogger({ stream, bindings: { job: 'j1' } }).error('checkpoint failed', { path: '/tmp/a b' });
    // Colours on a terminal; the text without them:
    const esc = String.fromCharCode(27);
    const plain = lines[0]
      ?.split(esc)
      .join('')
      .replace(/\[\d+m/g, '');
    expect(plain).toMatch(/^\d\d:\d\d:\d\d\.\d{3} ERROR \[j1\] checkpoint failed path="\/tmp\/a b"$/);
  });

  it('drops lines below the level; quiet keeps errors only', () => {
    const levels = capture();
    const log = createLogger({ stream: levels.stream, level: 'warn' });
    log.debug('d');
    log.info('i');
    log.warn('w');
    expect(levels.lines.map((l) => JSON.parse(l).msg)).toEqual(['w']);
    const quiet = capture();
    const q = createLogger({ stream: quiet.stream, level: 'debug', quiet: true });
    q.info('i');
    q.warn('w');
    q.error('e');
    expect(quiet.lines.map((l) => JSON.parse(l).msg)).toEqual(['e']);
  });

  it('child loggers add their bindings', () => {
    const { stream, lines } = capture();
    createLogger({ stream, bindings: { job: 'j' } })
      .child({ task: 7 })
      .info('x');
    expect(JSON.parse(lines[0] as string)).toMatchObject({ job: 'j', task: 7, msg: 'x' });
  });

  it('rejects unknown levels', () => {
    expect(() => parseLogLevel('loud', '--log-level')).toThrow(
      new RangeError("Expected one of debug, info, warn, error, silent for --log-level but received 'loud'"),
    );
  });
});

describe('formatPrettyLine', () => {
  it('shows ids first, then the message and the other fields', () => {
    const line = JSON.stringify({
      level: 'info',
      time: '2026-01-02T03:04:05.678Z',
      pid: 1,
      job: 'j',
      worker: 'worker-1',
      task: 4,
      msg: 'task.done',
      records: 64,
      loss: 0.123456789,
    });
    expect(formatPrettyLine(line, false)).toBe(
      '03:04:05.678 INFO  [j worker-1 task 4] task.done records=64 loss=0.123457',
    );
    expect(formatPrettyLine('not json', false)).toBe('not json');
  });
});
