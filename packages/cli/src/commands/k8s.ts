import { randomBytes } from 'node:crypto';
import type { DataReader } from '@edl/data';
import type { JobType } from '@edl/master';
import type { ContainerSize, JobObjectsOptions, KubernetesInstanceManager } from '@edl/master/kubernetes';
import type { V1Pod } from '@kubernetes/client-node';
import { integerValue, jsonStringArrayValue, parseCommandLine } from '../args.js';
import type { Command, CommandIO } from '../command.js';
import { UsageError } from '../command.js';
import { type JobOptions, parseJobOptions, workerArgs } from '../job/job-options.js';
import { recordsSummary } from '../job/records-summary.js';

/** The heavy libraries, loaded only once every argument has been checked. */
type Libs = typeof import('@edl/master') &
  typeof import('@edl/master/kubernetes') &
  Pick<typeof import('@kubernetes/client-node'), 'CoreV1Api' | 'dumpYaml'> &
  typeof import('../job/model-and-readers.js') &
  typeof import('../job/optimizer-config.js') &
  typeof import('../job/parameter-store-options.js');

async function loadLibs(): Promise<Libs> {
  const [master, kubernetes, k8s, models, optimizers, stores] = await Promise.all([
    import('@edl/master'),
    import('@edl/master/kubernetes'),
    import('@kubernetes/client-node'),
    import('../job/model-and-readers.js'),
    import('../job/optimizer-config.js'),
    import('../job/parameter-store-options.js'),
  ]);
  return {
    ...master,
    ...kubernetes,
    CoreV1Api: k8s.CoreV1Api,
    dumpYaml: k8s.dumpYaml,
    ...models,
    ...optimizers,
    ...stores,
  };
}

const usage = `Usage: edl k8s submit   --image IMAGE --namespace NS --num-workers N [k8s options] [train options]
       edl k8s manifest --image IMAGE --namespace NS --num-workers N [k8s options] [train options] [--rbac]
       edl k8s status   JOB --namespace NS [--json]
       edl k8s logs     JOB --namespace NS [--worker ID] [--tail N]
       edl k8s delete   JOB --namespace NS
       edl k8s master   ...   (what the master pod runs; not for hands)

Runs a job on Kubernetes: 'submit' creates a Secret with the job token, the master pod and its
Service; the master (the same code as 'edl train') creates the worker pods, watches them and
relaunches lost ones: preempted, evicted or deleted workers always, failed ones up to
--max-relaunches. 'manifest' prints the same objects as YAML for kubectl apply (with --rbac, the
ServiceAccount, Role and RoleBinding of deploy/k8s/rbac.yaml too).

Kubernetes options:
  --image IMAGE               the elasticdl-ts image (deploy/Dockerfile), for master and workers
  --namespace NS              the job's namespace (default: the context's, else 'default')
  --num-workers N             worker pods (default 1)
  --job-name NAME             a DNS label (default edl-<random>); names the pods, Service, Secret
  --max-relaunches N          relaunches of workers that failed on their own (default 3)
  --worker-cpu Q  --worker-memory Q  --worker-gpu N      requests = limits (GPUs: nvidia.com/gpu)
  --master-cpu Q  --master-memory Q
  --service-account NAME      the master's (default edl-master, see deploy/k8s/rbac.yaml)
  --image-pull-policy P       Always | IfNotPresent | Never
  --data-claim PVC            a PersistentVolumeClaim mounted in master and workers
  --data-mount-path DIR       where (default /data): give data and checkpoint paths under it
  --port N                    the master's gRPC port (default 50001)
  --kubeconfig FILE  --context NAME    the cluster (default: $KUBECONFIG, ~/.kube/config)
Train options: as for 'edl train' (--model-def, --training-data, --validation-data, ...), paths
as seen inside the pods.

Example:
  edl k8s submit --image registry.example.com/elasticdl-ts:0.1.0 --namespace ml --num-workers 4 \\
    --job-name mnist --data-claim edl-data --worker-cpu 2 --worker-memory 4Gi \\
    --model-def cifar10-small --training-data /data/train --checkpoint-dir /data/ckpt
  edl k8s status mnist --namespace ml
  edl k8s logs mnist --namespace ml --worker worker-3`;

