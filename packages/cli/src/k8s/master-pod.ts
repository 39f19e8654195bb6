/**
 * `edl k8s master`: the master pod's process, a job whose workers are pods. The same master
 * options as `edl train` (job/master-options.ts); only the workers differ.
 */

import type { OptimizerConfig } from '@edl/common';
import type { JobType } from '@edl/master';
import type {
  ContainerSize,
  JobObjectsOptions,
  KubernetesInstanceManager,
  ParameterServerPodTemplate,
  PodOwner,
  WorkerPodTemplate,
} from '@edl/master/kubernetes';
import { integerValue } from '../args.js';
import type { CommandIO } from '../command.js';
import { UsageError } from '../command.js';
import {
  checkpointShardsOf,
  evaluationJobOptions,
  logShardsRestored,
  refuseEmbeddingsWithoutParts,
  shardRestorePoint,
} from '../job/checkpoint-shards.js';
import { type JobOptions, parseJobOptions, workerArgs } from '../job/job-options.js';
import { recordsSummary } from '../job/records-summary.js';
import { applyS3Options, s3Args } from '../job/s3-options.js';
import {
  credentialOptions,
  edlCommand,
  integer,
  jobTypeOf,
  MASTER_K8S_OPTIONS,
  namespaceOf,
  one,
  parameterServerOptions,
  pullPolicy,
  type SplitArgs,
  size,
  splitArgs,
} from './args.js';
import { kubeConfigOf, type Libs, loadLibs } from './cluster.js';

/** The master pod's command line, checked. */
export interface MasterPodArgs {
  readonly args: SplitArgs;
  readonly jobName: string;
  readonly image: string;
  readonly namespace: string;
  readonly token: string;
  /** The train options; `numWorkers` is the number of worker pods. */
  readonly options: JobOptions;
  readonly jobType: JobType;
  readonly port: number;
  readonly numWorkers: number;
  readonly maxRelaunches: number;
  readonly deleteGraceSeconds: number;
  readonly workerSize: ContainerSize;
  readonly command?: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly claim?: string;
  readonly mountPath: string;
  readonly policy?: JobObjectsOptions['imagePullPolicy'];
  /** Object-store credentials of the worker pods: a Secret for `envFrom`, a service account (IRSA). */
  readonly credentials: Pick<JobObjectsOptions, 'credentialsSecret' | 'workerServiceAccount'>;
  /** The parameter-server pods' options (used when the train options have `--num-ps N`). */
  readonly shards: ReturnType<typeof parameterServerOptions>;
}

/**
 * Parses and checks the master pod's arguments (Kubernetes options, then the train options after
 * them or after `--`); `env` gives EDL_JOB_TOKEN and EDL_NAMESPACE, as the pod's spec sets them.
 */
