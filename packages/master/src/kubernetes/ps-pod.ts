import { checkInteger, type OptimizerConfig } from '@edl/common';
import type { V1EnvVar, V1Pod, V1Service } from '@kubernetes/client-node';
import { APP_NAME, LABELS } from './labels.js';
import { buildJobPod, type PodOwner, type WorkerPodTemplate } from './worker-pod.js';

/** The port every parameter-server pod listens on by default (each pod has its own IP). */
export const DEFAULT_PS_PORT = 50002;

/** A committed checkpoint whose shard files a (re)launched shard starts from. */
export interface ShardRestorePoint {
  readonly dir: string;
  readonly version: number;
}

/**
 * Everything a parameter-server pod is made of except its shard index: the worker template's
 * image, credentials (Secret, service account), volumes and pull policy, plus the shard's own
 * settings. `args` run the shard (e.g. `['/app/packages/cli/dist/bin/edl.js', 'ps']`); the
 * shard's options are added to them.
 */
export interface ParameterServerPodTemplate extends Omit<WorkerPodTemplate, 'masterAddress' | 'args'> {
  readonly args: readonly string[];
  /** Shards of the job (`--num-ps`). */
  readonly numShards: number;
  /** The job's optimizer config, the one the master applies to dense variables. */
  readonly optimizer: OptimizerConfig;
  /** The job's seed: the declared tables' rows start from it. */
  readonly seed: number;
  /** The port the shard listens on (default {@link DEFAULT_PS_PORT}). */
  readonly port?: number;
}

/** The stable name of shard `index`'s Service: `<job>-ps-<index>`, the name workers dial. */
export function psServiceName(jobName: string, index: number): string {
  return `${jobName}-ps-${index}`;
}

/** The address workers dial for shard `index`: its Service's DNS name and port. */
export function psServiceAddress(
  jobName: string,
  namespace: string,
  index: number,
  port = DEFAULT_PS_PORT,
): string {
  return `${psServiceName(jobName, index)}.${namespace}.svc:${port}`;
}

/**
 * Pod name of one launch of shard `index`: `<job>-ps-<index>-<launch>`. A relaunch is a new pod
 * (the old one may still be terminating under its name); its Service keeps the shard's address.
 */
export function psPodName(jobName: string, index: number, launch: number): string {
  return `${psServiceName(jobName, index)}-${launch}`;
}

/**
 * Builds the pod of one launch of shard `index`: `edl ps --shard-index I --num-shards N` on
 * `0.0.0.0`, with the job's optimizer and seed, the token from the job Secret, a named `grpc` port
 * and a TCP readiness probe (the Service sends traffic once the shard listens), and, when `restore`
 * is given, `--restore-dir --restore-version`: the shard starts from that checkpoint's rows.
 */
export function buildPsPod(
  template: ParameterServerPodTemplate,
  index: number,
  launch: number,
  restore?: ShardRestorePoint,
): V1Pod {
  checkInteger(index, 'index', 0, template.numShards - 1);
  const port = checkInteger(template.port ?? DEFAULT_PS_PORT, 'port', 1, 65_535);
  const env: V1EnvVar[] = [
    { name: 'EDL_JOB_NAME', value: template.jobName },
    {
      name: 'EDL_JOB_TOKEN',
      valueFrom: { secretKeyRef: { name: template.tokenSecret.name, key: template.tokenSecret.key } },
    },
    { name: 'EDL_POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ...Object.entries(template.env ?? {}).map(([name, value]) => ({ name, value })),
  ];
  return buildJobPod(template, {
    name: psPodName(template.jobName, index, launch),
    role: 'ps',
    labels: { [LABELS.psIndex]: String(index) },
    containerName: 'ps',
    env,
    args: [
      ...template.args,
      '--shard-index',
      String(index),
      '--num-shards',
      String(template.numShards),
      '--host',
      '0.0.0.0',
      '--port',
      String(port),
      '--optimizer',
      JSON.stringify(template.optimizer),
      '--seed',
      String(template.seed),
      ...(restore === undefined
        ? []
        : ['--restore-dir', restore.dir, '--restore-version', String(restore.version)]),
    ],
    ports: [{ name: 'grpc', containerPort: port }],
    readinessProbe: { tcpSocket: { port: 'grpc' }, periodSeconds: 2 },
  });
}

/**
 * The Service of shard `index`: `<job>-ps-<index>`, a ClusterIP Service whose port is named `grpc`,
 * selecting the shard's pods by job, role and shard index, so that a relaunched shard keeps its
 * address (the cluster IP stays; only the endpoint changes). Owned by the master pod when given.
 */
export function buildPsService(
  jobName: string,
  namespace: string,
  index: number,
  port = DEFAULT_PS_PORT,
  owner?: PodOwner,
): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: psServiceName(jobName, index),
      namespace,
      labels: { [LABELS.app]: APP_NAME, [LABELS.job]: jobName, [LABELS.role]: 'ps' },
      ...(owner
        ? { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: owner.name, uid: owner.uid }] }
        : {}),
    },
    spec: {
      selector: { [LABELS.job]: jobName, [LABELS.role]: 'ps', [LABELS.psIndex]: String(index) },
      ports: [{ name: 'grpc', port, targetPort: 'grpc' }],
    },
  };
}