/** Options with a value, by subcommand; anything else is a train option. */
const JOB_K8S_OPTIONS = new Set([
  'image',
  'namespace',
  'num-workers',
  'job-name',
  'max-relaunches',
  'worker-cpu',
  'worker-memory',
  'worker-gpu',
  'master-cpu',
  'master-memory',
  'service-account',
  'image-pull-policy',
  'data-claim',
  'data-mount-path',
  'port',
  'kubeconfig',
  'context',
  'edl-command',
]);
const MASTER_K8S_OPTIONS = new Set([
  ...JOB_K8S_OPTIONS,
  'host',
  'master-address',
  'worker-env',
  'delete-grace-seconds',
]);

interface SplitArgs {
  readonly k8s: Map<string, string[]>;
  readonly flags: Set<string>;
  readonly trainArgs: string[];
}

/**
 * Splits a command line into the Kubernetes options (`--name value` or `--name=value`) and the
 * train options, which are passed on untouched (and checked by edl train's parser). A bare `--`
 * sends everything after it to the train options.
 */
function splitArgs(
  argv: readonly string[],
  known: ReadonlySet<string>,
  booleans: ReadonlySet<string>,
): SplitArgs {
  const k8s = new Map<string, string[]>();
  const flags = new Set<string>();
  const trainArgs: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      trainArgs.push(...argv.slice(i + 1));
      break;
    }
    const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(arg);
    if (m && booleans.has(m[1] as string)) {
      flags.add(m[1] as string);
      continue;
    }
    if (!m || !known.has(m[1] as string)) {
      trainArgs.push(arg);
      continue;
    }
    const name = m[1] as string;
    let value = m[2];
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw new UsageError(`option --${name} needs a value`);
    }
    k8s.set(name, [...(k8s.get(name) ?? []), value]);
  }
  return { k8s, flags, trainArgs };
}

function one(args: SplitArgs, name: string): string | undefined {
  return args.k8s.get(name)?.at(-1);
}

function integer(args: SplitArgs, name: string, fallback: number, min: number, max = 1_000_000): number {
  const raw = one(args, name);
  return raw === undefined ? fallback : integerValue(raw, `--${name}`, min, max);
}

function size(args: SplitArgs, prefix: 'worker' | 'master'): ContainerSize {
  const cpu = one(args, `${prefix}-cpu`);
  const memory = one(args, `${prefix}-memory`);
  const gpu =
    prefix === 'worker' && one(args, 'worker-gpu') !== undefined
      ? integer(args, 'worker-gpu', 0, 0, 64)
      : undefined;
  const quantity = /^[0-9.]+(m|k|Ki|M|Mi|G|Gi|T|Ti|E|Ei|P|Pi)?$/;
  for (const [name, q] of [
    [`${prefix}-cpu`, cpu],
    [`${prefix}-memory`, memory],
  ] as const) {
    if (q !== undefined && !quantity.test(q))
      throw new UsageError(
        `Expected a Kubernetes quantity (e.g. 500m, 2, 4Gi) for --${name} but received '${q}'`,
      );
  }
  return { ...(cpu ? { cpu } : {}), ...(memory ? { memory } : {}), ...(gpu !== undefined ? { gpu } : {}) };
}

function edlCommand(args: SplitArgs): readonly string[] | undefined {
  const raw = one(args, 'edl-command');
  return raw === undefined ? undefined : jsonStringArrayValue(raw, '--edl-command');
}

function pullPolicy(args: SplitArgs): JobObjectsOptions['imagePullPolicy'] {
  const p = one(args, 'image-pull-policy');
  if (p === undefined) return undefined;
  if (p !== 'Always' && p !== 'IfNotPresent' && p !== 'Never') {
    throw new UsageError(
      `Expected Always, IfNotPresent or Never for --image-pull-policy but received '${p}'`,
    );
  }
  return p;
}

