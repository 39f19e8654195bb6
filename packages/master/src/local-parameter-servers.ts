import { type ChildProcess, spawn } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { checkInteger, checkNonEmptyString, type OptimizerConfig } from '@edl/common';
import { stopChild, watchChildExit } from './child-exit.js';

/** Options of {@link LocalParameterServers}. */
export interface LocalParameterServersOptions {
  /** Parameter-server shards to run (`--num-ps`). */
  readonly numShards: number;
  /** Executable of a shard (default: this Node binary). */
  readonly command?: string;
  /**
   * Its arguments up to the command, e.g. `['packages/cli/dist/bin/edl.js', 'ps']`; the shard's
   * own (`--shard-index`, `--num-shards`, `--host`, `--port`, `--optimizer`, `--seed`) are added.
   */
  readonly args: readonly string[];
  /** The job's optimizer config, the one the master applies to dense variables. */
  readonly optimizer: OptimizerConfig;
  /** The job's seed: the declared tables' rows start from it. */
  readonly seed: number;
  /** The job token, passed in EDL_JOB_TOKEN. */
  readonly token: string;
  /** Interface the shards listen on (default 127.0.0.1). */
  readonly host?: string;
  /** Extra environment for the shards. */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Relaunches allowed per shard before the job fails (default 3). */
  readonly maxRestarts?: number;
  /** Each line a shard prints. Default: copied to stderr with a `[ps-N]` prefix. */
  readonly onOutput?: (shard: string, line: string) => void;
  /** A shard exited and was relaunched, or could not be: told so that the job's log says it. */
  readonly onWarning?: (message: string) => void;
  /** A free port (default: the kernel's pick on `host`). */
  readonly choosePort?: () => Promise<number>;
  /** How long a shard may take to print its `listening` line (default 60 000 ms). */
  readonly startTimeoutMs?: number;
  /** Time between SIGTERM and SIGKILL when stopping a shard (default 5 000 ms). */
  readonly stopGraceMs?: number;
}

interface Shard {
  readonly index: number;
  readonly port: number;
  restarts: number;
  process?: ChildProcess;
  exited?: Promise<void>;
  /** Resolves when the latest process printed its `listening` line. */
  listening?: Promise<void>;
}

/** A port of `host` that is free now. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * The parameter-server shards of a local job (`--num-ps N`): N `edl ps` processes, each on a port
 * picked before it starts, so that workers can be given every address (`--ps-addresses`) at once
 * and retry until the shards listen. A shard that exits while the job runs is relaunched on the
 * same address, from the shard files of the last committed checkpoint (or the initializer before
 * the first), which {@link LocalParameterServersOptions.onWarning} says, and the listener of
 * {@link onRelaunched} hears, so that the whole job rolls back to that checkpoint.
 */
export class LocalParameterServers {
  readonly #o: LocalParameterServersOptions;
  readonly #host: string;
  readonly #maxRestarts: number;
  readonly #shards: Shard[] = [];
  #stopped = false;
  #restorePoint: { readonly dir: string; readonly version: number } | undefined;
  #failed: ((reason: string) => void) | undefined;
  #relaunched: ((shardIndex: number) => void) | undefined;

  constructor(options: LocalParameterServersOptions) {
    this.#o = options;
    checkInteger(options.numShards, 'numShards', 1, 1024);
    checkNonEmptyString(options.token, 'token');
    this.#host = options.host ?? '127.0.0.1';
    this.#maxRestarts = checkInteger(options.maxRestarts ?? 3, 'maxRestarts', 0);
  }

  /** host:port of each shard, in shard order; empty before {@link start}. */
  get addresses(): string[] {
    const host = this.#host.includes(':') ? `[${this.#host}]` : this.#host;
    return this.#shards.map((s) => `${host}:${s.port}`);
  }

  /**
   * The committed checkpoint whose shard files a shard launched from now on starts from (`edl ps
   * --restore-dir --restore-version`); undefined: from the initializer. The master sets it when it
   * resumes and after each checkpoint it commits.
   */
  setRestorePoint(point: { readonly dir: string; readonly version: number } | undefined): void {
    this.#restorePoint = point;
  }

  /**
   * Tells `listener` of each shard relaunched from now on, right after the new process was
   * spawned: the master rolls the job back then (`Master.onShardRelaunched`).
   */
  onRelaunched(listener: (shardIndex: number) => void): void {
    this.#relaunched = listener;
  }

  /** Process ids of the running shards, by shard index (for tests and status pages). */
  pids(): (number | undefined)[] {
    return this.#shards.map((s) => s.process?.pid);
  }

