/**
 * Local workers started before their master (what `edl train` does, so that the workers' start-up
 * overlaps the master's): real processes, events kept until the master attaches, and a job run by
 * workers that were waiting for the master to listen.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { InstanceEvents } from '../src/instance-manager.js';
import { LocalInstanceManager } from '../src/local-instance-manager.js';
import { silentLogger } from '../src/logger.js';
import { startMaster } from '../src/start-master.js';
import { buildDist, simWorker, waitFor } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'edl-early-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

describe('LocalInstanceManager started before its master', () => {
  it('keeps what happened to its workers and tells the master when it attaches', async () => {
    const crash = join(dir, 'crash.mjs');
    writeFileSync(crash, 'process.exit(3);\n');
    const workers = new LocalInstanceManager({
      args: [crash],
      numWorkers: 1,
      maxRestarts: 1,
      masterAddress: '127.0.0.1:9',
      token: 't',
      onOutput: () => undefined,
    });
    await workers.start();
    // The slot starts, crashes, restarts once, crashes again and gives up: all before any master.
    await waitFor(
      () => workers.runningWorkers === 0 && workers.workers().length === 0,
      'the slot to give up',
      20_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    const told: string[] = [];
    const events: InstanceEvents = {
      workerStarted: (id, restarts) => told.push(`started ${id} ${restarts}`),
      workerLost: (id, reason, crashed) => told.push(`lost ${id} ${crashed} ${reason}`),
      giveUp: (code) => told.push(`give up ${code}`),
      jobEnded: () => false,
    };
    workers.attach(events);
    expect(told).toEqual([
      'started worker-0 0',
      'lost worker-0 true worker process exited with code 3',
      'started worker-1 1',
      'lost worker-1 true worker process exited with code 3',
      'give up WORKER_RESTARTS_EXHAUSTED',
    ]);
    expect(() => workers.attach(events)).toThrow(/attached already/);
  }, 30_000);

  it('runs a job whose workers started before the master listened', async () => {
    await buildDist(['-b packages/proto']);
    const port = await freePort();
    const token = 'early-token';
    const workers = new LocalInstanceManager({
      args: [simWorker],
      numWorkers: 2,
      env: { SIM_RECORDS: '200', SIM_MINIBATCH: '10' },
      masterAddress: `127.0.0.1:${port}`,
      token,
      onOutput: () => undefined,
    });
    await workers.start();
    expect(workers.runningWorkers).toBe(2);
    // The master comes up later, on the port the workers were given.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const handle = await startMaster({
      jobType: 'training',
      trainingShards: [{ name: 'a', start: 0, count: 200 }],
      minibatchSize: 10,
      numMinibatchesPerTask: 2,
      parameterStore: { optimizer: { type: 'sgd', learningRate: 1 } },
      logger: silentLogger,
      host: '127.0.0.1',
      port,
      token,
      localWorkers: workers,
    });
    expect(handle.instanceManager).toBe(workers);
    const result = await handle.wait();
    expect(result.state).toBe('succeeded');
    expect(handle.master.status().recordsDone).toBe(200);
    // Every record trained once: the sim workers' gradient is -1 at each record id (SGD, rate 1).
    const counts = handle.master.store.getModel().variables[0]?.values ?? [];
    expect(Array.from(counts)).toEqual(new Array(200).fill(1));
    await handle.stop();
  }, 120_000);
});
