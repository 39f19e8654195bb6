import { EmbeddingClient } from '@edl/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddingTable, type ParameterServer, shardOfId, startParameterServer } from '../src/index.js';

// A shard of a job with a learning-rate schedule applies each push at the rate of the model version
// the push names (PushEmbeddingGradients' model_version), over gRPC as workers push.
const TOKEN = 'decay-token';
const OPTIMIZER = {
  type: 'sgd',
  learningRate: 0.5,
  decay: { type: 'cosine', steps: 4, alpha: 0.2 },
} as const;
const JOB = { optimizer: OPTIMIZER, seed: 13 } as const;

describe('learning-rate decay on a parameter-server shard', () => {
  let server: ParameterServer;
  let client: EmbeddingClient;

  beforeAll(async () => {
    server = await startParameterServer({ token: TOKEN, shardIndex: 0, numShards: 1, job: JOB });
    client = new EmbeddingClient({ addresses: [server.address], token: TOKEN, shardOfId });
    await client.declareTables([{ name: 'items', dim: 2 }], 'w0');
  });

  afterAll(async () => {
    client?.close();
    await server?.shutdown(0);
  });

  it('moves a row by the rate of the version each push names, as an in-process table does', async () => {
    const reference = new EmbeddingTable({ name: 'items', dim: 2, seed: JOB.seed, optimizer: OPTIMIZER });
    const gradient = new Float32Array([1, -2]);
    // The same gradient on three rows at versions 0, 2 and 6 (past the schedule's end).
    for (const [id, version] of [
      [3, 0],
      [4, 2],
      [5, 6],
    ] as const) {
      const ids = new Float64Array([id]);
      await client.push('items', ids, gradient, { modelVersion: version, workerId: 'w0' });
      reference.push(ids, gradient, 1, version);
    }
    const ids = new Float64Array([3, 4, 5]);
    const rows = await client.pull('items', ids, { create: false });
    expect(rows).toEqual(reference.lookup(ids));
    // Each row moved from its initial value by learningRate x factor(version) x gradient.
    const initial = new EmbeddingTable({
      name: 'items',
      dim: 2,
      seed: JOB.seed,
      optimizer: OPTIMIZER,
    }).lookup(ids);
    const steps = [0, 1, 2].map((i) => ((initial[2 * i] as number) - (rows[2 * i] as number)) / 0.5);
    expect(steps[0]).toBeCloseTo(1, 6);
    expect(steps[1]).toBeCloseTo(0.2 + 0.8 * 0.5, 6);
    expect(steps[2]).toBeCloseTo(0.2, 6);
  });
});