export function parseMasterPodArgs(argv: readonly string[], env: NodeJS.ProcessEnv): MasterPodArgs {
  const args = splitArgs(argv, MASTER_K8S_OPTIONS, new Set());
  const jobName = one(args, 'job-name');
  const image = one(args, 'image');
  if (jobName === undefined || image === undefined)
    throw new UsageError('--job-name and --image are required');
  const namespace = namespaceOf(args, env.EDL_NAMESPACE);
  const token = env.EDL_JOB_TOKEN;
  if (!token) throw new UsageError('EDL_JOB_TOKEN is not set: the master pod gets it from the job Secret');
  const trainOptions = parseJobOptions(args.trainArgs);
  const jobType = jobTypeOf(trainOptions);
  const port = integer(args, 'port', 50001, 0, 65_535);
  const numWorkers = integer(args, 'num-workers', 1, 0, 10_000);
  const maxRelaunches = integer(args, 'max-relaunches', 3, 0);
  const deleteGraceSeconds = integer(args, 'delete-grace-seconds', 10, 0);
  const workerSize = size(args, 'worker');
  const command = edlCommand(args);
  const workerEnv: Record<string, string> = {};
  for (const kv of args.k8s.get('worker-env') ?? []) {
    const eq = kv.indexOf('=');
    if (eq <= 0) throw new UsageError(`Expected NAME=VALUE for --worker-env but received '${kv}'`);
    workerEnv[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  const claim = one(args, 'data-claim');
  const policy = pullPolicy(args);
  return {
    args,
    jobName,
    image,
    namespace,
    token,
    // --num-workers is a Kubernetes option here: the staleness bound follows the pods.
    options: { ...trainOptions, numWorkers },
    jobType,
    port,
    numWorkers,
    maxRelaunches,
    deleteGraceSeconds,
    workerSize,
    ...(command ? { command } : {}),
    env: workerEnv,
    ...(claim ? { claim } : {}),
    mountPath: one(args, 'data-mount-path') ?? '/data',
    ...(policy ? { policy } : {}),
    credentials: credentialOptions(args),
    shards: parameterServerOptions(args),
  };
}

/** Runs the job: the master over gRPC, the worker pods, until the job ends or the pod is deleted. */
export async function masterPod(argv: string[], io: CommandIO): Promise<number> {
  const parsed = parseMasterPodArgs(argv, process.env);
  // Checkpoints and data in S3: the master pod restores from there, with no volume.
  await applyS3Options(parsed.options);
  // Evaluation and prediction of a model trained with --num-ps: every shard pod, relaunched ones
  // too, restores the checkpoint's cut (checked here, before any pod is made).
  const evaluated = parsed.jobType.startsWith('training')
    ? undefined
    : await checkpointShardsOf(parsed.options);
  const pod = { ...parsed, options: evaluationJobOptions(parsed.options, evaluated) };
  const { args, jobName, namespace, options, port } = pod;
  const [L, { createStreamLogger, startMaster }, models, { jobMasterOptions }] = await Promise.all([
    loadLibs(),
    import('@edl/master'),
    import('../job/model-and-readers.js'),
    import('../job/master-options.js'),
  ]);
  const command = pod.command ?? L.DEFAULT_EDL_COMMAND;
  const resources = L.resourcesFor(pod.workerSize);
  const podName = process.env.EDL_POD_NAME;
  const podUid = process.env.EDL_POD_UID;
  const owner = podName && podUid ? { owner: { name: podName, uid: podUid } } : {};
  const podBasics = sharedPodBasics(pod, command, owner);
  const masterAddress = one(args, 'master-address') ?? L.masterServiceAddress(jobName, namespace, port);
  const logger = createStreamLogger(io.stderr, {
    level: options.logLevel,
    quiet: options.quiet,
    bindings: { job: jobName },
  });
  const definition = await models.loadModel(options.modelDef);
  if (evaluated !== undefined) await refuseEmbeddingsWithoutParts(evaluated, definition);
  const readers = await models.openJobReaders(pod.jobType, options, definition);
  const masterOptions = jobMasterOptions(options, pod.jobType, definition.optimizer, options.modelDef);
  try {
    const kubeConfig = kubeConfigOf(L, args);
    const api = L.createPodApi(kubeConfig, namespace);
    const handle = await startMaster({
      ...masterOptions,
      ...readers,
      host: one(args, 'host') ?? '0.0.0.0',
      port,
      token: pod.token,
      logger,
      // --- live view (issue 14): reach it with kubectl port-forward ---
      jobId: jobName,
      instanceManager: L.kubernetesInstanceManager({
        api,
        template: {
          ...podBasics,
          args: [
            ...command.slice(1),
            'worker',
            ...workerArgs(options, models.resolveModelDef(options.modelDef), '/tmp'),
          ],
          masterAddress: masterAddress === 'bound' ? '' : masterAddress,
          ...(resources ? { resources } : {}),
          env: pod.env,
          ...(pod.credentials.workerServiceAccount
            ? { serviceAccountName: pod.credentials.workerServiceAccount }
            : {}),
        },
        numWorkers: pod.numWorkers,
        maxRelaunches: pod.maxRelaunches,
        deleteGraceSeconds: pod.deleteGraceSeconds,
        logger,
        ...(options.numPs > 0
          ? {
              parameterServers: {
                api,
                services: L.createServiceApi(kubeConfig, namespace),
                template: parameterServerTemplate(pod, podBasics, command, masterOptions, L),
                maxRelaunches: pod.maxRelaunches,
                deleteGraceSeconds: pod.deleteGraceSeconds,
                ...(options.checkpointDir === undefined ? {} : { checkpointDir: options.checkpointDir }),
                ...(evaluated === undefined ? {} : { restorePoint: shardRestorePoint(evaluated) }),
                ...shardAddresses(args, options.numPs),
              },
            }
          : {}),
      }),
    });
    logger.info(`job ${jobName}: master listening on ${handle.address}, workers dial ${masterAddress}`);
    logShardsRestored(logger, evaluated);
    if (handle.liveView)
      logger.info(`live view on port ${handle.liveView.port}`, { url: handle.liveView.origin });
    // How the pods fared: the workers, and each parameter-server shard's pod and relaunches.
    const podSummaries = () => {
      const manager = handle.instanceManager as KubernetesInstanceManager;
      const shards = manager.parameterServers?.pods();
      return { workers: manager.summary(), ...(shards ? { parameterServers: shards } : {}) };
    };
    // The pod is being deleted (or the node drained): stop the workers and leave; a job with
    // --checkpoint-dir resumes from there when submitted again.
    let onSignal = () => {};
    const terminated = new Promise<'terminated'>((resolve) => {
      onSignal = () => resolve('terminated');
    });
    process.once('SIGTERM', onSignal);
    const result = await Promise.race([handle.wait(), terminated]).finally(() =>
      process.off('SIGTERM', onSignal),
    );
    if (result === 'terminated') {
      logger.warn('terminated: deleting the worker pods (a job with --checkpoint-dir resumes from there)');
      await handle.stop();
      io.stdout.write(`${JSON.stringify({ job: jobName, state: 'terminated', ...podSummaries() })}\n`);
      return 143;
    }
    await handle.stop();
    io.stdout.write(
      `${JSON.stringify({ job: jobName, state: result.state, modelVersion: result.modelVersion, code: result.error?.code, error: result.error?.message, records: recordsSummary(handle.master.status()), ...podSummaries(), evaluations: result.evaluations, checkpoint: result.checkpoint })}\n`,
    );
    return result.state === 'succeeded' ? 0 : 1;
  } finally {
    await readers.close();
  }
}

/**
 * `--ps-address HOST:PORT` (a master pod option, as `--master-address`), once per shard in shard
 * order: the address workers dial for the shard instead of its Service's DNS name, the shard's pod
 * listening on its port. For a master outside the cluster's DNS, and for tests whose pods are
 * processes of one host.
 */
function shardAddresses(
  args: SplitArgs,
  numShards: number,
): { addressOf?: (index: number) => string; portOf?: (index: number) => number } {
  const addresses = args.k8s.get('ps-address');
  if (addresses === undefined) return {};
  if (addresses.length !== numShards)
    throw new UsageError(
      `Expected one --ps-address per parameter-server shard (${numShards}) but received ${addresses.length}`,
    );
  const ports = addresses.map((address) =>
    integerValue(address.slice(address.lastIndexOf(':') + 1), '--ps-address port', 1, 65_535),
  );
  return {
    addressOf: (index) => addresses[index] as string,
    portOf: (index) => ports[index] as number,
  };
}

/**
 * What workers and parameter-server shards share: the image, the credentials (the `--s3-credentials-secret`
 * Secret's keys as environment variables), the data volume; `owner`, the master pod, when known.
 */
export function sharedPodBasics(
  pod: MasterPodArgs,
  command: readonly string[],
  owner: { readonly owner?: PodOwner },
) {
  const { jobName } = pod;
  return {
    jobName,
    image: pod.image,
    command: [command[0] as string],
    tokenSecret: { name: `${jobName}-token`, key: 'token' },
    ...owner,
    ...(pod.credentials.credentialsSecret ? { envFromSecrets: [pod.credentials.credentialsSecret] } : {}),
    ...(pod.policy ? { imagePullPolicy: pod.policy } : {}),
    ...(pod.claim
      ? {
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: pod.claim } }],
          volumeMounts: [{ name: 'data', mountPath: pod.mountPath }],
        }
      : {}),
  };
}

