/** `edl k8s manifest`, and the job's objects that `edl k8s submit` creates. */
import { randomBytes } from 'node:crypto';
import type { CommandIO } from '../command.js';
import { UsageError } from '../command.js';
import { parseJobOptions } from '../job/job-options.js';
import {
  credentialOptions,
  edlCommand,
  integer,
  JOB_K8S_OPTIONS,
  jobTypeOf,
  namespaceOf,
  one,
  parameterServerOptions,
  pullPolicy,
  size,
  splitArgs,
} from './args.js';
import { contextNamespace, loadLibs } from './cluster.js';

/** Checks the options of submit / manifest, then loads the libraries and builds the job's objects. */
export async function jobObjects(argv: string[], needsCluster: boolean) {
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
  const credentials = credentialOptions(args);
  const shards = parameterServerOptions(args);

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
    ...credentials,
    ...shards,
  });
  return { L, args, objects, namespace, jobName, port, account: account ?? 'edl-master' };
}

/** Prints the job's Secret, master pod and Service (with --rbac, its RBAC objects first) as YAML. */
export async function manifest(argv: string[], io: CommandIO): Promise<number> {
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
