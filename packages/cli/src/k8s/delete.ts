/** `edl k8s delete`: the job's pods, Services and Secret. */
import type { CommandIO } from '../command.js';
import { connectToJob } from './cluster.js';

export async function deleteJob(argv: string[], io: CommandIO): Promise<number> {
  const { L, job, namespace, core } = await connectToJob(argv);
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
  // The parameter-server shards' Services (a job with --num-ps) are owned by the master pod too.
  const shardServices = await core.listNamespacedService({ namespace, labelSelector: L.psSelector(job) });
  const services = [`${job}-master`, ...shardServices.items.map((s) => s.metadata?.name as string)];
  for (const name of services) {
    await core
      .deleteNamespacedService({ name, namespace })
      .then(() => deleted.push(`service/${name}`), ignoreMissing);
  }
  await core
    .deleteNamespacedSecret({ name: `${job}-token`, namespace })
    .then(() => deleted.push(`secret/${job}-token`), ignoreMissing);
  if (deleted.length === 0) throw new Error(`nothing of job ${job} found in namespace ${namespace}`);
  io.stdout.write(`deleted ${deleted.join(' ')}\n`);
  return 0;
}
