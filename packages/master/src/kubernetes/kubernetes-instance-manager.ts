import { checkInteger } from '@edl/common';
import type { V1Pod } from '@kubernetes/client-node';
import type { InstanceEvents, InstanceManager } from '../instance-manager.js';
import { type MasterLogger, silentLogger } from '../logger.js';
import type { Master } from '../master.js';
import { LABELS, workerSelector } from './labels.js';
import { masterInstanceEvents } from './master-events.js';
import {
  KubernetesParameterServers,
  type KubernetesParameterServersOptions,
} from './parameter-server-pods.js';
import type { PodApi } from './pod-api.js';
import { type PodOutcome, podOutcome } from './pod-outcome.js';
import {
  CreationClock,
  type PodWatcher,
  type PodWatcherOptions,
  type PodWatcherStats,
  watchOwnPods,
} from './pod-watcher.js';
import { buildWorkerPod, type WorkerPodTemplate, workerPodName } from './worker-pod.js';

/** Options of {@link KubernetesInstanceManager}. */
export interface KubernetesInstanceManagerOptions {
  /** The pods API of the job's namespace ({@link createPodApi}). */
  readonly api: PodApi;
  /** How worker pods look; the namespace is the API's. */
  readonly template: Omit<WorkerPodTemplate, 'namespace'>;
  /** Workers to run (default 1). */
  readonly numWorkers?: number;
  /**
   * Relaunches of workers that failed on their own (non-zero exit, OOMKilled, ...) allowed in the
   * whole job before it fails (default 3). Preempted, evicted and deleted workers are always
   * relaunched and do not count.
   */
  readonly maxRelaunches?: number;
  /** Grace period, in seconds, of the pods the manager deletes (scale-down, stop; default 10). */
  readonly deleteGraceSeconds?: number;
  /** Tries to create a pod before the job fails (default 5, with backoff). */
  readonly createAttempts?: number;
  readonly watcher?: PodWatcherOptions;
  readonly logger?: MasterLogger;
  /**
   * The job's parameter-server shards (`--num-ps`): started before the first worker, whose pods get
   * their addresses in EDL_PS_ADDRESSES, and stopped after the last.
   */
  readonly parameterServers?: KubernetesParameterServers;
}

/** How the workers of a job fared, for the final status line. */
export interface WorkerSummary {
  /** Pods created, relaunches included. */
  launched: number;
  /** Of those, pods that replaced a lost worker. */
  relaunched: number;
  succeeded: number;
  /** Workers that failed on their own (counted against maxRelaunches). */
  failed: number;
  /** Workers taken away: preempted, evicted, killed from outside, deleted. */
  preempted: number;
  /** Workers the manager stopped (scale-down, job end) and workers that exited after the job ended. */
  stopped: number;
  /** Pods not yet ended. */
  running: number;
}

interface WorkerRecord {
  readonly workerId: string;
  readonly podName: string;
  readonly slot: number;
  /** Create call in flight. */
  creating: boolean;
  /** Stamp of the finished create call ({@link CreationClock}). */
  createdAt: number;
  /** The pod exists and has not reached Succeeded or Failed. */
  alive: boolean;
  /** The master has been told this worker is gone. */
  ended: boolean;
  /** Deleted on purpose by the manager. */
  stopping: boolean;
  lastSeen?: V1Pod;
}

const WORKER_ID = /^worker-(\d+)$/;

/**
 * Runs the workers of a job as Kubernetes pods, the way ElasticDL's k8s instance manager does:
 * creates `numWorkers` pods, watches the job's pods (list, then watch from the list's
 * resourceVersion; resumed on a dropped stream; re-listed and reconciled on 410 Gone), and when a
 * worker's pod ends, tells the master (its tasks go back to todo) and relaunches it under a new
 * worker id: always when it was preempted, evicted, killed from outside or deleted; up to
 * `maxRelaunches` times in the job when it failed on its own. `scaleTo` changes the worker count
 * while the job runs.
 */
