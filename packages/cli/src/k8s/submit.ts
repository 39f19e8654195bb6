/** `edl k8s submit`: creates the job's Secret, master pod and Service. */
import type { CommandIO } from '../command.js';
import { describeError, kubeConfigOf } from './cluster.js';
import { jobObjects } from './manifest.js';

export async function submit(argv: string[], io: CommandIO): Promise<number> {
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
