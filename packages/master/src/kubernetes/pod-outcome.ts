import type { V1ContainerStateTerminated, V1Pod } from '@kubernetes/client-node';

/**
 * What became of a worker pod:
 * - `active`: Pending or Running, not being deleted;
 * - `succeeded`: the worker exited 0;
 * - `preempted`: taken away by the cluster, not the worker's fault (evicted, preempted, node
 *   shutdown, SIGKILLed from outside: exit 137 without OOMKilled, or deleted before it succeeded);
 *   always relaunched;
 * - `failed`: anything else (a non-zero exit, OOMKilled, an image that cannot start): relaunched
 *   up to a limit.
 */
export type PodOutcome =
  | { readonly kind: 'active'; readonly phase: string }
  | { readonly kind: 'succeeded'; readonly reason: string }
  | { readonly kind: 'preempted'; readonly reason: string }
  | { readonly kind: 'failed'; readonly reason: string };

/** Pod `status.reason` values the kubelet or the scheduler set when they take a pod away. */
const PREEMPTION_REASONS = new Set([
  'Evicted',
  'Preempting',
  'Preempted',
  'Shutdown',
  'NodeShutdown',
  'Terminated',
  'NodeLost',
]);

/** Waiting reasons of a container that will not start without a change to the pod or the image. */
const CANNOT_START = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
  'CreateContainerError',
]);

/** The terminated state of the worker container (the first one), if it has ended. */
function terminated(pod: V1Pod): V1ContainerStateTerminated | undefined {
  return pod.status?.containerStatuses?.[0]?.state?.terminated;
}

function describeExit(t: V1ContainerStateTerminated): string {
  return `exit code ${t.exitCode}${t.reason ? ` (${t.reason})` : ''}${t.message ? `: ${t.message}` : ''}`;
}

/**
 * Classifies a pod as seen in a watch event or a list. `deleted` is true when the pod is gone
 * (a DELETED event, or missing from a re-list) or is being deleted (deletionTimestamp): a pod
 * deleted before it succeeded is treated as preempted, whoever deleted it.
 */
export function podOutcome(pod: V1Pod, deleted = false): PodOutcome {
  const phase = pod.status?.phase ?? 'Pending';
  const end = terminated(pod);
  if (phase === 'Succeeded') return { kind: 'succeeded', reason: end ? describeExit(end) : 'Succeeded' };
  const reason = pod.status?.reason;
  if (reason !== undefined && PREEMPTION_REASONS.has(reason)) {
    return { kind: 'preempted', reason: `${reason}${pod.status?.message ? `: ${pod.status.message}` : ''}` };
  }
  // A DisruptionTarget condition is how Kubernetes >= 1.26 marks preemption, eviction and
  // node-pressure kills on the pod itself.
  const disruption = pod.status?.conditions?.find(
    (c) => c.type === 'DisruptionTarget' && c.status === 'True',
  );
  if (phase === 'Failed' && disruption) {
    return { kind: 'preempted', reason: `DisruptionTarget ${disruption.reason ?? ''}`.trim() };
  }
  if (phase === 'Failed') {
    if (end?.exitCode === 137 && end.reason !== 'OOMKilled') {
      return { kind: 'preempted', reason: `killed from outside: ${describeExit(end)}` };
    }
    return { kind: 'failed', reason: end ? describeExit(end) : (reason ?? 'Failed') };
  }
  if (deleted || pod.metadata?.deletionTimestamp !== undefined) {
    return { kind: 'preempted', reason: `pod deleted while ${phase}` };
  }
  // A container that cannot start stays Pending for ever (the kubelet keeps backing off): without
  // this, a wrong --image would hang the job. It counts as a failure, within the relaunch limit.
  const waiting = pod.status?.containerStatuses?.[0]?.state?.waiting;
  if (phase === 'Pending' && waiting?.reason !== undefined && CANNOT_START.has(waiting.reason)) {
    return {
      kind: 'failed',
      reason: `cannot start: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`,
    };
  }
  return { kind: 'active', phase };
}
