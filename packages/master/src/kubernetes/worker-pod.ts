import type {
  V1ContainerPort,
  V1EnvVar,
  V1Pod,
  V1Probe,
  V1ResourceRequirements,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';
import { APP_NAME, LABELS } from './labels.js';

/** Where the job token lives: a key of a Secret in the job's namespace. */
export interface SecretKeyRef {
  readonly name: string;
  readonly key: string;
}

/** The pod that owns the workers (the master's): deleting it lets the garbage collector delete them. */
export interface PodOwner {
  readonly name: string;
  readonly uid: string;
}

/** Everything a worker pod is made of except its id; see {@link buildWorkerPod}. */
export interface WorkerPodTemplate {
  readonly jobName: string;
  readonly namespace: string;
  readonly image: string;
  /** The container's command (entrypoint); omit to use the image's. */
  readonly command?: readonly string[];
  /** The container's arguments, e.g. `['worker', '--model-def', 'cifar10']`. */
  readonly args?: readonly string[];
  /** host:port of the master (its Service), passed as EDL_MASTER_ADDR. */
  readonly masterAddress: string;
  /** The job token, passed as EDL_JOB_TOKEN through a secretKeyRef (never in the pod spec). */
  readonly tokenSecret: SecretKeyRef;
  /** The master pod; omit when the master does not run in a pod (tests, a master outside). */
  readonly owner?: PodOwner;
  /** Requests and limits, e.g. `{ requests: { cpu: '1', memory: '2Gi' }, limits: { memory: '2Gi' } }`. */
  readonly resources?: V1ResourceRequirements;
  /** More environment variables. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Secrets whose keys all become environment variables (`envFrom`): object-store credentials such
   * as `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`, never written into the pod spec.
   */
  readonly envFromSecrets?: readonly string[];
  /**
   * The workers' service account, for credentials bound to it (EKS IRSA: an account annotated with
   * `eks.amazonaws.com/role-arn`). Default: the namespace's default account.
   */
  readonly serviceAccountName?: string;
  readonly imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** Volumes and their mounts (a PersistentVolumeClaim holding the data, for instance). */
  readonly volumes?: readonly V1Volume[];
  readonly volumeMounts?: readonly V1VolumeMount[];
  /** Extra labels (the job, role and worker-id labels are always set). */
  readonly labels?: Readonly<Record<string, string>>;
  readonly priorityClassName?: string;
}

/** Pod name of a worker: `<job>-<workerId>`, e.g. `mnist-worker-3`. */
export function workerPodName(jobName: string, workerId: string): string {
  return `${jobName}-${workerId}`;
}

/** How long a worker pod keeps trying a master whose calls all fail before it ends itself. */
export const WORKER_MASTER_LEASE_MS = 60_000;

/**
 * Builds the pod of one worker: labelled with the job and the worker id (the watch selects on
 * them), `restartPolicy: Never` (the master decides about relaunches, with a new worker id, so a
 * relaunched worker is a new worker to the task manager), the token from a Secret, and an
 * ownerReference to the master pod. Pure: same input, same object.
 */
export function buildWorkerPod(template: WorkerPodTemplate, workerId: string): V1Pod {
  const env: V1EnvVar[] = [
    { name: 'EDL_MASTER_ADDR', value: template.masterAddress },
    { name: 'EDL_WORKER_ID', value: workerId },
    { name: 'EDL_JOB_NAME', value: template.jobName },
    {
      name: 'EDL_JOB_TOKEN',
      valueFrom: { secretKeyRef: { name: template.tokenSecret.name, key: template.tokenSecret.key } },
    },
    { name: 'EDL_POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    // A worker whose master is gone for a minute ends (see @edl/worker's MasterWatch): a master pod
    // that failed is not deleted, so its ownerReference alone would leave the workers running.
    { name: 'EDL_MASTER_LEASE_MS', value: String(WORKER_MASTER_LEASE_MS) },
    ...Object.entries(template.env ?? {}).map(([name, value]) => ({ name, value })),
  ];
  return buildJobPod(template, {
    name: workerPodName(template.jobName, workerId),
    role: 'worker',
    labels: { [LABELS.workerId]: workerId },
    containerName: 'worker',
    env,
  });
}

/** What differs between the pods of a job (workers, parameter servers): see {@link buildJobPod}. */
export interface JobPodParts {
  readonly name: string;
  /** The {@link LABELS.role} label. */
  readonly role: string;
  /** Labels besides the app, job and role labels. */
  readonly labels: Readonly<Record<string, string>>;
  readonly containerName: string;
  readonly env: readonly V1EnvVar[];
  /** Arguments that replace the template's. */
  readonly args?: readonly string[];
  readonly ports?: readonly V1ContainerPort[];
  readonly readinessProbe?: V1Probe;
}

/**
 * A pod of the job that the master creates, worker or parameter server: labelled, owned by the
 * master pod, `restartPolicy: Never` (the master relaunches, as a new pod), no Kubernetes API
 * token, and the template's image, credentials, resources, volumes and priority class.
 */
export function buildJobPod(
  template: Omit<WorkerPodTemplate, 'masterAddress' | 'env'>,
  parts: JobPodParts,
): V1Pod {
  const args = parts.args ?? template.args;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: parts.name,
      namespace: template.namespace,
      labels: {
        ...template.labels,
        [LABELS.app]: APP_NAME,
        [LABELS.job]: template.jobName,
        [LABELS.role]: parts.role,
        ...parts.labels,
      },
      ...(template.owner
        ? {
            // No blockOwnerDeletion: setting it needs update on pods/finalizers, a right the master
            // does not need otherwise (least privilege). Background deletion still collects them.
            ownerReferences: [
              { apiVersion: 'v1', kind: 'Pod', name: template.owner.name, uid: template.owner.uid },
            ],
          }
        : {}),
    },
    spec: {
      restartPolicy: 'Never',
      // Workers and shards never talk to the Kubernetes API: no service-account token in their
      // file system. IRSA needs none either: its webhook mounts a separate projected token for AWS STS.
      automountServiceAccountToken: false,
      ...(template.serviceAccountName ? { serviceAccountName: template.serviceAccountName } : {}),
      ...(template.priorityClassName ? { priorityClassName: template.priorityClassName } : {}),
      containers: [
        {
          name: parts.containerName,
          image: template.image,
          ...(template.command ? { command: [...template.command] } : {}),
          ...(args ? { args: [...args] } : {}),
          ...(template.imagePullPolicy ? { imagePullPolicy: template.imagePullPolicy } : {}),
          env: [...parts.env],
          ...(template.envFromSecrets?.length
            ? { envFrom: template.envFromSecrets.map((name) => ({ secretRef: { name } })) }
            : {}),
          ...(parts.ports ? { ports: [...parts.ports] } : {}),
          ...(parts.readinessProbe ? { readinessProbe: parts.readinessProbe } : {}),
          ...(template.resources ? { resources: template.resources } : {}),
          ...(template.volumeMounts ? { volumeMounts: [...template.volumeMounts] } : {}),
        },
      ],
      ...(template.volumes ? { volumes: [...template.volumes] } : {}),
    },
  };
}
