import { CoreV1Api } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import type { InstanceEvents } from '../../src/instance-manager.js';
import {
  KubernetesInstanceManager,
  type KubernetesInstanceManagerOptions,
} from '../../src/kubernetes/kubernetes-instance-manager.js';
import { sleep, waitFor } from '../helpers.js';
import { type FakeCluster, startFakeCluster } from './fixtures/fake-cluster.js';

/** Records what the manager tells the master. */
function recordingEvents() {
  const lost: Array<{ workerId: string; reason: string; crashed: boolean }> = [];
  const gaveUp: Array<{ code: string; message: string }> = [];
  const stopRequests: string[] = [];
  let ended = false;
  const events: InstanceEvents = {
    workerLost: (workerId, reason, crashed) => lost.push({ workerId, reason, crashed }),
    giveUp: (code, message) => gaveUp.push({ code, message }),
    jobEnded: () => ended,
    requestStop: (workerId) => stopRequests.push(workerId),
  };
  return { events, lost, gaveUp, stopRequests, end: () => (ended = true) };
}

const template = () => ({
  jobName: 'mnist',
  image: 'edl:test',
  args: ['worker'],
  masterAddress: 'mnist-master.edl.svc:50001',
  tokenSecret: { name: 'mnist-token', key: 'token' },
  owner: { name: 'mnist-master', uid: 'uid-of-master' },
  resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { memory: '1Gi' } },
});

let cluster: FakeCluster | undefined;
let manager: KubernetesInstanceManager | undefined;
afterEach(async () => {
  await manager?.stop(0);
  await cluster?.close();
  manager = undefined;
  cluster = undefined;
});

async function setUp(
  options: Partial<KubernetesInstanceManagerOptions> = {},
  api = {},
  kubelet: { failImages?: string[] } = {},
) {
  cluster = await startFakeCluster({ mode: 'idle', startDelayMs: 5, ...kubelet }, api);
  const rec = recordingEvents();
  manager = new KubernetesInstanceManager(
    {
      api: cluster.podApi,
      template: template(),
      numWorkers: 2,
      deleteGraceSeconds: 1,
      watcher: { backoffMs: 20, maxBackoffMs: 100 },
      ...options,
    },
    rec.events,
  );
  await manager.start();
  const c = cluster;
  if (kubelet.failImages === undefined)
    await waitFor(() => c.kubelet.running().length === (options.numWorkers ?? 2), 'workers running');
  const m = manager;
  await waitFor(
    () => m.watchStats.resourceVersion === String(c.server.resourceVersion),
    'the watch to catch up',
  );
  return { cluster: c, manager, rec };
}

const phaseOf = (c: FakeCluster, name: string) => c.server.get('pods', c.namespace, name)?.status?.phase;