export class KubernetesInstanceManager implements InstanceManager {
  readonly #api: PodApi;
  readonly #events: InstanceEvents;
  readonly #options: KubernetesInstanceManagerOptions;
  readonly #template: WorkerPodTemplate;
  readonly #logger: MasterLogger;
  readonly #maxRelaunches: number;
  readonly #createAttempts: number;
  readonly #watcher: PodWatcher;
  readonly #clock = new CreationClock();
  readonly #workers = new Map<string, WorkerRecord>();
  /** Worker ids by slot: the slot's current worker. */
  readonly #slots = new Map<number, string>();
  readonly #summary: WorkerSummary = {
    launched: 0,
    relaunched: 0,
    succeeded: 0,
    failed: 0,
    preempted: 0,
    stopped: 0,
    running: 0,
  };
  #target: number;
  #nextWorker = 0;
  #nextSlot = 0;
  #relaunches = 0;
  #stopped = false;
  #started = false;
  readonly #creations = new Set<Promise<void>>();

  constructor(options: KubernetesInstanceManagerOptions, events: InstanceEvents) {
    this.#options = options;
    this.#api = options.api;
    this.#events = events;
    const shards = options.parameterServers;
    this.#template = {
      ...options.template,
      namespace: options.api.namespace,
      ...(shards === undefined
        ? {}
        : {
            env: {
              // The shards hold the dense variables too unless the worker template says otherwise.
              EDL_DENSE_ON: 'shards',
              ...options.template.env,
              EDL_PS_ADDRESSES: shards.addresses.join(','),
            },
          }),
    };
    this.#logger = options.logger ?? silentLogger;
    this.#target = checkInteger(options.numWorkers ?? 1, 'numWorkers', 0, 10_000);
    this.#maxRelaunches = checkInteger(options.maxRelaunches ?? 3, 'maxRelaunches', 0);
    this.#createAttempts = checkInteger(options.createAttempts ?? 5, 'createAttempts', 1);
    checkInteger(options.deleteGraceSeconds ?? 10, 'deleteGraceSeconds', 0);
    this.#watcher = watchOwnPods(
      this.#api,
      workerSelector(options.template.jobName),
      this.#clock,
      {
        synced: (pods) => this.#synced(pods),
        observe: (pod, deleted) => this.#observe(pod, deleted),
        warn: (message, fields) => this.#logger.warn(message, fields),
      },
      options.watcher,
    );
  }

  get targetWorkers(): number {
    return this.#target;
  }

  get runningWorkers(): number {
    let n = 0;
    for (const record of this.#workers.values()) if (record.alive || record.creating) n++;
    return n;
  }

  /** The watch's counters (lists, resumes, 410s, bookmarks, last resourceVersion). */
  get watchStats(): Readonly<PodWatcherStats> {
    return this.#watcher.stats;
  }

  /** The job's parameter-server shards, when it has any. */
  get parameterServers(): KubernetesParameterServers | undefined {
    return this.#options.parameterServers;
  }

  /** How the workers fared so far. */
  summary(): WorkerSummary {
    return { ...this.#summary, running: this.runningWorkers };
  }

  /** The live workers and their pods. */
  workers(): Array<{ workerId: string; podName: string }> {
    return [...this.#workers.values()]
      .filter((r) => (r.alive || r.creating) && !r.ended)
      .map((r) => ({ workerId: r.workerId, podName: r.podName }));
  }

  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    await this.#options.parameterServers?.start(
      (reason) => this.#events.giveUp('PS_RESTARTS_EXHAUSTED', reason),
      () => this.#events.jobEnded(),
    );
    // The first list tells which worker ids pods of this job already use (a restarted master):
    // new ids continue after them, so pod names never collide.
    await this.#watcher.start();
    while (this.#slots.size < this.#target) this.#launch(this.#nextSlot++, false);
    await this.#settled();
  }

  async scaleTo(numWorkers: number): Promise<number> {
    checkInteger(numWorkers, 'numWorkers', 0, 10_000);
    if (this.#stopped) return this.#target;
    this.#target = numWorkers;
    while (this.#slots.size < numWorkers) this.#launch(this.#nextSlot++, false);
    const excess = [...this.#slots.keys()]
      .sort((a, b) => b - a)
      .slice(0, Math.max(0, this.#slots.size - numWorkers));
    const deletions: Promise<void>[] = [];
    for (const slot of excess) {
      const record = this.#workers.get(this.#slots.get(slot) ?? '');
      this.#slots.delete(slot);
      if (record) deletions.push(this.#stopWorker(record));
    }
    await Promise.all(deletions);
    await this.#settled();
    return this.#target;
  }

  /**
   * Deletes the pods still alive (gracefully: the workers get SIGTERM), waits until they are gone
   * or `graceMs` (plus the pods' grace period) passed, closes the watch and logs the summary.
   */
  async stop(graceMs = 10_000): Promise<void> {
    const first = !this.#stopped;
    this.#stopped = true;
    await this.#settled();
    await Promise.all([...this.#workers.values()].filter((r) => r.alive).map((r) => this.#stopWorker(r)));
    const deadline = Date.now() + graceMs + (this.#options.deleteGraceSeconds ?? 10) * 1000;
    while (this.runningWorkers > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await this.#watcher.stop();
    await this.#options.parameterServers?.stop(graceMs);
    if (first) {
      const s = this.summary();
      this.#logger.info(
        `workers: ${s.launched} launched (${s.relaunched} relaunches), ${s.succeeded} succeeded, ${s.failed} failed, ${s.preempted} preempted or deleted, ${s.stopped} stopped by the master${s.running > 0 ? `, ${s.running} still running` : ''}`,
        { ...s },
      );
    }
  }

  /** Resolves when no create call is in flight. */
  async #settled(): Promise<void> {
    while (this.#creations.size > 0) await Promise.all(this.#creations);
  }

  #launch(slot: number, relaunch: boolean): void {
    const workerId = `worker-${this.#nextWorker++}`;
    const record: WorkerRecord = {
      workerId,
      podName: workerPodName(this.#template.jobName, workerId),
      slot,
      creating: true,
      createdAt: 0,
      alive: false,
      ended: false,
      stopping: false,
    };
    this.#workers.set(workerId, record);
    this.#slots.set(slot, workerId);
    this.#summary.launched++;
    if (relaunch) this.#summary.relaunched++;
    this.#events.workerStarted?.(workerId, relaunch ? 1 : 0);
    const creation = this.#create(record).finally(() => this.#creations.delete(creation));
    this.#creations.add(creation);
  }

  async #create(record: WorkerRecord): Promise<void> {
    const pod = buildWorkerPod(this.#template, record.workerId);
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#api.create(pod);
        record.creating = false;
        record.createdAt = this.#clock.created();
        // The ADDED event may have come first and already ended it; otherwise it is alive now.
        if (!record.ended)
          record.alive = record.lastSeen === undefined || podOutcome(record.lastSeen).kind === 'active';
        this.#logger.info(`worker pod ${record.podName} created`, { workerId: record.workerId });
        // Scaled down (or stopped) while the create call was in flight: its delete found no pod.
        if (record.stopping && !record.ended) {
          await this.#api.delete(record.podName, this.#options.deleteGraceSeconds ?? 10).catch(() => {});
        }
        return;
      } catch (error) {
        const message = (error as Error).message;
        if (attempt >= this.#createAttempts || this.#stopped) {
          record.creating = false;
          record.ended = true;
          this.#slots.delete(record.slot);
          if (!this.#stopped) {
            this.#events.giveUp(
              'POD_CREATE_FAILED',
              `Could not create worker pod ${record.podName} after ${attempt} attempt(s): ${message}`,
            );
          }
          return;
        }
        this.#logger.warn(`creating worker pod ${record.podName} failed, retrying`, {
          attempt,
          error: message,
        });
        await new Promise((resolve) => setTimeout(resolve, 200 * 2 ** (attempt - 1)));
      }
    }
  }

  async #stopWorker(record: WorkerRecord): Promise<void> {
    if (record.ended || record.stopping) return;
    record.stopping = true;
    this.#events.requestStop?.(record.workerId);
    if (record.creating) return; // #create deletes it once it exists
    try {
      await this.#api.delete(record.podName, this.#options.deleteGraceSeconds ?? 10);
    } catch (error) {
      this.#logger.warn(`deleting worker pod ${record.podName} failed`, { error: (error as Error).message });
    }
  }

  /** A full list: observe every pod, and treat known pods missing from it as deleted. */
  #synced(pods: readonly V1Pod[]): void {
    const listed = new Set<string>();
    for (const pod of pods) {
      const name = pod.metadata?.name ?? '';
      listed.add(name);
      const id = pod.metadata?.labels?.[LABELS.workerId] ?? '';
      const match = WORKER_ID.exec(id);
      if (match) this.#nextWorker = Math.max(this.#nextWorker, Number(match[1]) + 1);
      this.#observe(pod, false);
    }
    for (const record of this.#workers.values()) {
      // Only pods whose creation finished before the list began can be missing from it.
      if (
        record.ended ||
        record.creating ||
        !this.#clock.listedAfter(record.createdAt) ||
        listed.has(record.podName)
      )
        continue;
      this.#logger.warn(`worker pod ${record.podName} is gone (found by a re-list)`);
      this.#observe(record.lastSeen ?? { metadata: { name: record.podName } }, true, record);
    }
  }

  #observe(pod: V1Pod, deleted: boolean, known?: WorkerRecord): void {
    const record = known ?? this.#workers.get(pod.metadata?.labels?.[LABELS.workerId] ?? '');
    if (record === undefined || record.podName !== pod.metadata?.name) return; // not ours (an old master's)
    record.lastSeen = pod;
    const outcome = podOutcome(pod, deleted);
    if (deleted || outcome.kind === 'succeeded' || pod.status?.phase === 'Failed') record.alive = false;
    else if (!record.creating) record.alive = true;
    if (outcome.kind === 'active' || record.ended) return;
    record.ended = true;
    this.#ended(record, outcome);
  }

  #ended(record: WorkerRecord, outcome: Exclude<PodOutcome, { kind: 'active' }>): void {
    const { workerId, podName } = record;
    const inSlot = this.#slots.get(record.slot) === workerId;
    if (record.stopping || this.#stopped || !inSlot) {
      this.#summary.stopped++;
      this.#events.workerLost(
        workerId,
        `worker pod ${podName} stopped by the master (${outcome.reason})`,
        false,
      );
      return;
    }
    // A pod that will never run (image pull error) or still runs after being given up on: delete it,
    // so that it neither holds resources nor reappears as a live worker.
    const phase = record.lastSeen?.status?.phase;
    if (
      record.alive &&
      record.lastSeen?.metadata?.deletionTimestamp === undefined &&
      phase !== 'Succeeded' &&
      phase !== 'Failed'
    ) {
      this.#api
        .delete(podName, 0)
        .catch((error: unknown) =>
          this.#logger.warn(`deleting worker pod ${podName} failed`, { error: (error as Error).message }),
        );
    }
    const reason = `worker pod ${podName} ${outcome.kind}: ${outcome.reason}`;
    if (this.#events.jobEnded()) {
      // The job is over (succeeded, or failed for another reason such as relaunches running out):
      // a worker that exits now leaves because of that. A clean exit is a success, any other
      // (a worker told the job failed, killed while leaving) a stop, never a failure.
      if (outcome.kind === 'succeeded') this.#summary.succeeded++;
      else this.#summary.stopped++;
      this.#events.workerLost(workerId, `${reason} (after the job ended)`, false);
      this.#slots.delete(record.slot);
      return;
    }
    if (outcome.kind === 'succeeded') this.#summary.succeeded++;
    else if (outcome.kind === 'preempted') this.#summary.preempted++;
    else this.#summary.failed++;
    // A preempted worker is no task's fault: its tasks go back without counting as failures.
    this.#events.workerLost(workerId, reason, outcome.kind === 'failed');
    if (outcome.kind !== 'preempted') {
      // Failed, or left on its own while the job runs: relaunch within the limit.
      if (this.#relaunches >= this.#maxRelaunches) {
        this.#slots.delete(record.slot);
        this.#events.giveUp(
          'WORKER_RELAUNCHES_EXHAUSTED',
          `Worker ${workerId} (pod ${podName}) ${outcome.kind === 'failed' ? 'failed' : 'exited'} with ${outcome.reason}; ${this.#relaunches} relaunch(es) used, maxRelaunches is ${this.#maxRelaunches}`,
        );
        return;
      }
      this.#relaunches++;
    }
    this.#logger.warn(`relaunching ${reason}`, { slot: record.slot });
    this.#launch(record.slot, true);
  }
}

