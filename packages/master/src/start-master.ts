import { randomBytes } from 'node:crypto';
import { checkInteger } from '@edl/common';
import type { DataReader, Shard } from '@edl/data';
import { EmbeddingClient } from '@edl/proto';
import { shardOfId } from '@edl/ps';
import type { MasterErrorCode } from './errors.js';
import { indexCacheDirsOf } from './file-index-service.js';
import { type MasterServer, serveMaster } from './grpc-server.js';
import { type LiveViewServer, serveLiveView } from './http/live-view-server.js';
import { createJobMetrics } from './http/metrics.js';
import type { InstanceManager } from './instance-manager.js';
import { JobStatusTracker } from './job-status.js';
import { LocalInstanceManager, type LocalInstanceManagerOptions } from './local-instance-manager.js';
import type { LocalParameterServers } from './local-parameter-servers.js';
import { type JobResult, Master, type MasterOptions } from './master.js';
import { TensorBoardWriter } from './tensorboard.js';

/** Options of {@link startMaster}: the master's, where to listen, the data readers and the workers. */
export interface StartMasterOptions extends MasterOptions {
  /** Interface to listen on (default 127.0.0.1). */
  readonly host?: string;
  /** Port (default 0: any free port). */
  readonly port?: number;
  /** Job token (default: 32 random bytes, hex). */
  readonly token?: string;
  /** Largest gRPC message, in bytes (default 64 MiB). */
  readonly maxMessageBytes?: number;
  /** Readers whose `createShards()` give the shards, when `*Shards` are not given directly. */
  readonly trainingReader?: DataReader<unknown>;
  readonly evaluationReader?: DataReader<unknown>;
  readonly predictionReader?: DataReader<unknown>;
  /** Local worker processes to run; omit to let workers join from elsewhere. */
  readonly workers?: Omit<LocalInstanceManagerOptions, 'masterAddress' | 'token'>;
  /**
   * Or local workers started already, before the master (see `LocalInstanceManager.attach`): their
   * `masterAddress` and `token` must be this master's `host:port` and `token`.
   */
  readonly localWorkers?: LocalInstanceManager;
  /** Or any instance manager (Kubernetes), built once the address and token are known. */
  readonly instanceManager?: (address: string, token: string, master: Master) => InstanceManager;
  /** How often leases are checked, in milliseconds (default: a tenth of the lease, at least 50). */
  readonly leaseCheckIntervalMs?: number;
  /** After the job ends, how long workers get to exit by themselves (default 10,000 ms). */
  readonly workerExitGraceMs?: number;
  /** Write TensorBoard scalars (loss, throughput, evaluation metrics) into this directory. */
  readonly tensorboardDir?: string;
  /** The job's id in log lines, the live view and metrics (default: 8 random hex digits). */
  readonly jobId?: string;
  /**
   * Serve the live view, `/api/status` and `/metrics` over HTTP (default: not served). It stays up
   * after the job ends, until {@link MasterHandle.stop}.
   */
  readonly http?: {
    /** Interface (default 127.0.0.1). */
    readonly host?: string;
    /** Port (default 0: a free one). */
    readonly port?: number;
    /** A token that opens `/metrics` only; the job token opens everything. */
    readonly metricsToken?: string;
  };
}

/** A running master. */
export interface MasterHandle {
  /** host:port for workers and admin clients. */
  readonly address: string;
  readonly token: string;
  readonly master: Master;
  readonly instanceManager?: InstanceManager;
  readonly server: MasterServer;
  readonly jobId: string;
  /** What the live view shows, also without HTTP. */
  readonly status: JobStatusTracker;
  /** The live view, with `http`. */
  readonly liveView?: LiveViewServer;
  /** Resolves when the job has ended and the workers are gone (never rejects; see `state`). */
  wait(): Promise<JobResult>;
  /** Stops workers and servers (the live view too) now; a job still running is left as it is: resume it from its checkpoint. */
  stop(): Promise<void>;
}

/**
 * Creates the shards (from readers if needed), resumes from a checkpoint if there is one, serves
 * the master over gRPC, starts the workers, and expires leases until the job ends.
 *
 * ```ts
 * const handle = await startMaster({
 *   jobType: 'training', trainingReader: reader, minibatchSize: 32, numEpochs: 2,
 *   workers: { args: ['worker.js'], numWorkers: 2 },
 * });
 * const result = await handle.wait();
 * ```
 */
