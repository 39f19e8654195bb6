import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddingClient } from '@edl/proto';
import { shardOfId } from '@edl/ps';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type KubernetesInstanceManager,
  kubernetesInstanceManager,
} from '../../src/kubernetes/kubernetes-instance-manager.js';
import { createServiceApi } from '../../src/kubernetes/service-api.js';
import { silentLogger } from '../../src/logger.js';
import { startMaster } from '../../src/start-master.js';
import { buildDist, freePort, repoRoot, simWorker, sleep, waitFor } from '../helpers.js';
import { type FakeCluster, startFakeCluster, startProcessCluster } from './fixtures/fake-cluster.js';

// The shard pods run the real `edl ps` of the built CLI.
beforeAll(() => buildDist(['-b packages/cli']), 300_000);

const RECORDS = 400;
const EPOCHS = 3;
const edl = join(repoRoot, 'packages/cli/dist/bin/edl.js');
let cluster: FakeCluster | undefined;
let idleCluster: FakeCluster | undefined;
const checkpointDir = mkdtempSync(join(tmpdir(), 'edl-ps-pods-'));
afterAll(async () => {
  await cluster?.close();
  await idleCluster?.close();
  rmSync(checkpointDir, { recursive: true, force: true });
});

describe('parameter-server pods on the fake cluster: real edl ps shards behind their Services', () => {
  it('relaunches a deleted shard under its Service name from the last checkpoint, and the job succeeds', async () => {
    const token = 'job-token-from-the-secret';
    const started = await startProcessCluster('psjob-token', token);
    cluster = started.cluster;
    const { output } = started;
    const c = cluster;
    // One host runs every "pod": each shard gets its own loopback port (in a cluster every pod
    // listens on the same port of its own IP, behind its Service).
    const ports = [await freePort(), await freePort()];
    const relaunchedShards: number[] = [];
    const hookMasters = new Set<unknown>();
    const handle = await startMaster({
      jobType: 'training',
      trainingShards: [{ name: 'shard-a', start: 0, count: RECORDS }],
      minibatchSize: 10,
      numMinibatchesPerTask: 4,
      numEpochs: EPOCHS,
      seed: 3,
      leaseMs: 3_000,
      token,
      checkpointDir,
      checkpointSteps: 5,
      parameterStore: { mode: 'async', maxStaleness: 1_000, optimizer: { type: 'sgd', learningRate: 1 } },
      logger: silentLogger,
      instanceManager: kubernetesInstanceManager({
        api: c.podApi,
        template: {
          jobName: 'psjob',
          image: 'elasticdl-ts:test',
          command: [process.execPath, simWorker],
          masterAddress: '',
          tokenSecret: { name: 'psjob-token', key: 'token' },
          owner: { name: 'psjob-master', uid: 'uid-1' },
          env: { SIM_RECORDS: String(RECORDS), SIM_MINIBATCH: '10', SIM_STEP_DELAY_MS: '40' },
        },
        // The workers start once the test has put rows on the shards (scaleTo below).
        numWorkers: 0,
        deleteGraceSeconds: 1,
        watcher: { backoffMs: 20, maxBackoffMs: 200 },
        parameterServers: {
          api: c.podApi,
          services: createServiceApi(c.kubeConfig, 'edl'),
          template: {
            jobName: 'psjob',
            image: 'elasticdl-ts:test',
            command: [process.execPath],
            args: [edl, 'ps'],
            numShards: 2,
            optimizer: { type: 'sgd', learningRate: 1 },
            seed: 7,
            tokenSecret: { name: 'psjob-token', key: 'token' },
            owner: { name: 'psjob-master', uid: 'uid-1' },
            priorityClassName: 'edl-ps',
          },
          maxRelaunches: 2,
          deleteGraceSeconds: 1,
          checkpointDir,
          portOf: (index) => ports[index] as number,
          addressOf: (index) => `127.0.0.1:${ports[index]}`,
          onShardRelaunched: (index, master) => {
            relaunchedShards.push(index);
            hookMasters.add(master);
          },
          watcher: { backoffMs: 20, maxBackoffMs: 200 },
        },
      }),
    });
    const manager = handle.instanceManager as KubernetesInstanceManager;
    const shards = manager.parameterServers;
    if (shards === undefined) throw new Error('no parameter servers');

    // Each shard has its Service, selecting its pods by shard index, owned by the master pod.
    for (const index of [0, 1]) {
      const service = c.server.get('services', 'edl', `psjob-ps-${index}`);
      expect(service?.spec).toEqual({
        selector: { 'edl.dev/job': 'psjob', 'edl.dev/role': 'ps', 'edl.dev/ps-index': String(index) },
        ports: [{ name: 'grpc', port: ports[index], targetPort: 'grpc' }],
      });
      expect(service?.metadata.ownerReferences).toEqual([
        { apiVersion: 'v1', kind: 'Pod', name: 'psjob-master', uid: 'uid-1' },
      ]);
    }

    // Both shards listen; a checkpoint covering them is committed; then shard 1's pod is deleted.
    await waitFor(
      () => output.filter((l) => l.includes('"event":"listening"')).length >= 2,
      'both shards listening',
      60_000,
    );
    // Rows on both shards, moved away from their initial values by a push (SGD, rate 1), then a
    // checkpoint taken after that.
    const client = new EmbeddingClient({ addresses: shards.addresses, token, shardOfId });
    const ids = Float64Array.from({ length: 64 }, (_, i) => i);
    await client.declareTables([{ name: 'clicks', dim: 4 }], 'test');
    const initial = await client.pull('clicks', ids);
    await client.push('clicks', ids, new Float32Array(ids.length * 4).fill(1), {
      modelVersion: handle.master.store.version,
      workerId: 'test',
    });
    const trained = await client.pull('clicks', ids);
    expect(trained[0]).toBeCloseTo((initial[0] as number) - 1, 5);
    const rowsBefore = (await client.describe()).map((d) => d.tables[0]?.rows);
    expect(rowsBefore[0]! + rowsBefore[1]!).toBe(ids.length);
    expect(rowsBefore[1]).toBeGreaterThan(0);
    const versionOfRows = handle.master.store.version;
    await manager.scaleTo(2);
    // Workers get every shard's address.
    const worker = c.server.pods('edl').find((p) => p.metadata.labels['edl.dev/role'] === 'worker');
    expect(worker?.spec.containers[0].env).toContainEqual({
      name: 'EDL_PS_ADDRESSES',
      value: `127.0.0.1:${ports[0]},127.0.0.1:${ports[1]}`,
    });
    await waitFor(
      () => (shards.restorePoint?.version ?? -1) > versionOfRows,
      'a checkpoint with the shards',
      60_000,
    );
    expect(handle.master.taskManager.finished).toBe(false);
    const core = c.kubeConfig.makeApiClient(CoreV1Api);
    await core.deleteNamespacedPod({ name: 'psjob-ps-1-0', namespace: 'edl', gracePeriodSeconds: 1 });

    await waitFor(() => c.kubelet.running().includes('psjob-ps-1-1'), 'shard 1 relaunched', 30_000);
    const relaunched = c.server.get('pods', 'edl', 'psjob-ps-1-1');
    expect(relaunched?.metadata.labels).toMatchObject({ 'edl.dev/role': 'ps', 'edl.dev/ps-index': '1' });
    expect(relaunched?.spec.priorityClassName).toBe('edl-ps');
    const args: string[] = relaunched?.spec.containers[0].args;
    expect(args.slice(args.indexOf('--restore-dir'), args.indexOf('--restore-dir') + 2)).toEqual([
      '--restore-dir',
      checkpointDir,
    ]);
    const version = Number(args[args.indexOf('--restore-version') + 1]);
    expect(version).toBeGreaterThan(0);
    expect(version % 5).toBe(0);
    // The relaunched shard restored that checkpoint's shard files before it served.
    await waitFor(
      () => output.some((l) => l.startsWith('psjob-ps-1-1: {"event":"restored"')),
      'the relaunched shard restored',
      30_000,
    );
    expect(relaunchedShards).toEqual([1]);
    // The hook gets the job's master, where the roll-back to the last cut is wired.
    expect([...hookMasters]).toEqual([handle.master]);
    // It holds its rows as they were trained, not fresh ones from the initializer.
    const restored = JSON.parse(
      (output.find((l) => l.startsWith('psjob-ps-1-1: {"event":"restored"')) as string).slice(
        'psjob-ps-1-1: '.length,
      ),
    );
    expect(restored.tables).toEqual([{ name: 'clicks', rows: rowsBefore[1] }]);
    // Its Service address answers again (the client's channel reconnects, as a worker's does).
    let reread: Float32Array | undefined;
    for (let attempt = 0; reread === undefined; attempt++) {
      reread = await client.pull('clicks', ids, { create: false }).catch((error: unknown) => {
        if (attempt >= 50) throw error;
        return sleep(200).then(() => undefined);
      });
    }
    expect(Array.from(reread)).toEqual(Array.from(trained));
    client.close();
    // The first launch was never relaunched a second time; shard 0 kept its pod.
    expect(shards.pods().map((p) => p.podName)).toEqual(['psjob-ps-0-0', 'psjob-ps-1-1']);

    const result = await handle.wait();
    expect(result.error?.message, output.slice(-20).join('\n')).toBeUndefined();
    expect(result.state).toBe('succeeded');
    expect(Array.from(new Set(handle.master.store.getModel().variables[0]!.values))).toEqual([EPOCHS]);
    expect(shards.pods().map((p) => p.relaunches)).toEqual([0, 1]);
    // The relaunch rolled the whole job back to the last committed checkpoint (the one the shard
    // restored, or a later one committed before the roll-back began).
    expect(handle.master.rollBacks.map((r) => r.shardIndex)).toEqual([1]);
    expect(handle.master.rollBacks[0]?.checkpoint).toContain(checkpointDir);
    expect(handle.master.rollBacks[0]?.cutVersion).toBeGreaterThanOrEqual(version);
    // The job's end took the shards' pods down with the workers'.
    expect(c.kubelet.running()).toEqual([]);
    expect(output.filter((l) => l.includes('"event":"stopped"')).map((l) => l.split(':')[0])).toEqual(
      expect.arrayContaining(['psjob-ps-0-0', 'psjob-ps-1-1']),
    );
  }, 240_000);

  it('fails the job once a shard ended more often than maxRelaunches allows', async () => {
    idleCluster = await startFakeCluster({ mode: 'idle', startDelayMs: 10 });
    const c = idleCluster;
    const relaunchedShards: number[] = [];
    const handle = await startMaster({
      jobType: 'training',
      trainingShards: [{ name: 'shard-a', start: 0, count: 100 }],
      minibatchSize: 10,
      numEpochs: 1,
      token: 't',
      parameterStore: { mode: 'async', maxStaleness: 10, optimizer: { type: 'sgd', learningRate: 1 } },
      logger: silentLogger,
      workerExitGraceMs: 0,
      instanceManager: kubernetesInstanceManager({
        api: c.podApi,
        template: {
          jobName: 'few',
          image: 'elasticdl-ts:test',
          masterAddress: '',
          tokenSecret: { name: 'few-token', key: 'token' },
        },
        numWorkers: 0,
        deleteGraceSeconds: 0,
        parameterServers: {
          api: c.podApi,
          services: createServiceApi(c.kubeConfig, 'edl'),
          template: {
            jobName: 'few',
            image: 'elasticdl-ts:test',
            args: ['ps'],
            numShards: 1,
            optimizer: { type: 'sgd', learningRate: 1 },
            seed: 0,
            tokenSecret: { name: 'few-token', key: 'token' },
          },
          maxRelaunches: 1,
          deleteGraceSeconds: 0,
          onShardRelaunched: (index) => relaunchedShards.push(index),
          watcher: { backoffMs: 20, maxBackoffMs: 200 },
        },
      }),
    });
    const shards = (handle.instanceManager as KubernetesInstanceManager).parameterServers;
    // The Service DNS name is what workers get when no test overrides it.
    expect(shards?.addresses).toEqual(['few-ps-0.edl.svc:50002']);
    await waitFor(() => c.kubelet.running().includes('few-ps-0-0'), 'the shard running');
    c.kubelet.exit('few-ps-0-0', 1);
    await waitFor(() => c.kubelet.running().includes('few-ps-0-1'), 'the shard relaunched');
    // No checkpoint was committed (the job has no --checkpoint-dir): it starts from the initializer.
    expect(c.server.get('pods', 'edl', 'few-ps-0-1')?.spec.containers[0].args).not.toContain('--restore-dir');
    expect(relaunchedShards).toEqual([0]);
    c.kubelet.kill('few-ps-0-1', 'oom');
    const result = await handle.wait();
    expect(result.state).toBe('failed');
    expect(result.error?.code).toBe('PS_RESTARTS_EXHAUSTED');
    expect(result.error?.message).toBe(
      'Parameter-server shard 0 (few-ps-0.edl.svc:50002, pod few-ps-0-1) failed: exit code 137 (OOMKilled); 1 relaunch(es) used, maxRelaunches is 1',
    );
    expect(c.server.get('pods', 'edl', 'few-ps-0-2')).toBeUndefined();
  }, 60_000);
});