/** The parameter-server options of {@link kubernetesInstanceManager}: the hook also gets the master. */
export interface KubernetesShardOptions extends Omit<KubernetesParameterServersOptions, 'onShardRelaunched'> {
  /**
   * Shard `index`'s pod was relaunched, told after the job's roll-back to its last cut has begun
   * (`Master.onShardRelaunched`, which this manager always calls), with this job's master.
   */
  readonly onShardRelaunched?: (index: number, master: Master) => void;
}

/** The shards of a job, their relaunch hook bound to its master, connected to its checkpoints. */
function parameterServersOf(
  options: KubernetesShardOptions,
  master: Master,
  token: string,
): KubernetesParameterServers {
  const { onShardRelaunched, ...settings } = options;
  const shards = new KubernetesParameterServers({
    logger: master.logger,
    ...settings,
    onShardRelaunched: (index: number) => {
      // A relaunched shard alone at the cut beside live shards is not a consistent state: every
      // shard and the task state go back to the last cut (docs/master.md). The roll-back retries
      // its RestoreShard calls while the new pod's Service does not answer yet.
      master.onShardRelaunched(index).catch((error: unknown) => {
        master.logger.error(`roll-back after parameter-server shard ${index} was relaunched failed`, {
          error: error instanceof Error ? error.message : String(error),
        });
      });
      onShardRelaunched?.(index, master);
    },
  });
  shards.attach(master, token);
  return shards;
}