export async function startMaster(options: StartMasterOptions): Promise<MasterHandle> {
  const shards = async (given: readonly Shard[] | undefined, reader: DataReader<unknown> | undefined) =>
    given ?? (reader ? await reader.createShards() : undefined);
  const trainingShards = await shards(options.trainingShards, options.trainingReader);
  const evaluationShards = await shards(options.evaluationShards, options.evaluationReader);
  const predictionShards = await shards(options.predictionShards, options.predictionReader);
  const master = await Master.create({
    ...options,
    ...(trainingShards ? { trainingShards } : {}),
    ...(evaluationShards ? { evaluationShards } : {}),
    ...(predictionShards ? { predictionShards } : {}),
  });
  const token = options.token ?? randomBytes(32).toString('hex');
  const localShards = options.localWorkers?.parameterServers;
  const earlyShardClient =
    localShards === undefined ? undefined : await restoreLocalShards(master, localShards, token);
  const jobId = options.jobId ?? randomBytes(4).toString('hex');
  const tracker = new JobStatusTracker(master, { jobId });
  const liveView =
    options.http === undefined
      ? undefined
      : await serveLiveView(tracker, createJobMetrics(master, tracker), { ...options.http, token });
  const tensorboard =
    options.tensorboardDir === undefined
      ? undefined
      : new TensorBoardWriter(options.tensorboardDir, master, tracker);
  let instances: InstanceManager | undefined;
  const server = await serveMaster(master, {
    token,
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.maxMessageBytes !== undefined ? { maxMessageBytes: options.maxMessageBytes } : {}),
    scaleWorkers: async (n) => {
      if (instances === undefined)
        throw new RangeError('Expected a master with an instance manager for scaleWorkers');
      master.logger.info(`scaling workers to ${n}`, { from: instances.targetWorkers });
      return instances.scaleTo(n);
    },
    numWorkers: () => instances?.runningWorkers ?? 0,
    indexCacheDirs: indexCacheDirsOf([
      options.trainingReader,
      options.evaluationReader,
      options.predictionReader,
    ]),
  });
  const events = {
    workerLost: (workerId: string, reason: string, crashed: boolean) => {
      master.workerLost(workerId, reason, crashed);
    },
    giveUp: (code: MasterErrorCode, message: string) => master.fail(code, message),
    jobEnded: () => master.taskManager.finished,
    requestStop: (workerId: string) => master.requestStop(workerId),
    workerStarted: (workerId: string, restarts: number) => master.workerStarted(workerId, restarts),
  };
  if (options.instanceManager) instances = options.instanceManager(server.address, token, master);
  else if (options.localWorkers) {
    options.localWorkers.attach(events);
    instances = options.localWorkers;
  } else if (options.workers) {
    instances = new LocalInstanceManager(
      {
        ...options.workers,
        env: { ...options.workers.env, EDL_JOB_ID: jobId },
        masterAddress: server.address,
        token,
      },
      events,
    );
  }
  const interval = checkInteger(
    options.leaseCheckIntervalMs ?? Math.max(50, Math.floor(master.taskManager.leaseMs / 10)),
    'leaseCheckIntervalMs',
    1,
  );
  const leaseTimer = setInterval(() => master.taskManager.expireLeases(), interval);
  leaseTimer.unref();
  master.logger.info(`master listening on ${server.address}`, {
    jobType: master.taskManager.jobType,
    workers: instances?.targetWorkers ?? 0,
  });
  await instances?.start();
  const shardClient =
    localShards === undefined
      ? undefined
      : (earlyShardClient ?? new EmbeddingClient({ addresses: localShards.addresses, token, shardOfId }));
  const checkpointDir = options.checkpointDir;
  // Evaluation and prediction change no row: a relaunched shard starts from the job's restore point
  // (the checkpoint evaluated) and needs no roll-back, which would empty the shards' tables.
  if (
    shardClient !== undefined &&
    localShards !== undefined &&
    master.taskManager.jobType.startsWith('training')
  ) {
    master.useParameterServers(shardClient, (version) => {
      if (checkpointDir !== undefined) localShards.setRestorePoint({ dir: checkpointDir, version });
    });
    // A shard relaunched mid-job rolls the whole job back to the last cut (docs/master.md).
    localShards.onRelaunched((index) => void master.onShardRelaunched(index, localShards.ready()));
  }

  let stopping: Promise<void> | undefined;
  const stopJob = () => {
    stopping ??= (async () => {
      clearInterval(leaseTimer);
      await instances?.stop();
      await server.shutdown();
      await master.flush();
      shardClient?.close();
      await tensorboard?.close();
    })();
    return stopping;
  };
  let closing: Promise<void> | undefined;
  const stop = () => {
    closing ??= stopJob().then(async () => {
      tracker.close();
      await liveView?.close();
    });
    return closing;
  };
  const finished = master.done.then(async (result) => {
    const grace = options.workerExitGraceMs ?? 10_000;
    const deadline = Date.now() + grace;
    while (instances !== undefined && instances.runningWorkers > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await stopJob();
    return result;
  });
  return {
    address: server.address,
    token,
    master,
    ...(instances ? { instanceManager: instances } : {}),
    server,
    jobId,
    status: tracker,
    ...(liveView ? { liveView } : {}),
    wait: () => finished,
    stop,
  };
}

/**
 * Points the job's local shards at the checkpoint the master resumed from: shards launched from
 * now on restore it as they start, and shards the job runner launched already (before the master)
 * restore it now, before the master serves a task, so no worker pulls or pushes a row before.
 * Returns the client made for that, if one was.
 */
async function restoreLocalShards(
  master: Master,
  shards: LocalParameterServers,
  token: string,
): Promise<EmbeddingClient | undefined> {
  const resumed = master.resumedFrom;
  if (resumed === undefined) return undefined;
  if (!resumed.hasShardFiles) {
    master.logger.warn(
      `checkpoint ${resumed.version} has no parameter-server shard files: the shards' embedding rows start from the initializer`,
    );
    return undefined;
  }
  shards.setRestorePoint(resumed);
  if (shards.addresses.length === 0) return undefined;
  await shards.ready();
  const client = new EmbeddingClient({ addresses: shards.addresses, token, shardOfId });
  const rows = await client.restoreShards(resumed.version, resumed.dir);
  master.logger.info(`parameter-server shards restored from checkpoint ${resumed.version}`, {
    rows: rows.join(','),
  });
  return client;
}