function jobTypeOf(options: JobOptions): JobType {
  if (options.predictionData !== undefined) return 'prediction';
  if (options.trainingData !== undefined)
    return options.validationData !== undefined ? 'training-with-evaluation' : 'training';
  if (options.validationData !== undefined) return 'evaluation';
  throw new UsageError('no data: give --training-data, --validation-data or --prediction-data');
}

function namespaceOf(args: SplitArgs, fallback?: string): string {
  const ns = one(args, 'namespace') ?? fallback;
  if (ns === undefined || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(ns)) {
    throw new UsageError(`Expected a namespace (a DNS label) for --namespace but received '${ns ?? ''}'`);
  }
  return ns;
}

function kubeConfigOf(L: Libs, args: SplitArgs) {
  const kubeconfig = one(args, 'kubeconfig');
  const context = one(args, 'context');
  return L.loadKubeConfig({ ...(kubeconfig ? { kubeconfig } : {}), ...(context ? { context } : {}) });
}

/** The context's namespace, for commands where --namespace is left out. */
function contextNamespace(L: Libs, args: SplitArgs): string | undefined {
  try {
    const kc = kubeConfigOf(L, args);
    return kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  } catch {
    return undefined;
  }
}

/** Checks the options of submit / manifest, then loads the libraries and builds the job's objects. */
async function jobObjects(argv: string[], needsCluster: boolean) {
  const args = splitArgs(argv, JOB_K8S_OPTIONS, new Set(['rbac']));
  const image = one(args, 'image');
  if (image === undefined)
    throw new UsageError('--image is required (the elasticdl-ts image, see deploy/Dockerfile)');
  const given = one(args, 'namespace');
  if (given !== undefined || !needsCluster) namespaceOf(args, 'default');
  const jobName = one(args, 'job-name') ?? `edl-${randomBytes(3).toString('hex')}`;
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(jobName) || jobName.length > 40) {
    throw new UsageError(
      `Expected a lower-case DNS label of at most 40 characters for --job-name but received '${jobName}'`,
    );
  }
  // The train options are checked here, so that a typo fails now rather than in the master pod.
  const jobOptions = parseJobOptions(args.trainArgs);
  jobTypeOf(jobOptions);
  const command = edlCommand(args);
  const policy = pullPolicy(args);
  const claim = one(args, 'data-claim');
  const mountPath = one(args, 'data-mount-path');
  const account = one(args, 'service-account');
  const numWorkers = integer(args, 'num-workers', 1, 0, 10_000);
  const port = integer(args, 'port', 50001, 1, 65_535);
  const maxRelaunches = integer(args, 'max-relaunches', 3, 0);
  const workerSize = size(args, 'worker');
  const masterSize = size(args, 'master');

  const L = await loadLibs();
  const namespace = namespaceOf(args, given ?? (needsCluster ? contextNamespace(L, args) : 'default'));
  const objects = L.buildJobObjects({
    jobName,
    namespace,
    image,
    numWorkers,
    token: process.env.EDL_JOB_TOKEN || randomBytes(32).toString('hex'),
    trainArgs: args.trainArgs,
    port,
    maxRelaunches,
    workerSize,
    masterSize,
    ...(command ? { edlCommand: command } : {}),
    ...(policy ? { imagePullPolicy: policy } : {}),
    ...(claim ? { dataClaim: claim } : {}),
    ...(mountPath ? { dataMountPath: mountPath } : {}),
    ...(account ? { serviceAccount: account } : {}),
  });
  return { L, args, objects, namespace, jobName, port, account: account ?? 'edl-master' };
}

