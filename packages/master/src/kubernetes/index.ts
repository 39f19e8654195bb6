/** The Kubernetes instance manager and the pure builders of a job's Kubernetes objects. */
export {
  buildJobObjects,
  buildRbacObjects,
  type ContainerSize,
  DEFAULT_EDL_COMMAND,
  type JobObjects,
  type JobObjectsOptions,
  masterServiceAddress,
  type RbacObjects,
  resourcesFor,
} from './job-objects.js';
export { type KubeConfigSource, loadKubeConfig } from './kube-config.js';
export {
  KubernetesInstanceManager,
  type KubernetesInstanceManagerOptions,
  type KubernetesShardOptions,
  kubernetesInstanceManager,
  type WorkerSummary,
} from './kubernetes-instance-manager.js';
export { APP_NAME, checkJobName, jobSelector, LABELS, psSelector, workerSelector } from './labels.js';
export { masterInstanceEvents } from './master-events.js';
export {
  KubernetesParameterServers,
  type KubernetesParameterServersOptions,
} from './parameter-server-pods.js';
export {
  createPodApi,
  type PodApi,
  type PodApiOptions,
  type PodWatchEvent,
  statusCodeOf,
  type WatchHandle,
} from './pod-api.js';
export { type PodOutcome, podOutcome } from './pod-outcome.js';
export {
  PodWatcher,
  type PodWatcherListener,
  type PodWatcherOptions,
  type PodWatcherStats,
} from './pod-watcher.js';
export {
  buildPsPod,
  buildPsService,
  DEFAULT_PS_PORT,
  type ParameterServerPodTemplate,
  psPodName,
  psServiceAddress,
  psServiceName,
  type ShardRestorePoint,
} from './ps-pod.js';
export { createServiceApi, type ServiceApi } from './service-api.js';
export {
  buildJobPod,
  buildWorkerPod,
  type JobPodParts,
  type PodOwner,
  type SecretKeyRef,
  type WorkerPodTemplate,
  workerPodName,
} from './worker-pod.js';
