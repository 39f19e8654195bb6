/** `edl k8s logs`: the log of the master pod, or of one worker's. */
import type { CommandIO } from '../command.js';
import { one } from './args.js';
import { connectToJob, describeError } from './cluster.js';

export async function logs(argv: string[], io: CommandIO): Promise<number> {
  const { L, job, args, tail, namespace, core } = await connectToJob(argv, { worker: true, tail: true });
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