async function manifest(argv: string[], io: CommandIO): Promise<number> {
  const { L, args, objects, namespace, account } = await jobObjects(argv, false);
  const docs: object[] = [];
  if (args.flags.has('rbac')) {
    const rbac = L.buildRbacObjects(namespace, account);
    docs.push(rbac.serviceAccount, rbac.role, rbac.roleBinding);
  }
  docs.push(objects.secret, objects.masterPod, objects.service);
  io.stdout.write(docs.map((d) => L.dumpYaml(d)).join('---\n'));
  return 0;
}

function describeError(L: Libs, error: unknown): string {
  const body = (error as { body?: unknown }).body;
  if (typeof body === 'string') {
    try {
      const status = JSON.parse(body) as { message?: string };
      if (status.message) return `${status.message} (HTTP ${L.statusCodeOf(error)})`;
    } catch {
      // not JSON
    }
  }
  if (body && typeof body === 'object' && 'message' in body)
    return `${String((body as { message: unknown }).message)} (HTTP ${L.statusCodeOf(error)})`;
  return error instanceof Error ? error.message : String(error);
}

async function submit(argv: string[], io: CommandIO): Promise<number> {
  const { L, args, objects, namespace, jobName, port } = await jobObjects(argv, true);
  const core = kubeConfigOf(L, args).makeApiClient(L.CoreV1Api);
  const created: Array<() => Promise<unknown>> = [];
  try {
    await core.createNamespacedSecret({ namespace, body: objects.secret });
    created.push(() =>
      core.deleteNamespacedSecret({ name: objects.secret.metadata?.name as string, namespace }),
    );
    const pod = await core.createNamespacedPod({ namespace, body: objects.masterPod });
    created.push(() => core.deleteNamespacedPod({ name: pod.metadata?.name as string, namespace }));
    // The Service goes with the master pod (the Secret stays until 'edl k8s delete': the pod
    // could not start without it, so it must exist first and cannot be owned by it).
    const owner = {
      apiVersion: 'v1',
      kind: 'Pod',
      name: pod.metadata?.name as string,
      uid: pod.metadata?.uid as string,
    };
    await core.createNamespacedService({
      namespace,
      body: { ...objects.service, metadata: { ...objects.service.metadata, ownerReferences: [owner] } },
    });
  } catch (error) {
    for (const undo of created.reverse()) await undo().catch(() => undefined);
    throw new Error(`submitting job ${jobName} to namespace ${namespace} failed: ${describeError(L, error)}`);
  }
  io.stdout.write(
    `job ${jobName} submitted to namespace ${namespace}: master pod ${jobName}-master, service ${L.masterServiceAddress(jobName, namespace, port)}\n` +
      `  edl k8s status ${jobName} --namespace ${namespace}\n  edl k8s logs ${jobName} --namespace ${namespace}\n`,
  );
  return 0;
}

