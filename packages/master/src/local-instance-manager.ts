import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { checkInteger, checkNonEmptyString } from '@edl/common';
import { type ChildExit, stopChild, watchChildExit } from './child-exit.js';
import type { InstanceEvents, InstanceManager } from './instance-manager.js';
import type { LocalParameterServers } from './local-parameter-servers.js';

export {
  LocalParameterServers,
  type LocalParameterServersOptions,
} from './local-parameter-servers.js';

/** Options of {@link LocalInstanceManager}. */
export interface LocalInstanceManagerOptions {
  /** Executable of a worker (default: this Node binary). */
  readonly command?: string;
  /**
   * Its arguments, e.g. `['packages/cli/dist/bin/edl.js', 'worker', '--model-def', 'm.ts']`.
   * `{workerId}` and `{masterAddress}` are replaced. The token never goes on the command line
   * (any user could read it in `ps`): workers get it from EDL_JOB_TOKEN.
   */
  readonly args?: readonly string[];
  /** Workers to start (default 1). */
  readonly numWorkers?: number;
  /** Restarts of crashed workers allowed per worker slot before the job fails (default 3). */
  readonly maxRestarts?: number;
  /** Address workers dial. */
  readonly masterAddress: string;
  /** The job token, passed in EDL_JOB_TOKEN. */
  readonly token: string;
  /** Extra environment for the workers (added to this process's environment). */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Each line a worker prints (stdout and stderr). Default: copied to stderr with a `[worker-N]` prefix. */
  readonly onOutput?: (workerId: string, line: string) => void;
  /**
   * A worker whose calls to the master fail for this long ends itself (default 15,000 ms; passed as
   * EDL_MASTER_LEASE_MS). Workers also end when the master process dies (EDL_MASTER_PID).
   */
  readonly masterLeaseMs?: number;
  /** Time between SIGTERM and SIGKILL when stopping a worker (default 5,000 ms). */
  readonly stopGraceMs?: number;
  /**
   * The job's parameter-server shards (`--num-ps`): launched before the first worker, their
   * addresses given to every worker in EDL_PS_ADDRESSES, stopped after the workers. A shard that
   * cannot be kept running fails the job (PS_RESTARTS_EXHAUSTED).
   */
  readonly parameterServers?: LocalParameterServers;
}

interface Slot {
  readonly index: number;
  restarts: number;
  process?: ChildProcess;
  workerId?: string;
  /** Set when we stop the worker on purpose: its exit is no crash. */
  stopping: boolean;
  exited?: Promise<void>;
}

/**
 * Runs workers as local processes. Each gets EDL_MASTER_ADDR, EDL_JOB_TOKEN and EDL_WORKER_ID (a new
 * id per process: a restarted worker is a new worker). A crash hands the worker's tasks back to the
 * master (as failures) and restarts the slot up to `maxRestarts` times; `scaleTo` adds slots or
 * stops the newest ones (their tasks go back without counting as failures).
 */
export class LocalInstanceManager implements InstanceManager {
  readonly #options: LocalInstanceManagerOptions;
  readonly #events: InstanceEvents;
  /** What happened before {@link attach}: told to the master when it attaches. */
  readonly #early: Array<(events: InstanceEvents) => void> = [];
  #attached: InstanceEvents | undefined;
  readonly #slots = new Map<number, Slot>();
  readonly #maxRestarts: number;
  #target: number;
  #nextSlot = 0;
  #nextWorker = 0;
  #stopped = false;
  /** EDL_PS_ADDRESSES of every worker, once the shards are launched. */
  #psAddresses: string | undefined;

