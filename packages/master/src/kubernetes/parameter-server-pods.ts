import { checkInteger } from '@edl/common';
import { EmbeddingClient } from '@edl/proto';
import { shardOfId } from '@edl/ps';
import type { V1Pod } from '@kubernetes/client-node';
import { type MasterLogger, silentLogger } from '../logger.js';
import type { Master } from '../master.js';
import { LABELS, psSelector } from './labels.js';
import type { PodApi } from './pod-api.js';
import { podOutcome } from './pod-outcome.js';
import { CreationClock, type PodWatcher, type PodWatcherOptions, watchOwnPods } from './pod-watcher.js';
import {
  buildPsPod,
  buildPsService,
  DEFAULT_PS_PORT,
  type ParameterServerPodTemplate,
  psPodName,
  psServiceAddress,
  type ShardRestorePoint,
} from './ps-pod.js';
import type { ServiceApi } from './service-api.js';

/** Options of {@link KubernetesParameterServers}. */
export interface KubernetesParameterServersOptions {
  /** The pods API of the job's namespace. */
  readonly api: PodApi;
  /** Creates the shards' Services in the same namespace. */
  readonly services: ServiceApi;
  /** How the shards' pods look; the namespace is the API's. */
  readonly template: Omit<ParameterServerPodTemplate, 'namespace'>;
  /**
   * Relaunches allowed per shard before the job fails (default 3), as local shards' maxRestarts:
   * every end of a shard's pod while the job runs counts, whatever ended it.
   */
  readonly maxRelaunches?: number;
  /** Grace period, in seconds, of the shard pods deleted when the job stops (default 10). */
  readonly deleteGraceSeconds?: number;
  /** Tries to create a pod or a Service before the job fails (default 5, with backoff). */
  readonly createAttempts?: number;
  readonly watcher?: PodWatcherOptions;
  readonly logger?: MasterLogger;
  /**
   * Shard `index`'s pod was relaunched (its new pod is created, under the same Service name): the
   * job must roll every shard and the task state back to the last cut. The master's roll-back is
   * wired here.
   */
  readonly onShardRelaunched?: (index: number) => void;
  /**
   * Where shard checkpoint files go (the job's --checkpoint-dir, a path the master and the shard
   * pods share, e.g. on the --data-claim volume): with it, every checkpoint covers the shards, and
   * a relaunched shard starts from the last committed one.
   */
  readonly checkpointDir?: string;
  /**
   * The address workers dial for shard `index` (default: its Service's DNS name and port). Tests
   * whose "pods" are processes of one host give each shard a loopback port instead.
   */
  readonly addressOf?: (index: number) => string;
  /** The port shard `index` listens on (default: the template's port in every pod). */
  readonly portOf?: (index: number) => number;
  /**
   * The checkpoint every shard starts from (default: the initializer, or the checkpoint the master
   * resumed): an evaluation or prediction job's model checkpoint, which it keeps to the end.
   */
  readonly restorePoint?: ShardRestorePoint;
}

interface ShardState {
  readonly index: number;
  readonly port: number;
  /** Pods launched for the shard, so far: the next pod's launch number. */
  launches: number;
  relaunches: number;
  podName?: string;
  creating: boolean;
  /** Stamp of the finished create call ({@link CreationClock}). */
  createdAt: number;
  /** The current pod exists and has not reached Succeeded or Failed. */
  alive: boolean;
  /** The current pod's end was handled. */
  ended: boolean;
  lastSeen?: V1Pod;
}

const PS_POD = /-ps-(\d+)-(\d+)$/;

/**
 * The parameter-server shards of a job on Kubernetes (`edl k8s submit --num-ps N`): a Service
 * `<job>-ps-<i>` per shard (the address workers get in EDL_PS_ADDRESSES) and a pod behind it,
 * both owned by the master pod. It watches the shards' pods; one that ends while the job runs
 * (deleted, OOMKilled, its node lost) is relaunched as a new pod under the same Service, from the
 * shard files of the last committed checkpoint (`--restore-dir --restore-version`), and
 * {@link KubernetesParameterServersOptions.onShardRelaunched} is told; past `maxRelaunches` for
 * one shard the job fails.
 */