/** Checks the options of status / logs / delete, then loads the libraries and the cluster's client. */
async function jobArg(
  argv: string[],
  extra: { readonly json?: boolean; readonly worker?: boolean; readonly tail?: boolean } = {},
) {
  const { values, positionals } = parseCommandLine(
    argv,
    {
      namespace: { type: 'string' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      ...(extra.json ? { json: { type: 'boolean' } } : {}),
      ...(extra.worker ? { worker: { type: 'string' } } : {}),
      ...(extra.tail ? { tail: { type: 'integer' } } : {}),
    } as const,
    ['the job name'],
  );
  const job = positionals[0] as string;
  const args: SplitArgs = {
    k8s: new Map(
      Object.entries(values)
        .filter((e): e is [string, string] => typeof e[1] === 'string')
        .map(([k, v]) => [k, [v]]),
    ),
    flags: new Set(Object.keys(values).filter((k) => (values as Record<string, unknown>)[k] === true)),
    trainArgs: [],
  };
  if (values.namespace !== undefined) namespaceOf(args);
  const tail = (values as { tail?: number }).tail;
  const L = await loadLibs();
  const namespace = namespaceOf(args, contextNamespace(L, args));
  return { L, job, args, tail, namespace, core: kubeConfigOf(L, args).makeApiClient(L.CoreV1Api) };
}

type PodRow = Record<'pod' | 'role' | 'worker' | 'phase' | 'reason' | 'exit', string>;

function podRow(L: Libs, pod: V1Pod): PodRow {
  const t = pod.status?.containerStatuses?.[0]?.state?.terminated;
  const waiting = pod.status?.containerStatuses?.[0]?.state?.waiting;
  return {
    pod: pod.metadata?.name ?? '',
    role: pod.metadata?.labels?.[L.LABELS.role] ?? '',
    worker: pod.metadata?.labels?.[L.LABELS.workerId] ?? '',
    phase: pod.metadata?.deletionTimestamp ? 'Terminating' : (pod.status?.phase ?? 'Pending'),
    reason: pod.status?.reason ?? t?.reason ?? waiting?.reason ?? '',
    exit: t ? String(t.exitCode) : '',
  };
}

async function status(argv: string[], io: CommandIO): Promise<number> {
  const { L, job, args, namespace, core } = await jobArg(argv, { json: true });
  const list = await core.listNamespacedPod({ namespace, labelSelector: L.jobSelector(job) });
  if (list.items.length === 0) throw new Error(`no pods of job ${job} in namespace ${namespace}`);
  const rows = list.items
    .map((pod) => podRow(L, pod))
    .sort((a, b) =>
      a.role === b.role ? a.pod.localeCompare(b.pod, 'en', { numeric: true }) : a.role === 'master' ? -1 : 1,
    );
  const master = rows.find((r) => r.role === 'master');
  const workers = rows.filter((r) => r.role === 'worker');
  const count = (phase: string) => workers.filter((w) => w.phase === phase).length;
  const summary = {
    job,
    namespace,
    master: master?.phase ?? 'missing',
    workers: {
      Running: count('Running'),
      Pending: count('Pending'),
      Succeeded: count('Succeeded'),
      Failed: count('Failed'),
      Terminating: count('Terminating'),
    },
  };
  if (args.flags.has('json')) {
    io.stdout.write(`${JSON.stringify({ ...summary, pods: rows })}\n`);
    return 0;
  }
  const columns = ['pod', 'role', 'worker', 'phase', 'reason', 'exit'] as const;
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] as number))
      .join('  ')
      .trimEnd();
  io.stdout.write(
    `job ${job} (namespace ${namespace}): master ${summary.master}; workers ${
      Object.entries(summary.workers)
        .filter(([, n]) => n > 0)
        .map(([p, n]) => `${n} ${p}`)
        .join(', ') || 'none'
    }\n`,
  );
  io.stdout.write(
    `${[line(columns.map((c) => c.toUpperCase())), ...rows.map((r) => line(columns.map((c) => r[c] ?? '')))].join('\n')}\n`,
  );
  return 0;
}

async function logs(argv: string[], io: CommandIO): Promise<number> {
  const { L, job, args, tail, namespace, core } = await jobArg(argv, { worker: true, tail: true });
  const worker = one(args, 'worker');
  const name = worker === undefined ? `${job}-master` : `${job}-${worker}`;
  try {
    const text = await core.readNamespacedPodLog({
      name,
      namespace,
      ...(tail !== undefined ? { tailLines: tail } : {}),
    });
    io.stdout.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
  } catch (error) {
    throw new Error(`logs of pod ${name} in namespace ${namespace}: ${describeError(L, error)}`);
  }
  return 0;
}