  /**
   * Picks the shards' ports and launches them; resolves to their addresses at once, without
   * waiting for them to listen ({@link ready}). `onFailed` is told when a shard cannot be kept
   * running (its relaunches exhausted): the job must fail.
   */
  async start(onFailed: (reason: string) => void): Promise<string[]> {
    this.#failed = onFailed;
    const choose = this.#o.choosePort ?? (() => freePort(this.#host));
    const ports = new Set<number>();
    while (ports.size < this.#o.numShards) ports.add(await choose());
    for (const port of ports) this.#shards.push({ index: this.#shards.length, port, restarts: 0 });
    for (const shard of this.#shards) this.#launch(shard);
    return this.addresses;
  }

  /** Resolves once every shard printed its `listening` line; rejects when one could not start. */
  async ready(): Promise<void> {
    await Promise.all(
      this.#shards.map(async (shard) => {
        for (;;) {
          const current = shard.listening;
          try {
            return await current;
          } catch (error) {
            // Relaunched (the close that rejected it launched the next process first): wait for that.
            if (shard.listening === current) throw error;
          }
        }
      }),
    );
  }

  /** Stops every shard: SIGTERM, then SIGKILL after the grace. Nothing is relaunched afterwards. */
  async stop(graceMs = this.#o.stopGraceMs ?? 5_000): Promise<void> {
    this.#stopped = true;
    await Promise.all(
      this.#shards.map(async (shard) => {
        if (shard.process !== undefined) await stopChild(shard.process, shard.exited, graceMs);
      }),
    );
  }

  #launch(shard: Shard): void {
    const o = this.#o;
    const name = `ps-${shard.index}`;
    const child = spawn(
      o.command ?? process.execPath,
      [
        ...o.args,
        '--shard-index',
        String(shard.index),
        '--num-shards',
        String(o.numShards),
        '--host',
        this.#host,
        '--port',
        String(shard.port),
        '--optimizer',
        JSON.stringify(o.optimizer),
        '--seed',
        String(o.seed),
        ...(this.#restorePoint === undefined
          ? []
          : [
              '--restore-dir',
              this.#restorePoint.dir,
              '--restore-version',
              String(this.#restorePoint.version),
            ]),
      ],
      {
        cwd: o.cwd,
        // The token never goes on the command line (any user could read it in `ps`).
        env: { ...process.env, ...o.env, EDL_JOB_TOKEN: o.token },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    shard.process = child;
    const output = o.onOutput ?? ((id, line) => process.stderr.write(`[${id}] ${line}\n`));
    let stderrTail = '';
    const listening = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `Parameter-server shard ${shard.index} did not listen within ${o.startTimeoutMs ?? 60_000} ms`,
            ),
          ),
        o.startTimeoutMs ?? 60_000,
      );
      timer.unref();
      if (child.stdout)
        createInterface({ input: child.stdout }).on('line', (line) => {
          if (line.startsWith('{"event":"listening"')) {
            clearTimeout(timer);
            resolve();
          }
          output(name, line);
        });
      if (child.stderr)
        createInterface({ input: child.stderr }).on('line', (line) => {
          stderrTail = `${stderrTail}\n${line}`.slice(-2000);
          output(name, line);
        });
      child.once('close', () => {
        clearTimeout(timer);
        reject(new Error(`Parameter-server shard ${shard.index} exited before it listened:${stderrTail}`));
      });
    });
    // A shard that ends before listening is relaunched like any other exit; ready() waits for the
    // listening of the latest process.
    listening.catch(() => undefined);
    shard.listening = listening;
    shard.exited = watchChildExit(child, (exit) => this.#onExit(shard, child, exit.how));
  }

  #onExit(shard: Shard, child: ChildProcess, how: string): void {
    if (shard.process !== child) return;
    delete shard.process;
    if (this.#stopped) return;
    const address = this.addresses[shard.index];
    if (shard.restarts >= this.#maxRestarts) {
      const reason = `Parameter-server shard ${shard.index} (${address}) ended ${shard.restarts + 1} times, more than maxRestarts (${this.#maxRestarts}); last: ${how}`;
      this.#o.onWarning?.(reason);
      this.#failed?.(reason);
      return;
    }
    shard.restarts++;
    const point = this.#restorePoint;
    this.#o.onWarning?.(
      `Parameter-server shard ${shard.index} (${address}) ${how}: relaunched on the same address. ${point === undefined ? 'Its embedding rows restart from the initializer (seeded): no checkpoint was committed yet' : `Its embedding rows restart from the checkpoint of model version ${point.version} in ${point.dir}`}`,
    );
    this.#launch(shard);
    this.#relaunched?.(shard.index);
  }
}