export class KubernetesParameterServers {
  readonly #o: KubernetesParameterServersOptions;
  readonly #template: ParameterServerPodTemplate;
  readonly #logger: MasterLogger;
  readonly #maxRelaunches: number;
  readonly #createAttempts: number;
  readonly #graceSeconds: number;
  readonly #shards: ShardState[] = [];
  readonly #watcher: PodWatcher;
  readonly #clock = new CreationClock();
  readonly #creations = new Set<Promise<void>>();
  #restorePoint: ShardRestorePoint | undefined;
  #failed: ((reason: string) => void) | undefined;
  #jobEnded: () => boolean = () => false;
  #client: EmbeddingClient | undefined;
  #stopped = false;

  constructor(options: KubernetesParameterServersOptions) {
    this.#o = options;
    this.#template = { ...options.template, namespace: options.api.namespace };
    this.#restorePoint = options.restorePoint;
    this.#logger = options.logger ?? silentLogger;
    const numShards = checkInteger(options.template.numShards, 'numShards', 1, 1024);
    this.#maxRelaunches = checkInteger(options.maxRelaunches ?? 3, 'maxRelaunches', 0);
    this.#createAttempts = checkInteger(options.createAttempts ?? 5, 'createAttempts', 1);
    this.#graceSeconds = checkInteger(options.deleteGraceSeconds ?? 10, 'deleteGraceSeconds', 0);
    for (let index = 0; index < numShards; index++) {
      const port = checkInteger(
        options.portOf?.(index) ?? options.template.port ?? DEFAULT_PS_PORT,
        'port',
        1,
        65_535,
      );
      this.#shards.push({
        index,
        port,
        launches: 0,
        relaunches: 0,
        creating: false,
        createdAt: 0,
        alive: false,
        ended: false,
      });
    }
    this.#watcher = watchOwnPods(
      options.api,
      psSelector(options.template.jobName),
      this.#clock,
      {
        synced: (pods) => this.#synced(pods),
        observe: (pod, deleted) => this.#observe(pod, deleted),
        warn: (message, fields) => this.#logger.warn(message, fields),
      },
      options.watcher,
    );
  }

  /** The address of each shard, in shard order: what workers get in EDL_PS_ADDRESSES. */
  get addresses(): string[] {
    const { jobName } = this.#template;
    return this.#shards.map(
      (s) =>
        this.#o.addressOf?.(s.index) ?? psServiceAddress(jobName, this.#template.namespace, s.index, s.port),
    );
  }

  /** The checkpoint a shard launched from now on starts from; undefined: the initializer. */
  get restorePoint(): ShardRestorePoint | undefined {
    return this.#restorePoint;
  }

  /** Sets {@link restorePoint}: the master sets it when it resumes and after each checkpoint it commits. */
  setRestorePoint(point: ShardRestorePoint | undefined): void {
    this.#restorePoint = point;
  }

  /** The current pod of each shard and its relaunches, in shard order (status pages, tests). */
  pods(): Array<{ index: number; podName: string | undefined; relaunches: number }> {
    return this.#shards.map((s) => ({ index: s.index, podName: s.podName, relaunches: s.relaunches }));
  }

  /**
   * Connects the shards to the master: a shard launched after a resumed master starts from the
   * checkpoint it resumed, and with `checkpointDir` every checkpoint the master writes has the
   * shards write their files first and moves the restore point to it once committed.
   */
  attach(master: Master, token: string): void {
    const resumed = master.resumedFrom;
    if (resumed?.hasShardFiles) this.setRestorePoint({ dir: resumed.dir, version: resumed.version });
    else if (resumed !== undefined)
      this.#logger.warn(
        `checkpoint ${resumed.version} has no parameter-server shard files: the shards' embedding rows start from the initializer`,
      );
    const dir = this.#o.checkpointDir;
    // Evaluation and prediction change no row: a relaunched shard restores the job's restore point
    // and needs no roll-back, which would empty the shards' tables.
    if (dir === undefined || !master.taskManager.jobType.startsWith('training')) return;
    this.#client = new EmbeddingClient({ addresses: this.addresses, token, shardOfId });
    master.useParameterServers(this.#client, (version) => this.setRestorePoint({ dir, version }));
  }

  /**
   * Creates the Services, lists the shards' pods (a master run again continues their launch
   * numbers) and creates one pod per shard; resolves once those create calls are done, without
   * waiting for the shards to listen (workers retry). `onFailed` is told when a shard cannot be
   * kept running: the job must fail. A shard that ends once `jobEnded()` holds is not relaunched.
   */
  async start(onFailed: (reason: string) => void, jobEnded: () => boolean = () => false): Promise<void> {
    this.#failed = onFailed;
    this.#jobEnded = jobEnded;
    const { jobName, owner } = this.#template;
    const namespace = this.#template.namespace;
    for (const shard of this.#shards) {
      const service = buildPsService(jobName, namespace, shard.index, shard.port, owner);
      const name = service.metadata?.name ?? '';
      const made = await this.#withRetries(`parameter-server Service ${name}`, () =>
        this.#o.services.create(service),
      );
      if (made === 'exists') this.#logger.warn(`parameter-server Service ${name} exists already: kept`);
      if (made === undefined) return;
    }
    await this.#watcher.start();
    for (const shard of this.#shards) this.#launch(shard, false);
    await this.#settled();
  }

  /** Deletes the shards' pods (SIGTERM, then the grace), waits until they are gone, closes the watch. */
  async stop(graceMs = 10_000): Promise<void> {
    this.#stopped = true;
    await this.#settled();
    await Promise.all(
      this.#shards
        .filter((s) => s.alive && s.podName !== undefined)
        .map((s) =>
          this.#o.api.delete(s.podName as string, this.#graceSeconds).catch((error: unknown) =>
            this.#logger.warn(`deleting parameter-server pod ${s.podName} failed`, {
              error: (error as Error).message,
            }),
          ),
        ),
    );
    const deadline = Date.now() + graceMs + this.#graceSeconds * 1000;
    while (this.#shards.some((s) => s.alive) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    await this.#watcher.stop();
    this.#client?.close();
  }

  async #settled(): Promise<void> {
    while (this.#creations.size > 0) await Promise.all(this.#creations);
  }

  /** Runs `create` until it succeeds; after the last attempt fails the job and resolves undefined. */
  async #withRetries<T>(what: string, create: () => Promise<T>): Promise<T | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await create();
      } catch (error) {
        const message = (error as Error).message;
        if (attempt >= this.#createAttempts || this.#stopped) {
          if (!this.#stopped)
            this.#failed?.(`Could not create ${what} after ${attempt} attempt(s): ${message}`);
          return undefined;
        }
        this.#logger.warn(`creating ${what} failed, retrying`, { attempt, error: message });
        await new Promise((resolve) => setTimeout(resolve, 200 * 2 ** (attempt - 1)));
      }
    }
  }

  #launch(shard: ShardState, relaunch: boolean): void {
    const launch = shard.launches++;
    const podName = psPodName(this.#template.jobName, shard.index, launch);
    Object.assign(shard, { podName, creating: true, alive: false, ended: false, createdAt: 0 });
    delete shard.lastSeen;
    const pod = buildPsPod({ ...this.#template, port: shard.port }, shard.index, launch, this.#restorePoint);
    const creation = this.#withRetries(`parameter-server pod ${podName}`, () => this.#o.api.create(pod))
      .then((created) => {
        if (shard.podName !== podName) return;
        shard.creating = false;
        if (created === undefined) {
          shard.ended = true;
          return;
        }
        shard.createdAt = this.#clock.created();
        if (!shard.ended)
          shard.alive = shard.lastSeen === undefined || podOutcome(shard.lastSeen).kind === 'active';
        this.#logger.info(`parameter-server pod ${podName} created`, { shard: shard.index });
        if (!relaunch) return;
        try {
          this.#o.onShardRelaunched?.(shard.index);
        } catch (error) {
          this.#logger.error(`the relaunch hook of parameter-server shard ${shard.index} failed`, {
            error: (error as Error).message,
          });
        }
      })
      .finally(() => this.#creations.delete(creation));
    this.#creations.add(creation);
  }

  /** A full list: observe every pod, and treat current pods missing from it as deleted. */
  #synced(pods: readonly V1Pod[]): void {
    const listed = new Set<string>();
    for (const pod of pods) {
      const name = pod.metadata?.name ?? '';
      listed.add(name);
      const match = PS_POD.exec(name);
      const shard = this.#shards[Number(pod.metadata?.labels?.[LABELS.psIndex] ?? -1)];
      if (match && shard && Number(match[1]) === shard.index)
        shard.launches = Math.max(shard.launches, Number(match[2]) + 1);
      this.#observe(pod, false);
    }
    for (const shard of this.#shards) {
      if (shard.podName === undefined || shard.ended || shard.creating) continue;
      if (!this.#clock.listedAfter(shard.createdAt) || listed.has(shard.podName)) continue;
      this.#logger.warn(`parameter-server pod ${shard.podName} is gone (found by a re-list)`);
      this.#observe(shard.lastSeen ?? { metadata: { name: shard.podName } }, true, shard);
    }
  }

  #observe(pod: V1Pod, deleted: boolean, known?: ShardState): void {
    const shard = known ?? this.#shards[Number(pod.metadata?.labels?.[LABELS.psIndex] ?? -1)];
    if (shard === undefined || shard.podName !== pod.metadata?.name) return; // an earlier launch's
    shard.lastSeen = pod;
    const outcome = podOutcome(pod, deleted);
    if (deleted || outcome.kind === 'succeeded' || pod.status?.phase === 'Failed') shard.alive = false;
    else if (!shard.creating) shard.alive = true;
    if (outcome.kind === 'active' || shard.ended) return;
    shard.ended = true;
    if (this.#stopped || this.#jobEnded()) return;
    const podName = shard.podName as string;
    const phase = pod.status?.phase;
    // A pod that cannot start (image pull error) still exists: delete it, so that it neither holds
    // resources nor serves under the Service beside its successor.
    if (
      shard.alive &&
      pod.metadata?.deletionTimestamp === undefined &&
      phase !== 'Succeeded' &&
      phase !== 'Failed'
    ) {
      this.#o.api.delete(podName, 0).catch((error: unknown) =>
        this.#logger.warn(`deleting parameter-server pod ${podName} failed`, {
          error: (error as Error).message,
        }),
      );
    }
    const address = this.addresses[shard.index];
    if (shard.relaunches >= this.#maxRelaunches) {
      this.#failed?.(
        `Parameter-server shard ${shard.index} (${address}, pod ${podName}) ${outcome.kind}: ${outcome.reason}; ${shard.relaunches} relaunch(es) used, maxRelaunches is ${this.#maxRelaunches}`,
      );
      return;
    }
    shard.relaunches++;
    const point = this.#restorePoint;
    this.#logger.warn(
      `Parameter-server shard ${shard.index} (pod ${podName}) ${outcome.kind}: ${outcome.reason}; relaunched under ${address}. ${point === undefined ? 'Its embedding rows restart from the initializer (seeded): no checkpoint was committed yet' : `It restores the checkpoint of model version ${point.version} in ${point.dir}`}`,
      { shard: shard.index, relaunches: shard.relaunches },
    );
    this.#launch(shard, true);
  }
}