/**
 * The parameter-server pods of a job with `--num-ps N`: `edl ps` in the job's image with the
 * workers' credentials, volume and S3 options (checkpoint shard parts go to --checkpoint-dir: a
 * directory on that volume, or an object-store prefix, which needs no volume), the
 * job's optimizer (the one the master's store takes) and seed, and the `--ps-*` options.
 */
export function parameterServerTemplate(
  pod: MasterPodArgs,
  basics: Omit<WorkerPodTemplate, 'namespace' | 'masterAddress'>,
  command: readonly string[],
  masterOptions: { readonly parameterStore?: { readonly optimizer?: OptimizerConfig } },
  L: Libs,
): Omit<ParameterServerPodTemplate, 'namespace'> {
  const optimizer = masterOptions.parameterStore?.optimizer;
  if (optimizer === undefined)
    throw new UsageError("--num-ps needs a training job: its shards take the job's optimizer");
  const resources = L.resourcesFor(pod.shards.psSize);
  const account = pod.shards.psServiceAccount ?? pod.credentials.workerServiceAccount;
  return {
    ...basics,
    // The shards read and write their checkpoint parts in the same store as the master.
    args: [...command.slice(1), 'ps', ...s3Args(pod.options)],
    numShards: pod.options.numPs,
    optimizer,
    seed: pod.options.seed,
    ...(pod.shards.psPort === undefined ? {} : { port: pod.shards.psPort }),
    ...(resources ? { resources } : {}),
    ...(account ? { serviceAccountName: account } : {}),
    ...(pod.shards.psPriorityClass ? { priorityClassName: pod.shards.psPriorityClass } : {}),
  };
}
