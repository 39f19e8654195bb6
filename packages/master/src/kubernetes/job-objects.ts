import { checkInteger, checkNonEmptyString } from '@edl/common';
import type {
  V1EnvVar,
  V1Pod,
  V1ResourceRequirements,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1Service,
  V1ServiceAccount,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';
import { APP_NAME, checkJobName, LABELS } from './labels.js';

/** Sizes of a container: `cpu` and `memory` are requested and limited alike, `gpu` is a limit. */
export interface ContainerSize {
  readonly cpu?: string;
  readonly memory?: string;
  /** Whole GPUs (`nvidia.com/gpu`). */
  readonly gpu?: number;
}

/** Options of {@link buildJobObjects}. */
export interface JobObjectsOptions {
  readonly jobName: string;
  readonly namespace: string;
  /** The elasticdl-ts image (deploy/Dockerfile), for the master and the workers. */
  readonly image: string;
  readonly numWorkers: number;
  /** The job token, stored in the Secret `<job>-token`. */
  readonly token: string;
  /** The job's options for the master (`edl train` options: --model-def, --training-data, ...). */
  readonly trainArgs: readonly string[];
  /** How to run `edl` in the image (default `['node', '/app/packages/cli/dist/bin/edl.js']`). */
  readonly edlCommand?: readonly string[];
  /** The master's gRPC port (default 50001). */
  readonly port?: number;
  /** The master's service account, bound to the pods Role of deploy/k8s/rbac.yaml (default edl-master). */
  readonly serviceAccount?: string;
  readonly masterSize?: ContainerSize;
  readonly workerSize?: ContainerSize;
  /** Relaunches of workers that failed on their own (default 3). */
  readonly maxRelaunches?: number;
  readonly imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** A PersistentVolumeClaim with the data (and checkpoints), mounted in master and workers. */
  readonly dataClaim?: string;
  /** Where it is mounted (default /data). */
  readonly dataMountPath?: string;
  /**
   * A Secret whose keys become environment variables of the master and worker pods: object-store
   * credentials (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`).
   */
  readonly credentialsSecret?: string;
  /**
   * The worker pods' service account, for credentials bound to it (EKS IRSA); separate from
   * {@link serviceAccount}, the master's account for the Kubernetes API.
   */
  readonly workerServiceAccount?: string;
  /** The parameter-server pods' sizes (`--num-ps` in the train options starts them). */
  readonly psSize?: ContainerSize;
  /**
   * The parameter-server pods' priorityClassName: a class above the workers' (created beforehand,
   * deploy/k8s/ps-priority-class.yaml), so that the scheduler preempts workers rather than shards.
   */
  readonly psPriorityClass?: string;
  /** The parameter-server pods' service account (default: {@link workerServiceAccount}). */
  readonly psServiceAccount?: string;
  /** The port of the parameter-server pods and Services (default 50002). */
  readonly psPort?: number;
}

/** The objects of a job, in the order they are created. */
export interface JobObjects {
  readonly secret: V1Secret;
  readonly masterPod: V1Pod;
  readonly service: V1Service;
}

/** Default way to run `edl` in the image built by deploy/Dockerfile. */
export const DEFAULT_EDL_COMMAND: readonly string[] = ['node', '/app/packages/cli/dist/bin/edl.js'];

/** The address workers dial: the master Service's DNS name and port. */
export function masterServiceAddress(jobName: string, namespace: string, port = 50001): string {
  return `${jobName}-master.${namespace}.svc:${port}`;
}

/** Requests and limits for a {@link ContainerSize}. */
export function resourcesFor(size: ContainerSize | undefined): V1ResourceRequirements | undefined {
  if (size === undefined || (size.cpu === undefined && size.memory === undefined && size.gpu === undefined))
    return undefined;
  const amounts: Record<string, string> = {};
  if (size.cpu !== undefined) amounts.cpu = size.cpu;
  if (size.memory !== undefined) amounts.memory = size.memory;
  const limits: Record<string, string> = { ...amounts };
  if (size.gpu !== undefined && size.gpu > 0) limits['nvidia.com/gpu'] = String(size.gpu);
  return { ...(Object.keys(amounts).length > 0 ? { requests: amounts } : {}), limits };
}

/** The arguments `edl k8s master` needs besides the train options, as `--flag value` pairs. */
function sizeArgs(prefix: string, size: ContainerSize | undefined): string[] {
  const args: string[] = [];
  if (size?.cpu !== undefined) args.push(`--${prefix}-cpu`, size.cpu);
  if (size?.memory !== undefined) args.push(`--${prefix}-memory`, size.memory);
  if (size?.gpu !== undefined) args.push(`--${prefix}-gpu`, String(size.gpu));
  return args;
}

function labels(jobName: string, role: string): Record<string, string> {
  return { [LABELS.app]: APP_NAME, [LABELS.job]: jobName, [LABELS.role]: role };
}

/**
 * Builds the Secret (the job token), the master pod and its Service for a job: what `edl k8s
 * submit` creates and `edl k8s manifest` prints. The master pod runs `edl k8s master` with the
 * train options; it reads its own name and uid through the downward API (the workers' owner) and
 * creates the worker pods with its service account. Pure: the same options give the same objects.
 */
export function buildJobObjects(options: JobObjectsOptions): JobObjects {
  const jobName = checkJobName(options.jobName);
  const namespace = checkNonEmptyString(options.namespace, 'namespace');
  const image = checkNonEmptyString(options.image, 'image');
  const numWorkers = checkInteger(options.numWorkers, 'numWorkers', 0, 10_000);
  const port = checkInteger(options.port ?? 50001, 'port', 1, 65_535);
  checkNonEmptyString(options.token, 'token');
  const edl = [...(options.edlCommand ?? DEFAULT_EDL_COMMAND)];
  const secretName = `${jobName}-token`;
  const mountPath = options.dataMountPath ?? '/data';
  const volumes: V1Volume[] = options.dataClaim
    ? [{ name: 'data', persistentVolumeClaim: { claimName: options.dataClaim } }]
    : [];
  const mounts: V1VolumeMount[] = options.dataClaim ? [{ name: 'data', mountPath }] : [];
  const env: V1EnvVar[] = [
    { name: 'EDL_JOB_TOKEN', valueFrom: { secretKeyRef: { name: secretName, key: 'token' } } },
    { name: 'EDL_POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'EDL_POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
    { name: 'EDL_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
  ];
  const args = [
    'k8s',
    'master',
    '--job-name',
    jobName,
    '--image',
    image,
    '--num-workers',
    String(numWorkers),
    '--port',
    String(port),
    '--max-relaunches',
    String(checkInteger(options.maxRelaunches ?? 3, 'maxRelaunches', 0)),
    ...sizeArgs('worker', options.workerSize),
    ...(options.imagePullPolicy ? ['--image-pull-policy', options.imagePullPolicy] : []),
    ...(options.dataClaim ? ['--data-claim', options.dataClaim, '--data-mount-path', mountPath] : []),
    ...(options.edlCommand ? ['--edl-command', JSON.stringify(edl)] : []),
    ...(options.credentialsSecret ? ['--s3-credentials-secret', options.credentialsSecret] : []),
    ...(options.workerServiceAccount ? ['--worker-service-account', options.workerServiceAccount] : []),
    ...sizeArgs('ps', options.psSize),
    ...(options.psPriorityClass ? ['--ps-priority-class', options.psPriorityClass] : []),
    ...(options.psServiceAccount ? ['--ps-service-account', options.psServiceAccount] : []),
    ...(options.psPort !== undefined
      ? ['--ps-port', String(checkInteger(options.psPort, 'psPort', 1, 65_535))]
      : []),
    '--',
    ...options.trainArgs,
  ];
  const masterResources = resourcesFor(options.masterSize);
  const secret: V1Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: secretName, namespace, labels: labels(jobName, 'token') },
    type: 'Opaque',
    stringData: { token: options.token },
  };
  const masterPod: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `${jobName}-master`, namespace, labels: labels(jobName, 'master') },
    spec: {
      // The master's own failures end the job (rerun it to resume from --checkpoint-dir); its
      // workers are owned by this pod and go with it.
      restartPolicy: 'Never',
      serviceAccountName: options.serviceAccount ?? 'edl-master',
      containers: [
        {
          name: 'master',
          image,
          command: [edl[0] as string],
          args: [...edl.slice(1), ...args],
          ...(options.imagePullPolicy ? { imagePullPolicy: options.imagePullPolicy } : {}),
          env,
          ...(options.credentialsSecret
            ? { envFrom: [{ secretRef: { name: options.credentialsSecret } }] }
            : {}),
          ports: [{ name: 'grpc', containerPort: port }],
          ...(masterResources ? { resources: masterResources } : {}),
          ...(mounts.length > 0 ? { volumeMounts: mounts } : {}),
        },
      ],
      ...(volumes.length > 0 ? { volumes } : {}),
    },
  };
  const service: V1Service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: `${jobName}-master`, namespace, labels: labels(jobName, 'master') },
    spec: {
      selector: { [LABELS.job]: jobName, [LABELS.role]: 'master' },
      ports: [{ name: 'grpc', port, targetPort: port }],
    },
  };
  return { secret, masterPod, service };
}