/**
 * The `instanceManager` factory of `startMaster` for Kubernetes: workers dial `masterAddress`
 * (the master's Service, e.g. `mnist-master.ml.svc:50001`) rather than the address the server
 * bound, and report to that master.
 *
 * ```ts
 * await startMaster({ ...job, host: '0.0.0.0', port: 50001,
 *   instanceManager: kubernetesInstanceManager({ api, template, numWorkers: 4 }) });
 * ```
 */
export function kubernetesInstanceManager(
  options: Omit<KubernetesInstanceManagerOptions, 'parameterServers'> & {
    /** The job's parameter-server shards (`--num-ps`), connected to the master's checkpoints. */
    readonly parameterServers?: KubernetesShardOptions;
  },
): (address: string, token: string, master: Master) => KubernetesInstanceManager {
  return (address, token, master) => {
    const { parameterServers: shardOptions, ...rest } = options;
    const shards = shardOptions === undefined ? undefined : parameterServersOf(shardOptions, master, token);
    return new KubernetesInstanceManager(
      {
        logger: master.logger,
        ...rest,
        template: { ...options.template, masterAddress: options.template.masterAddress || address },
        ...(shards === undefined ? {} : { parameterServers: shards }),
      },
      masterInstanceEvents(master),
    );
  };
}
