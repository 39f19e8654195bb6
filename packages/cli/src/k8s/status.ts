/** `edl k8s status`: the job's pods, as a table or JSON. */
import type { V1Pod } from '@kubernetes/client-node';
import type { CommandIO } from '../command.js';
import { connectToJob, type Libs } from './cluster.js';

type PodRow = Record<'pod' | 'role' | 'worker' | 'phase' | 'reason' | 'exit', string>;

function podRow(L: Libs, pod: V1Pod): PodRow {
  const t = pod.status?.containerStatuses?.[0]?.state?.terminated;
  const waiting = pod.status?.containerStatuses?.[0]?.state?.waiting;
  return {
    pod: pod.metadata?.name ?? '',
    role: pod.metadata?.labels?.[L.LABELS.role] ?? '',
    worker: pod.metadata?.labels?.[L.LABELS.workerId] ?? '',
    phase: pod.metadata?.deletionTimestamp ? 'Terminating' : (pod.status?.phase ?? 'Pending'),
    reason: pod.status?.reason ?? t?.reason ?? waiting?.reason ?? '',
    exit: t ? String(t.exitCode) : '',
  };
}

/** How many of `rows` are in each phase. */
function phaseCounts(rows: readonly PodRow[]): Record<string, number> {
  const count = (phase: string) => rows.filter((r) => r.phase === phase).length;
  return {
    Running: count('Running'),
    Pending: count('Pending'),
    Succeeded: count('Succeeded'),
    Failed: count('Failed'),
    Terminating: count('Terminating'),
  };
}

export async function status(argv: string[], io: CommandIO): Promise<number> {
  const { L, job, args, namespace, core } = await connectToJob(argv, { json: true });
  const list = await core.listNamespacedPod({ namespace, labelSelector: L.jobSelector(job) });
  if (list.items.length === 0) throw new Error(`no pods of job ${job} in namespace ${namespace}`);
  const rows = list.items
    .map((pod) => podRow(L, pod))
    .sort((a, b) =>
      a.role === b.role ? a.pod.localeCompare(b.pod, 'en', { numeric: true }) : a.role === 'master' ? -1 : 1,
    );
  const master = rows.find((r) => r.role === 'master');
  const shards = rows.filter((r) => r.role === 'ps');
  const summary = {
    job,
    namespace,
    master: master?.phase ?? 'missing',
    workers: phaseCounts(rows.filter((r) => r.role === 'worker')),
    // A job with --num-ps: its parameter-server pods (relaunches included).
    ...(shards.length > 0 ? { parameterServers: phaseCounts(shards) } : {}),
  };
  const counted = (counts: Record<string, number>) =>
    Object.entries(counts)
      .filter(([, n]) => n > 0)
      .map(([p, n]) => `${n} ${p}`)
      .join(', ') || 'none';
  if (args.flags.has('json')) {
    io.stdout.write(`${JSON.stringify({ ...summary, pods: rows })}\n`);
    return 0;
  }
  const columns = ['pod', 'role', 'worker', 'phase', 'reason', 'exit'] as const;
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] as number))
      .join('  ')
      .trimEnd();
  io.stdout.write(
    `job ${job} (namespace ${namespace}): master ${summary.master}; workers ${counted(summary.workers)}${
      summary.parameterServers ? `; parameter servers ${counted(summary.parameterServers)}` : ''
    }\n`,
  );
  io.stdout.write(
    `${[line(columns.map((c) => c.toUpperCase())), ...rows.map((r) => line(columns.map((c) => r[c] ?? '')))].join('\n')}\n`,
  );
  return 0;
}