/** RBAC objects of {@link buildRbacObjects}. */
export interface RbacObjects {
  readonly serviceAccount: V1ServiceAccount;
  readonly role: V1Role;
  readonly roleBinding: V1RoleBinding;
}

/**
 * Least-privilege RBAC for masters in a namespace: a ServiceAccount, a Role that may create, list,
 * watch and delete pods and create Services (the parameter-server shards' of a job with `--num-ps`;
 * the job's Secret and master Service are created by the user who submits), and the RoleBinding.
 * deploy/k8s/rbac.yaml holds the same for `default`.
 */
export function buildRbacObjects(namespace: string, serviceAccount = 'edl-master'): RbacObjects {
  const meta = { namespace, labels: { [LABELS.app]: APP_NAME } };
  return {
    serviceAccount: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: serviceAccount, ...meta } },
    role: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: serviceAccount, ...meta },
      rules: [
        {
          apiGroups: [''],
          resources: ['pods'],
          // Exactly what the master calls (pod-api.ts): create and delete its workers, list and
          // watch them. No get or patch: it never reads or changes a single pod.
          verbs: ['create', 'list', 'watch', 'delete'],
        },
        {
          apiGroups: [''],
          resources: ['services'],
          // The Service `<job>-ps-<i>` of each parameter-server shard (service-api.ts). They go with
          // the master pod, their owner, so no delete.
          verbs: ['create'],
        },
      ],
    },
    roleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: serviceAccount, ...meta },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: serviceAccount },
    },
  };
}