  /**
   * `events` may come later, through {@link attach}: workers can then start while the master is
   * still being built (loading the model definition, sharding), which shortens a job's start-up by
   * the workers' own (TensorFlow.js, the backend); they retry their first call until it listens.
   */
  constructor(options: LocalInstanceManagerOptions, events?: InstanceEvents) {
    this.#options = options;
    this.#attached = events;
    this.#events = {
      workerLost: (...args) => this.#tell((e) => e.workerLost(...args)),
      giveUp: (...args) => this.#tell((e) => e.giveUp(...args)),
      jobEnded: () => this.#attached?.jobEnded() ?? false,
      requestStop: (...args) => this.#tell((e) => e.requestStop?.(...args)),
      workerStarted: (...args) => this.#tell((e) => e.workerStarted?.(...args)),
    };
    this.#target = checkInteger(options.numWorkers ?? 1, 'numWorkers', 0, 10_000);
    this.#maxRestarts = checkInteger(options.maxRestarts ?? 3, 'maxRestarts', 0);
    checkNonEmptyString(options.masterAddress, 'masterAddress');
    checkNonEmptyString(options.token, 'token');
  }

  /** Connects a manager built without events to its master, telling it what happened so far. */
  attach(events: InstanceEvents): void {
    if (this.#attached !== undefined) throw new Error('This LocalInstanceManager is attached already');
    this.#attached = events;
    for (const told of this.#early.splice(0)) told(events);
  }

  #tell(event: (events: InstanceEvents) => void): void {
    if (this.#attached === undefined) this.#early.push(event);
    else event(this.#attached);
  }

  get targetWorkers(): number {
    return this.#target;
  }

  get runningWorkers(): number {
    let n = 0;
    for (const slot of this.#slots.values()) if (slot.process !== undefined) n++;
    return n;
  }

  /** Ids of the live workers with their process ids (for tests and status pages). */
  workers(): Array<{ workerId: string; pid: number }> {
    const out: Array<{ workerId: string; pid: number }> = [];
    for (const slot of this.#slots.values()) {
      if (slot.process?.pid !== undefined && slot.workerId !== undefined) {
        out.push({ workerId: slot.workerId, pid: slot.process.pid });
      }
    }
    return out;
  }

  /** The job's parameter-server shards, when it has any (`--num-ps`). */
  get parameterServers(): LocalParameterServers | undefined {
    return this.#options.parameterServers;
  }

  async start(): Promise<void> {
    const servers = this.#options.parameterServers;
    if (servers !== undefined && this.#psAddresses === undefined) {
      const addresses = await servers.start((reason) => this.#events.giveUp('PS_RESTARTS_EXHAUSTED', reason));
      this.#psAddresses = addresses.join(',');
    }
    while (this.#slots.size < this.#target) this.#launch(this.#newSlot());
  }

  async scaleTo(numWorkers: number): Promise<number> {
    checkInteger(numWorkers, 'numWorkers', 0, 10_000);
    if (this.#stopped) return this.#target;
    this.#target = numWorkers;
    while (this.#slots.size < numWorkers) this.#launch(this.#newSlot());
    const excess = [...this.#slots.values()]
      .sort((a, b) => b.index - a.index)
      .slice(0, this.#slots.size - numWorkers);
    for (const slot of excess) this.#slots.delete(slot.index);
    await Promise.all(excess.map((slot) => this.#stopSlot(slot)));
    return this.#target;
  }

  async stop(graceMs = this.#options.stopGraceMs ?? 5_000): Promise<void> {
    this.#stopped = true;
    const slots = [...this.#slots.values()];
    await Promise.all(slots.map((slot) => this.#stopSlot(slot, graceMs)));
    // After the workers: a worker stopping mid-step still pushes to the shards.
    await this.#options.parameterServers?.stop(graceMs);
  }

  #newSlot(): Slot {
    const slot: Slot = { index: this.#nextSlot++, restarts: 0, stopping: false };
    this.#slots.set(slot.index, slot);
    return slot;
  }

  #launch(slot: Slot): void {
    const workerId = `worker-${this.#nextWorker++}`;
    const { masterAddress, token } = this.#options;
    const args = (this.#options.args ?? []).map((arg) =>
      arg.replaceAll('{workerId}', workerId).replaceAll('{masterAddress}', masterAddress),
    );
    const child = spawn(this.#options.command ?? process.execPath, args, {
      cwd: this.#options.cwd,
      env: {
        // With shards, they hold the dense variables too unless the environment or a flag says otherwise.
        ...(this.#psAddresses === undefined ? {} : { EDL_DENSE_ON: 'shards' }),
        ...process.env,
        ...this.#options.env,
        EDL_MASTER_ADDR: masterAddress,
        EDL_JOB_TOKEN: token,
        EDL_WORKER_ID: workerId,
        ...(this.#psAddresses === undefined ? {} : { EDL_PS_ADDRESSES: this.#psAddresses }),
        // The worker ends itself when this process dies (SIGKILL leaves no chance to stop it) or
        // when its calls here fail for a lease (see @edl/worker's MasterWatch).
        EDL_MASTER_PID: String(process.pid),
        EDL_MASTER_LEASE_MS: String(this.#options.masterLeaseMs ?? 15_000),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    slot.process = child;
    slot.workerId = workerId;
    slot.stopping = false;
    this.#events.workerStarted?.(workerId, slot.restarts);
    const output = this.#options.onOutput ?? ((id, line) => process.stderr.write(`[${id}] ${line}\n`));
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', (line) => output(workerId, line));
    }
    slot.exited = watchChildExit(child, (exit) => this.#onExit(slot, child, workerId, exit));
  }

  #onExit(slot: Slot, child: ChildProcess, workerId: string, exit: ChildExit): void {
    if (slot.process !== child) return;
    delete slot.process;
    const { code, signal, spawnError, how } = exit;
    const deliberate = slot.stopping || this.#stopped || this.#events.jobEnded();
    const crashed = !deliberate && (code !== 0 || signal !== null || spawnError !== undefined);
    this.#events.workerLost(workerId, `worker process ${how}`, crashed);
    if (deliberate || !this.#slots.has(slot.index)) return;
    // A crash, or a clean exit while the job runs (the worker left on its own): restart the slot,
    // within the same limit so that a worker that can never start does not loop forever.
    if (slot.restarts >= this.#maxRestarts) {
      this.#slots.delete(slot.index);
      this.#events.giveUp(
        'WORKER_RESTARTS_EXHAUSTED',
        `Worker slot ${slot.index} ended ${slot.restarts + 1} times, more than maxRestarts (${this.#maxRestarts}); last: ${workerId} ${how}`,
      );
      return;
    }
    slot.restarts++;
    this.#launch(slot);
  }

  async #stopSlot(slot: Slot, graceMs = this.#options.stopGraceMs ?? 5_000): Promise<void> {
    const child = slot.process;
    if (child === undefined) return;
    slot.stopping = true;
    if (slot.workerId !== undefined) this.#events.requestStop?.(slot.workerId);
    await stopChild(child, slot.exited, graceMs);
  }
}