describe('KubernetesInstanceManager against a fake API server', () => {
  it('creates labelled worker pods owned by the master, with the token from a Secret', async () => {
    const { cluster, manager } = await setUp();
    const pods = cluster.server.pods('edl');
    expect(pods.map((p) => p.metadata.name).sort()).toEqual(['mnist-worker-0', 'mnist-worker-1']);
    const pod = cluster.server.get('pods', 'edl', 'mnist-worker-0')!;
    expect(pod.metadata.labels).toMatchObject({
      'edl.dev/job': 'mnist',
      'edl.dev/role': 'worker',
      'edl.dev/worker-id': 'worker-0',
    });
    expect(pod.metadata.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Pod', name: 'mnist-master', uid: 'uid-of-master' },
    ]);
    expect(pod.spec.restartPolicy).toBe('Never');
    const env = pod.spec.containers[0].env;
    expect(env).toContainEqual({ name: 'EDL_MASTER_ADDR', value: 'mnist-master.edl.svc:50001' });
    expect(env).toContainEqual({
      name: 'EDL_JOB_TOKEN',
      valueFrom: { secretKeyRef: { name: 'mnist-token', key: 'token' } },
    });
    expect(pod.spec.containers[0].resources).toEqual({
      requests: { cpu: '1', memory: '1Gi' },
      limits: { memory: '1Gi' },
    });
    await waitFor(() => phaseOf(cluster, 'mnist-worker-1') === 'Running', 'Running');
    expect(manager.runningWorkers).toBe(2);
    // The watch started from the list's resourceVersion, with bookmarks.
    const watch = cluster.server.requests.find((r) => r.query.watch === 'true')!;
    expect(watch.query.allowWatchBookmarks).toBe('true');
    expect(Number(watch.query.resourceVersion)).toBeGreaterThan(0);
  });

  it('always relaunches preempted, evicted and externally SIGKILLed workers under new ids, without using the failure budget', async () => {
    const { cluster, manager, rec } = await setUp({ maxRelaunches: 0 });
    cluster.kubelet.kill('mnist-worker-0', 'preempt');
    await waitFor(() => cluster.kubelet.running().includes('mnist-worker-2'), 'relaunch of worker-0');
    cluster.kubelet.kill('mnist-worker-1', 'evict');
    await waitFor(() => cluster.kubelet.running().includes('mnist-worker-3'), 'relaunch of worker-1');
    cluster.kubelet.kill('mnist-worker-2', 'sigkill');
    await waitFor(() => cluster.kubelet.running().includes('mnist-worker-4'), 'relaunch of worker-2');
    expect(rec.lost.map((l) => [l.workerId, l.crashed])).toEqual([
      ['worker-0', false],
      ['worker-1', false],
      ['worker-2', false],
    ]);
    expect(rec.lost[0]!.reason).toMatch(/preempted: Preempting/);
    expect(rec.lost[1]!.reason).toMatch(/preempted: Evicted/);
    expect(rec.lost[2]!.reason).toMatch(/killed from outside: exit code 137 \(Error\)/);
    expect(rec.gaveUp).toEqual([]);
    expect(manager.summary()).toMatchObject({
      launched: 5,
      relaunched: 3,
      preempted: 3,
      failed: 0,
      running: 2,
    });
  });

  it('relaunches an OOM-killed worker up to maxRelaunches, then fails the job', async () => {
    const { cluster, manager, rec } = await setUp({ maxRelaunches: 1 });
    cluster.kubelet.kill('mnist-worker-0', 'oom');
    await waitFor(() => cluster.kubelet.running().includes('mnist-worker-2'), 'first relaunch');
    cluster.kubelet.kill('mnist-worker-2', 'oom');
    await waitFor(() => rec.gaveUp.length === 1, 'give up');
    expect(rec.gaveUp[0]).toEqual({
      code: 'WORKER_RELAUNCHES_EXHAUSTED',
      message:
        'Worker worker-2 (pod mnist-worker-2) failed with exit code 137 (OOMKilled); 1 relaunch(es) used, maxRelaunches is 1',
    });
    expect(rec.lost.map((l) => [l.workerId, l.crashed])).toEqual([
      ['worker-0', true],
      ['worker-2', true],
    ]);
    await sleep(100);
    expect(cluster.server.get('pods', 'edl', 'mnist-worker-3')).toBeUndefined();
    expect(manager.summary()).toMatchObject({ launched: 3, relaunched: 1, failed: 2 });
    // Any other failure uses the same budget.
    expect(cluster.kubelet.running()).toEqual(['mnist-worker-1']);
    // The job failed; the healthy worker that exits because of that, even with an error status,
    // is stopped, not failed.
    rec.end();
    cluster.kubelet.kill('mnist-worker-1', 'sigkill');
    await waitFor(() => rec.lost.length === 3, 'the last worker leaving');
    expect(rec.lost[2]).toMatchObject({ workerId: 'worker-1', crashed: false });
    expect(rec.lost[2]!.reason).toMatch(/\(after the job ended\)$/);
    expect(manager.summary()).toMatchObject({
      launched: 3,
      relaunched: 1,
      failed: 2,
      stopped: 1,
      running: 0,
    });
  });

  it('relaunches a worker whose pod is deleted while running (graceful deletion)', async () => {
    const { cluster, rec } = await setUp();
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    await core.deleteNamespacedPod({ name: 'mnist-worker-1', namespace: 'edl', gracePeriodSeconds: 5 });
    await waitFor(() => cluster.kubelet.running().includes('mnist-worker-2'), 'relaunch');
    expect(rec.lost).toEqual([
      {
        workerId: 'worker-1',
        reason: 'worker pod mnist-worker-1 preempted: pod deleted while Running',
        crashed: false,
      },
    ]);
    // The deleted pod went through deletionTimestamp, then removal.
    await waitFor(() => cluster.server.get('pods', 'edl', 'mnist-worker-1') === undefined, 'removal');
  });

  it('resumes a cut watch from its last resourceVersion and misses nothing that happened meanwhile', async () => {
    const { cluster, manager, rec } = await setUp();
    await sleep(50);
    const before = manager.watchStats.resourceVersion;
    cluster.server.refuseWatches(true);
    cluster.server.cutWatches();
    cluster.kubelet.kill('mnist-worker-0', 'preempt');
    await sleep(150);
    expect(rec.lost).toEqual([]); // not seen yet: no watch
    cluster.server.refuseWatches(false);
    await waitFor(() => cluster.kubelet.running().includes('mnist-worker-2'), 'relaunch after resume');
    expect(rec.lost.map((l) => l.workerId)).toEqual(['worker-0']);
    expect(manager.watchStats.lists).toBe(1);
    expect(manager.watchStats.gone).toBe(0);
    const resumed = cluster.server.requests.filter((r) => r.query.watch === 'true').slice(1);
    expect(resumed.length).toBeGreaterThanOrEqual(2);
    expect(resumed[0]!.query.resourceVersion).toBe(before);
  });

  for (const goneAsHttpStatus of [false, true]) {
    it(`re-lists on 410 Gone (${goneAsHttpStatus ? 'HTTP status' : 'ERROR event'}) and reconciles a pod deleted meanwhile`, async () => {
      const { cluster, manager, rec } = await setUp({}, { goneAsHttpStatus });
      cluster.server.refuseWatches(true);
      cluster.server.cutWatches();
      // The pod vanishes and the history that said so is compacted away.
      cluster.kubelet.exit('mnist-worker-1', 1);
      cluster.server.remove('pods', 'edl', 'mnist-worker-1');
      cluster.server.compact();
      cluster.server.refuseWatches(false);
      await waitFor(() => cluster.kubelet.running().includes('mnist-worker-2'), 'relaunch after re-list');
      expect(manager.watchStats.gone).toBe(1);
      expect(manager.watchStats.lists).toBe(2);
      expect(rec.lost).toEqual([
        {
          workerId: 'worker-1',
          reason: 'worker pod mnist-worker-1 preempted: pod deleted while Running',
          crashed: false,
        },
      ]);
      // And watching goes on from the new list's version.
      cluster.kubelet.kill('mnist-worker-0', 'preempt');
      await waitFor(() => cluster.kubelet.running().includes('mnist-worker-3'), 'relaunch after the re-list');
    });
  }

  it('scales up and down while running; stopped workers are not relaunched', async () => {
    const { cluster, manager, rec } = await setUp();
    expect(await manager.scaleTo(4)).toBe(4);
    await waitFor(() => cluster.kubelet.running().length === 4, '4 workers');
    expect(await manager.scaleTo(1)).toBe(1);
    await waitFor(() => manager.runningWorkers === 1, '1 worker');
    expect(rec.stopRequests.sort()).toEqual(['worker-1', 'worker-2', 'worker-3']);
    expect(rec.lost.every((l) => !l.crashed)).toBe(true);
    expect(rec.lost.map((l) => l.workerId).sort()).toEqual(['worker-1', 'worker-2', 'worker-3']);
    await sleep(100);
    expect(cluster.kubelet.running()).toEqual(['mnist-worker-0']);
    expect(manager.summary()).toMatchObject({ launched: 4, relaunched: 0, stopped: 3, running: 1 });
    // Down again before the new pods' create calls have returned: they are deleted once created.
    const up = manager.scaleTo(3);
    const down = manager.scaleTo(1);
    expect(await up).toBe(1);
    expect(await down).toBe(1);
    await waitFor(
      () => manager.runningWorkers === 1 && cluster.server.pods('edl').length === 1,
      'back to 1 pod',
    );
    expect(cluster.server.pods('edl').map((p) => p.metadata.name)).toEqual(['mnist-worker-0']);
  });

  it('after the job ended, exited workers are counted as succeeded or stopped (never failed) and not relaunched', async () => {
    const { cluster, manager, rec } = await setUp();
    rec.end();
    cluster.kubelet.exit('mnist-worker-0', 0);
    cluster.kubelet.exit('mnist-worker-1', 2);
    await waitFor(() => manager.runningWorkers === 0, 'all workers exited');
    expect(manager.summary()).toMatchObject({
      launched: 2,
      relaunched: 0,
      succeeded: 1,
      failed: 0,
      stopped: 1,
      running: 0,
    });
    expect(rec.lost.map((l) => l.crashed)).toEqual([false, false]);
    expect(rec.gaveUp).toEqual([]);
  });

  it('fails a worker whose image cannot be pulled (deleting its pod), within the relaunch limit', async () => {
    const { cluster, manager, rec } = await setUp(
      { numWorkers: 1, maxRelaunches: 2, template: { ...template(), image: 'registry.example.com/typo:1' } },
      {},
      { failImages: ['registry.example.com/typo:1'] },
    );
    await waitFor(() => rec.gaveUp.length === 1, 'give up');
    expect(rec.gaveUp[0]!.message).toBe(
      'Worker worker-2 (pod mnist-worker-2) failed with cannot start: ImagePullBackOff: Back-off pulling image "registry.example.com/typo:1"; 2 relaunch(es) used, maxRelaunches is 2',
    );
    expect(rec.lost.map((l) => [l.workerId, l.crashed])).toEqual([
      ['worker-0', true],
      ['worker-1', true],
      ['worker-2', true],
    ]);
    await waitFor(() => cluster.server.pods('edl').length === 0, 'the pods that never ran to be deleted');
    expect(manager.runningWorkers).toBe(0);
  });

  it('drops a watch that went silent (half-open connection) and resumes it without losing the change', async () => {
    const { cluster, manager, rec } = await setUp({
      watcher: { backoffMs: 20, maxBackoffMs: 100, idleTimeoutMs: 300 },
    });
    cluster.server.stallWatches();
    cluster.kubelet.kill('mnist-worker-0', 'evict');
    await waitFor(
      () => cluster.kubelet.running().includes('mnist-worker-2'),
      'relaunch after the idle timeout',
    );
    expect(manager.watchStats.idle).toBeGreaterThanOrEqual(1);
    expect(manager.watchStats.lists).toBe(1);
    expect(rec.lost.map((l) => l.workerId)).toEqual(['worker-0']);
  });
});