async function remove(argv: string[], io: CommandIO): Promise<number> {
  const { L, job, namespace, core } = await jobArg(argv);
  const deleted: string[] = [];
  const ignoreMissing = (error: unknown) => {
    if (L.statusCodeOf(error) !== 404) throw error;
  };
  // The master first: it stops relaunching; its workers are owned by it (garbage-collected), and
  // deleted here too for clusters whose collector is slow.
  await core
    .deleteNamespacedPod({ name: `${job}-master`, namespace })
    .then(() => deleted.push(`pod/${job}-master`), ignoreMissing);
  const pods = await core.listNamespacedPod({ namespace, labelSelector: L.jobSelector(job) });
  for (const pod of pods.items) {
    const name = pod.metadata?.name as string;
    if (name === `${job}-master`) continue;
    await core
      .deleteNamespacedPod({ name, namespace })
      .then(() => deleted.push(`pod/${name}`), ignoreMissing);
  }
  await core
    .deleteNamespacedService({ name: `${job}-master`, namespace })
    .then(() => deleted.push(`service/${job}-master`), ignoreMissing);
  await core
    .deleteNamespacedSecret({ name: `${job}-token`, namespace })
    .then(() => deleted.push(`secret/${job}-token`), ignoreMissing);
  if (deleted.length === 0) throw new Error(`nothing of job ${job} found in namespace ${namespace}`);
  io.stdout.write(`deleted ${deleted.join(' ')}\n`);
  return 0;
}

