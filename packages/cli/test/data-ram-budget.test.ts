/** `--data-ram-budget` of `edl train` and `edl worker`: parsing, and each local worker's share. */
import { PassThrough } from 'node:stream';
import { defaultDataRamBudget } from '@edl/data/autotune';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../src/command.js';
import { parseJobOptions, workerArgs } from '../src/job/job-options.js';
import { runCli } from '../src/main.js';

const base = ['--model-def', 'census', '--training-data', 'x.csv'];

function workerFlag(argv: string[], flag: string): string | undefined {
  const args = workerArgs(parseJobOptions([...base, ...argv]), '/m.js', '/tmp/stats');
  const at = args.indexOf(flag);
  return at < 0 ? undefined : args[at + 1];
}

describe('edl train --data-ram-budget', () => {
  it("gives each of the host's workers an equal share of the budget", () => {
    expect(workerFlag(['--data-ram-budget', '4GiB', '--num-workers', '4'], '--data-ram-budget')).toBe(
      String(2 ** 30),
    );
    expect(workerFlag(['--data-ram-budget', '3GiB'], '--data-ram-budget')).toBe(String(3 * 2 ** 30));
    expect(Number(workerFlag(['--num-workers', '2'], '--data-cpu-budget'))).toBeGreaterThanOrEqual(1);
    // A lone worker keeps its own 'auto' CPU budget (it may lend its consumer's idle core).
    expect(workerFlag(['--num-workers', '1'], '--data-cpu-budget')).toBeUndefined();
  });

  it("defaults to half of this host's memory (or its cgroup limit), split between the workers", () => {
    expect(parseJobOptions(base).dataRamBudget).toBe(defaultDataRamBudget());
    expect(workerFlag(['--num-workers', '2'], '--data-ram-budget')).toBe(
      String(Math.floor(defaultDataRamBudget() / 2)),
    );
  });

  it('refuses a bad size with a usage error naming the flag', () => {
    expect(() => parseJobOptions([...base, '--data-ram-budget', 'lots'])).toThrow(UsageError);
    expect(() => parseJobOptions([...base, '--data-ram-budget', '12KiB'])).toThrow(/--data-ram-budget/);
  });
});

describe('edl worker --data-ram-budget', () => {
  it('fails at once on a bad size, before connecting to anything', async () => {
    const stderr = new PassThrough();
    let err = '';
    stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    const code = await runCli(
      ['worker', '--model-def', 'mnist', '--training-data', 'x', '--data-ram-budget', '5 apples'],
      {
        stdout: new PassThrough(),
        stderr,
        stdin: new PassThrough(),
        isTTY: false,
      },
    );
    expect(code).toBe(2);
    expect(err).toMatch(/--data-ram-budget/);
  });
});
