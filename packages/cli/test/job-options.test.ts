/** The parameter-store flags of `edl train` and how they reach the master's options. */
import { describe, expect, it } from 'vitest';
import { UsageError } from '../src/command.js';
import { parseJobOptions, workerArgs } from '../src/job/job-options.js';
import { parameterStoreOptions } from '../src/job/master-options.js';

const base = ['--model-def', 'census', '--training-data', 'x.csv'];
const adam = { type: 'adam', learningRate: 0.001 } as const;

describe('edl train: --mode, --max-staleness, --learning-rate', () => {
  it('defaults to async with the staleness bound of the number of workers', () => {
    const options = parseJobOptions([...base, '--num-workers', '6']);
    expect(options.mode).toBe('async');
    expect(parameterStoreOptions(options, adam)).toEqual({
      mode: 'async',
      gradsToWait: 1,
      maxStaleness: 12,
      stalenessModulation: false,
      optimizer: adam,
    });
    expect(parameterStoreOptions(parseJobOptions(base), adam).maxStaleness).toBe(8);
  });

  it('takes sync mode, a bound, modulation and a learning rate over the model definition', () => {
    const options = parseJobOptions([
      ...base,
      '--mode',
      'sync',
      '--grads-to-wait',
      '2',
      '--max-staleness',
      '1',
      '--staleness-modulation',
      '--learning-rate',
      '0.05',
    ]);
    expect(parameterStoreOptions(options, adam)).toEqual({
      mode: 'sync',
      gradsToWait: 2,
      maxStaleness: 1,
      stalenessModulation: true,
      optimizer: { type: 'adam', learningRate: 0.05 },
    });
    expect(parameterStoreOptions(parseJobOptions([...base, '--mode', 'sync']), adam).maxStaleness).toBe(0);
  });

  it('refuses bad values with usage errors that name the flag', () => {
    expect(() => parseJobOptions([...base, '--mode', 'fast'])).toThrow(
      new UsageError("Expected one of async, sync for --mode but received 'fast'"),
    );
    expect(() => parseJobOptions([...base, '--learning-rate', '-1'])).toThrow(
      new UsageError("Expected a positive number for --learning-rate but received '-1'"),
    );
    expect(() => parseJobOptions([...base, '--learning-rate', 'abc'])).toThrow(UsageError);
    expect(() => parseJobOptions([...base, '--max-staleness', '-2'])).toThrow(
      new UsageError("Expected a non-negative integer for --max-staleness but received '-2'"),
    );
  });
});

describe('edl train: what the workers are told of the mode', () => {
  const pushAhead = (argv: string[]) => {
    const args = workerArgs(parseJobOptions([...base, ...argv]), '/m.js', '/tmp/stats');
    const at = args.indexOf('--push-ahead');
    return at < 0 ? undefined : args[at + 1];
  };

  it('has workers wait for each answer unless --push-ahead on, and always in sync mode', () => {
    expect(pushAhead([])).toBe('off');
    expect(pushAhead(['--mode', 'async', '--push-ahead', 'on'])).toBe('on');
    expect(pushAhead(['--mode', 'sync', '--push-ahead', 'on'])).toBe('off');
    expect(() => parseJobOptions([...base, '--push-ahead', 'maybe'])).toThrow(
      new UsageError("Expected one of on, off for --push-ahead but received 'maybe'"),
    );
  });

  it("has workers mirror the master's updates unless --mirror-updates off", () => {
    const mirror = (argv: string[]) => {
      const args = workerArgs(parseJobOptions([...base, ...argv]), '/m.js', '/tmp/stats');
      return args[args.indexOf('--mirror-updates') + 1];
    };
    expect(mirror([])).toBe('on');
    expect(mirror(['--mirror-updates', 'off'])).toBe('off');
    expect(() => parseJobOptions([...base, '--mirror-updates', 'yes'])).toThrow(
      new UsageError("Expected one of on, off for --mirror-updates but received 'yes'"),
    );
  });

  it('puts the dense variables on the --num-ps shards unless --dense-on master, and tells the workers', () => {
    const denseOn = (argv: string[]) => {
      const args = workerArgs(parseJobOptions([...base, ...argv]), '/m.js', '/tmp/stats');
      return args.includes('--dense-on') ? args[args.indexOf('--dense-on') + 1] : undefined;
    };
    expect(denseOn([])).toBeUndefined();
    expect(denseOn(['--num-ps', '2'])).toBe('shards');
    expect(denseOn(['--num-ps', '2', '--dense-on', 'master'])).toBe('master');
    expect(() => parseJobOptions([...base, '--dense-on', 'shards'])).toThrow(
      new UsageError('--dense-on needs --num-ps N: without shards the master holds the dense variables'),
    );
    expect(() => parseJobOptions([...base, '--num-ps', '2', '--dense-on', 'both'])).toThrow(
      new UsageError("Expected one of shards, master for --dense-on but received 'both'"),
    );
  });
});