/** `edl k8s master`: the master pod's process: a job whose workers are pods. */
async function master(argv: string[], io: CommandIO): Promise<number> {
  const args = splitArgs(argv, MASTER_K8S_OPTIONS, new Set());
  const jobName = one(args, 'job-name');
  const image = one(args, 'image');
  if (jobName === undefined || image === undefined)
    throw new UsageError('--job-name and --image are required');
  const namespace = namespaceOf(args, process.env.EDL_NAMESPACE);
  const token = process.env.EDL_JOB_TOKEN;
  if (!token) throw new UsageError('EDL_JOB_TOKEN is not set: the master pod gets it from the job Secret');
  const options = parseJobOptions(args.trainArgs);
  const jobType = jobTypeOf(options);
  const port = integer(args, 'port', 50001, 0, 65_535);
  const numWorkers = integer(args, 'num-workers', 1, 0, 10_000);
  const maxRelaunches = integer(args, 'max-relaunches', 3, 0);
  const deleteGraceSeconds = integer(args, 'delete-grace-seconds', 10, 0);
  const workerSize = size(args, 'worker');
  const givenCommand = edlCommand(args);
  const env: Record<string, string> = {};
  for (const kv of args.k8s.get('worker-env') ?? []) {
    const eq = kv.indexOf('=');
    if (eq <= 0) throw new UsageError(`Expected NAME=VALUE for --worker-env but received '${kv}'`);
    env[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  const claim = one(args, 'data-claim');
  const mountPath = one(args, 'data-mount-path') ?? '/data';
  const policy = pullPolicy(args);

  const L = await loadLibs();
  const command = givenCommand ?? L.DEFAULT_EDL_COMMAND;
  const resources = L.resourcesFor(workerSize);
  const podName = process.env.EDL_POD_NAME;
  const podUid = process.env.EDL_POD_UID;
  const masterAddress = one(args, 'master-address') ?? L.masterServiceAddress(jobName, namespace, port);
  const logger = L.createStreamLogger(io.stderr, {
    level: options.logLevel,
    quiet: options.quiet,
    bindings: { job: jobName },
  });
  const definition = await L.loadModel(options.modelDef);
  const readers: DataReader<unknown>[] = [];
  const open = async (origin: string | undefined) => {
    if (origin === undefined) return undefined;
    const reader = await L.openReader(origin, definition, options.dataReader, options.dataReaderParams);
    readers.push(reader);
    return reader;
  };
  try {
    const trainingReader = jobType.startsWith('training') ? await open(options.trainingData) : undefined;
    const evaluationReader = jobType === 'prediction' ? undefined : await open(options.validationData);
    const predictionReader = jobType === 'prediction' ? await open(options.predictionData) : undefined;
    const api = L.createPodApi(kubeConfigOf(L, args), namespace);
    const handle = await L.startMaster({
      jobType,
      ...(trainingReader ? { trainingReader } : {}),
      ...(evaluationReader ? { evaluationReader } : {}),
      ...(predictionReader ? { predictionReader } : {}),
      minibatchSize: options.minibatchSize,
      numMinibatchesPerTask: options.numMinibatchesPerTask,
      numEpochs: options.numEpochs,
      evaluationSteps: options.evaluationSteps,
      shuffle: options.shuffle,
      seed: options.seed,
      leaseMs: options.leaseMs,
      maxTaskFailures: options.maxTaskFailures,
      parameterStore: L.parameterStoreOptions(
        options,
        L.toOptimizerConfig(definition.optimizer, options.modelDef),
      ),
      ...(options.checkpointDir ? { checkpointDir: options.checkpointDir } : {}),
      checkpointSteps: options.checkpointSteps,
      ...(options.modelCheckpoint ? { modelCheckpoint: options.modelCheckpoint } : {}),
      ...(options.metricsFile ? { metricsFile: options.metricsFile } : {}),
      host: one(args, 'host') ?? '0.0.0.0',
      port,
      token,
      logger,
      // --- live view (issue 14): reach it with kubectl port-forward ---
      jobId: jobName,
      ...(options.tensorboardDir ? { tensorboardDir: options.tensorboardDir } : {}),
      http: {
        host: options.httpHost,
        port: options.httpPort,
        ...(options.metricsToken === undefined ? {} : { metricsToken: options.metricsToken }),
      },
      instanceManager: L.kubernetesInstanceManager({
        api,
        template: {
          jobName,
          image,
          command: [command[0] as string],
          args: [
            ...command.slice(1),
            'worker',
            ...workerArgs(options, L.resolveModelDef(options.modelDef), '/tmp'),
          ],
          masterAddress: masterAddress === 'bound' ? '' : masterAddress,
          tokenSecret: { name: `${jobName}-token`, key: 'token' },
          ...(podName && podUid ? { owner: { name: podName, uid: podUid } } : {}),
          ...(resources ? { resources } : {}),
          env,
          ...(policy ? { imagePullPolicy: policy } : {}),
          ...(claim
            ? {
                volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }],
                volumeMounts: [{ name: 'data', mountPath }],
              }
            : {}),
        },
        numWorkers,
        maxRelaunches,
        deleteGraceSeconds,
        logger,
      }),
    });
    logger.info(`job ${jobName}: master listening on ${handle.address}, workers dial ${masterAddress}`);
    if (handle.liveView)
      logger.info(`live view on port ${handle.liveView.port}`, { url: handle.liveView.origin });
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
      const workers = (handle.instanceManager as KubernetesInstanceManager).summary();
      io.stdout.write(`${JSON.stringify({ job: jobName, state: 'terminated', workers })}\n`);
      return 143;
    }
    await handle.stop();
    const workers = (handle.instanceManager as KubernetesInstanceManager).summary();
    io.stdout.write(
      `${JSON.stringify({ job: jobName, state: result.state, modelVersion: result.modelVersion, code: result.error?.code, error: result.error?.message, records: recordsSummary(handle.master.status()), workers, evaluations: result.evaluations, checkpoint: result.checkpoint })}\n`,
    );
    return result.state === 'succeeded' ? 0 : 1;
  } finally {
    for (const reader of readers) await reader.close?.();
  }
}

/** `edl k8s`: run jobs on Kubernetes. */
export const command: Command = {
  name: 'k8s',
  usage,
  async run(argv, io) {
    const [sub, ...rest] = argv;
    switch (sub) {
      case 'submit':
        return submit(rest, io);
      case 'manifest':
        return manifest(rest, io);
      case 'status':
        return status(rest, io);
      case 'logs':
        return logs(rest, io);
      case 'delete':
        return remove(rest, io);
      case 'master':
        return master(rest, io);
      case undefined:
        throw new UsageError('missing a subcommand: submit, manifest, status, logs or delete');
      default:
        throw new UsageError(
          `unknown subcommand '${sub}': expected submit, manifest, status, logs or delete`,
        );
    }
  },
};
