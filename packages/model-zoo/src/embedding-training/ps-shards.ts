import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { checkInteger, checkNonEmptyString } from '@edl/common';

/** Options of {@link startEdlPsShards}. */
export interface EdlPsShardsOptions {
  /** The `edl` executable script (`packages/cli/dist/bin/edl.js`). */
  readonly edlBin: string;
  readonly numShards: number;
  /** The `--tables` of every shard. */
  readonly tables: readonly object[];
  /** The job token the shards check (`EDL_JOB_TOKEN`). */
  readonly token: string;
  /** Extra arguments for node, e.g. `--max-old-space-size=4096`. */
  readonly nodeArgs?: readonly string[];
}

/** Running `edl ps` shard processes. */
export interface EdlPsShards {
  /** host:port of shard i at index i. */
  readonly addresses: readonly string[];
  readonly pids: readonly number[];
  /** SIGTERM to every shard; resolves once all exited. */
  stop(): Promise<void>;
}

/**
 * Starts `numShards` `edl ps` processes on free loopback ports and resolves once each printed its
 * `listening` line: the shards `edl train --num-ps` will launch, started by hand for the DeepFM
 * test and `bench/sparse-ps.mjs` until then. A shard that exits first rejects with its stderr.
 */
export async function startEdlPsShards(options: EdlPsShardsOptions): Promise<EdlPsShards> {
  const edlBin = checkNonEmptyString(options.edlBin, 'options.edlBin');
  const numShards = checkInteger(options.numShards, 'options.numShards', 1);
  const token = checkNonEmptyString(options.token, 'options.token');
  const children: ChildProcessWithoutNullStreams[] = [];
  const start = (shardIndex: number) =>
    new Promise<string>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [
          ...(options.nodeArgs ?? []),
          edlBin,
          'ps',
          '--shard-index',
          String(shardIndex),
          '--num-shards',
          String(numShards),
          '--tables',
          JSON.stringify(options.tables),
        ],
        { env: { ...process.env, EDL_JOB_TOKEN: token }, stdio: 'pipe' },
      );
      children.push(child);
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        stderr = (stderr + d.toString()).slice(-4000);
      });
      child.once('exit', (code, signal) =>
        reject(
          new Error(`edl ps shard ${shardIndex} exited (${code ?? signal}) before listening: ${stderr}`),
        ),
      );
      createInterface({ input: child.stdout }).once('line', (line) => {
        try {
          resolve((JSON.parse(line) as { address: string }).address);
        } catch {
          reject(new Error(`edl ps shard ${shardIndex} printed '${line}' instead of its listening line`));
        }
      });
    });
  const stop = () =>
    Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) resolve();
            else {
              child.once('exit', () => resolve());
              child.kill('SIGTERM');
            }
          }),
      ),
    ).then(() => undefined);
  try {
    const addresses = await Promise.all(Array.from({ length: numShards }, (_, i) => start(i)));
    return { addresses, pids: children.map((c) => c.pid as number), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
