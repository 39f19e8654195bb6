import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { createPodApi } from '../../src/kubernetes/pod-api.js';
import { PodWatcher } from '../../src/kubernetes/pod-watcher.js';
import { sleep, waitFor } from '../helpers.js';
import { kubeConfigFor } from './fixtures/fake-cluster.js';
import { FakeKubeApi } from './fixtures/fake-kube-api.js';

let server: FakeKubeApi | undefined;
let watcher: PodWatcher | undefined;
afterEach(async () => {
  await watcher?.stop();
  await server?.close();
  watcher = undefined;
  server = undefined;
});

const pod = (name: string, job = 'a'): V1Pod => ({
  metadata: { name, labels: { 'edl.dev/job': job, 'edl.dev/role': 'worker' } },
  spec: { containers: [{ name: 'c', image: 'i' }] },
});

async function setUp(options: { bookmarkIntervalMs?: number } = {}) {
  server = new FakeKubeApi(options);
  const api = createPodApi(kubeConfigFor(await server.listen()), 'ns');
  const seen: Array<{ type: string; name: string; rv: string }> = [];
  const syncs: string[][] = [];
  watcher = new PodWatcher(
    api,
    'edl.dev/job=a,edl.dev/role=worker',
    {
      synced: (pods) => syncs.push(pods.map((p) => p.metadata!.name!)),
      changed: (type, p) => seen.push({ type, name: p.metadata!.name!, rv: p.metadata!.resourceVersion! }),
    },
    { backoffMs: 10, maxBackoffMs: 50 },
  );
  return { server, watcher, seen, syncs };
}

describe('PodWatcher (list, then watch from resourceVersion) against a fake API server', () => {
  it('sees every change of the selected pods exactly once and in order while its stream is cut again and again', async () => {
    const { server, watcher, seen, syncs } = await setUp();
    server.create('pods', 'ns', pod('before'));
    server.create('pods', 'ns', pod('other-job', 'b'));
    await watcher.start();
    expect(syncs).toEqual([['before']]);
    const expected: string[] = [];
    const record = (o: { metadata: { resourceVersion: string } } | undefined) => {
      if (o) expected.push(o.metadata.resourceVersion);
    };
    for (let i = 0; i < 60; i++) {
      record(server.create('pods', 'ns', pod(`p${i}`)) as never);
      server.create('pods', 'ns', pod(`x${i}`, 'b')); // not selected: never seen
      record(server.updatePod('ns', `p${i}`, (p) => (p.status.phase = 'Running')) as never);
      if (i % 3 === 0) {
        const s = server;
        await waitFor(() => s.openWatches > 0, 'a watch to cut');
        server.cutWatches();
      }
      if (i % 7 === 0) {
        server.refuseWatches(true);
        await sleep(15);
        server.refuseWatches(false);
      }
      if (i % 2 === 0) await sleep(2);
    }
    server.remove('pods', 'ns', 'p5');
    expected.push(String(server.resourceVersion));
    await waitFor(() => seen.length >= expected.length, 'every event');
    await sleep(50);
    expect(seen.map((e) => e.rv)).toEqual(expected);
    expect(seen.filter((e) => e.name.startsWith('x'))).toEqual([]);
    expect(seen.at(-1)).toMatchObject({ type: 'DELETED', name: 'p5' });
    expect(watcher.stats.lists).toBe(1); // resumed every time, never re-listed
    expect(watcher.stats.resumes).toBeGreaterThanOrEqual(20);
    // Each resumed watch asked for the version of the last event it had seen.
    const watches = server.requests
      .filter((r) => r.query.watch === 'true')
      .map((r) => Number(r.query.resourceVersion));
    expect(watches).toEqual([...watches].sort((a, b) => a - b));
  });

  it('moves its resourceVersion with BOOKMARK events, so that a resume after quiet changes elsewhere skips nothing', async () => {
    const { server, watcher, seen } = await setUp({ bookmarkIntervalMs: 20 });
    await watcher.start();
    const listed = watcher.stats.resourceVersion;
    for (let i = 0; i < 5; i++) server.create('pods', 'ns', pod(`other-${i}`, 'b'));
    await waitFor(
      () => watcher.stats.bookmarks > 0 && watcher.stats.resourceVersion === String(server.resourceVersion),
      'a bookmark',
    );
    expect(Number(watcher.stats.resourceVersion)).toBe(Number(listed) + 5);
    // Compaction of the (unrelated) history no longer forces a re-list: the bookmark moved us past it.
    server.compact();
    server.cutWatches();
    server.create('pods', 'ns', pod('after'));
    await waitFor(() => seen.length === 1, 'the new pod');
    expect(watcher.stats.gone).toBe(0);
    expect(watcher.stats.lists).toBe(1);
  });

  it('re-lists when the version it resumes from was compacted (410 Gone)', async () => {
    const { server, watcher, syncs } = await setUp();
    server.create('pods', 'ns', pod('one'));
    await watcher.start();
    server.refuseWatches(true);
    server.cutWatches();
    server.create('pods', 'ns', pod('two'));
    server.remove('pods', 'ns', 'one');
    server.compact();
    server.refuseWatches(false);
    await waitFor(() => syncs.length === 2, 'the re-list');
    expect(syncs).toEqual([['one'], ['two']]);
    expect(watcher.stats.gone).toBe(1);
  });
});
