import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type KubernetesInstanceManager,
  kubernetesInstanceManager,
} from '../../src/kubernetes/kubernetes-instance-manager.js';
import { silentLogger } from '../../src/logger.js';
import { startMaster } from '../../src/start-master.js';
import { buildDist, simWorker, sleep, waitFor } from '../helpers.js';
import { type FakeCluster, startProcessCluster } from './fixtures/fake-cluster.js';
import type { KillKind } from './fixtures/fake-kubelet.js';

beforeAll(() => buildDist(['-b packages/proto', '-b packages/data']), 180_000);

const RECORDS = 600;
const EPOCHS = 3;
let cluster: FakeCluster | undefined;
afterAll(async () => cluster?.close());

describe('a whole job on the fake cluster: a real gRPC master, worker pods run as sim-worker processes', () => {
  it('trains every record of every epoch exactly once while pods are preempted, evicted, OOM-killed and deleted', async () => {
    const token = 'job-token-from-the-secret';
    const started = await startProcessCluster('sim-token', token);
    cluster = started.cluster;
    const { output } = started;
    const c = cluster;
    const applied = new Map<string, number>();
    let mismatches = 0;
    let epochOf = () => 0;
    const handle = await startMaster({
      jobType: 'training',
      trainingShards: [
        { name: 'shard-a', start: 0, count: 330 },
        { name: 'shard-b', start: 330, count: 270 },
      ],
      minibatchSize: 10,
      numMinibatchesPerTask: 4,
      numEpochs: EPOCHS,
      shuffle: true,
      seed: 3,
      leaseMs: 3_000,
      maxTaskFailures: 20,
      token,
      parameterStore: { mode: 'async', maxStaleness: 1_000, optimizer: { type: 'sgd', learningRate: 1 } },
      logger: silentLogger,
      onGradientApplied: (g) => {
        const values = g.gradients[0]!.values;
        let n = 0;
        values.forEach((v, id) => {
          if (v === 0) return;
          n++;
          if (id < g.rangeStart || id >= g.rangeEnd) mismatches++;
          const key = `${epochOf()}:${id}`;
          applied.set(key, (applied.get(key) ?? 0) + 1);
        });
        if (n !== g.rangeEnd - g.rangeStart) mismatches++;
      },
      instanceManager: kubernetesInstanceManager({
        api: c.podApi,
        template: {
          jobName: 'sim',
          image: 'elasticdl-ts:test',
          command: [process.execPath, simWorker],
          masterAddress: '', // the address the master bound (loopback here; the Service in a cluster)
          tokenSecret: { name: 'sim-token', key: 'token' },
          owner: { name: 'sim-master', uid: 'uid-1' },
          env: { SIM_RECORDS: String(RECORDS), SIM_MINIBATCH: '10', SIM_STEP_DELAY_MS: '20' },
        },
        numWorkers: 3,
        maxRelaunches: 2,
        deleteGraceSeconds: 1,
        watcher: { backoffMs: 20, maxBackoffMs: 200 },
      }),
    });
    epochOf = () => handle.master.taskManager.status().epoch;
    const manager = handle.instanceManager as KubernetesInstanceManager;
    const core = c.kubeConfig.makeApiClient(CoreV1Api);

    // Take pods away while their worker holds a half-done task.
    const kills: Array<KillKind | 'delete' | 'cut-watch'> = [
      'preempt',
      'evict',
      'cut-watch',
      'oom',
      'delete',
      'sigkill',
      'preempt',
    ];
    const done: string[] = [];
    for (const kill of kills) {
      if (kill === 'cut-watch') {
        c.server.cutWatches();
        continue;
      }
      let victim: string | undefined;
      await waitFor(
        () => {
          const busy = handle.master.taskManager
            .inFlight()
            .find((t) => t.kind === 'training' && t.progress > t.start && t.progress < t.end - 10);
          const pod = busy && manager.workers().find((w) => w.workerId === busy.workerId)?.podName;
          if (pod && c.kubelet.running().includes(pod)) victim = pod;
          return victim !== undefined || handle.master.taskManager.finished;
        },
        'a worker in mid-task',
        30_000,
      );
      if (victim === undefined) break;
      if (kill === 'delete')
        await core.deleteNamespacedPod({ name: victim, namespace: 'edl', gracePeriodSeconds: 1 });
      else c.kubelet.kill(victim, kill);
      done.push(`${kill} ${victim}`);
      await sleep(200);
    }

    const result = await handle.wait();
    expect(result.error?.message, output.slice(-20).join('\n')).toBeUndefined();
    expect(result.state).toBe('succeeded');
    expect(done.length).toBeGreaterThanOrEqual(5);
    const wrong: string[] = [];
    for (let epoch = 0; epoch < EPOCHS; epoch++) {
      for (let id = 0; id < RECORDS; id++) {
        const n = applied.get(`${epoch}:${id}`) ?? 0;
        if (n !== 1) wrong.push(`epoch ${epoch} record ${id}: ${n}`);
      }
    }
    expect(wrong.slice(0, 10)).toEqual([]);
    expect(applied.size).toBe(RECORDS * EPOCHS);
    expect(mismatches).toBe(0);
    expect(Array.from(new Set(handle.master.store.getModel().variables[0]!.values))).toEqual([EPOCHS]);

    // Every taken pod was replaced; the OOM kill used one relaunch of the budget; all exited.
    const summary = manager.summary();
    expect(summary.relaunched).toBe(done.length);
    expect(summary.failed).toBe(done.filter((d) => d.startsWith('oom')).length);
    expect(summary.preempted).toBe(done.length - summary.failed);
    expect(summary.running).toBe(0);
    expect(summary.succeeded + summary.stopped).toBe(3);
    expect(manager.watchStats.resumes).toBeGreaterThanOrEqual(1);
    expect(c.kubelet.running()).toEqual([]);
  }, 180_000);
});
