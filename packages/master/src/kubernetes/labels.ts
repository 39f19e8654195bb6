import { invalidArgument } from '@edl/common';
/** Label keys shared by every object of a job: the watch's label selector and `edl k8s` use them. */
export const LABELS = {
  app: 'app.kubernetes.io/name',
  job: 'edl.dev/job',
  role: 'edl.dev/role',
  workerId: 'edl.dev/worker-id',
  /** A parameter-server pod's shard index: its Service selects on it. */
  psIndex: 'edl.dev/ps-index',
} as const;

/** The value of {@link LABELS.app} on every object elasticdl-ts creates. */
export const APP_NAME = 'elasticdl-ts';

/** Selects the worker pods of one job. */
export function workerSelector(jobName: string): string {
  return `${LABELS.job}=${jobName},${LABELS.role}=worker`;
}

/** Selects the parameter-server pods of one job. */
export function psSelector(jobName: string): string {
  return `${LABELS.job}=${jobName},${LABELS.role}=ps`;
}

/** Selects every object (pods, service, secret) of one job. */
export function jobSelector(jobName: string): string {
  return `${LABELS.job}=${jobName}`;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * Checks a job name: it becomes part of pod, service and secret names (`<job>-worker-12`), so it
 * must be a DNS label short enough to leave room for the suffixes.
 */
export function checkJobName(value: unknown, name = 'jobName'): string {
  if (typeof value !== 'string' || value.length > 40 || !DNS_LABEL.test(value)) {
    invalidArgument("a lower-case DNS label of at most 40 characters (a-z, 0-9, '-')", name, value, 'type');
  }
  return value;
}
