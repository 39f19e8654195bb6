import { EmbeddingClient } from '@edl/proto';
import { EmbeddingTable, type ParameterServer, shardOfId, startParameterServer } from '@edl/ps';
import { afterEach, describe, expect, it } from 'vitest';
import { ParameterServerRows } from '../src/index.js';

// ParameterServerRows against a real shard over gRPC: a shard that is not listening yet (being
// relaunched) is waited for, and one that lost its tables (a relaunch starts empty) gets them
// declared again.
const TOKEN = 'rows-token';
const JOB = { optimizer: { type: 'sgd', learningRate: 0.5 }, seed: 11 } as const;
const TABLE = { name: 'user', dim: 4 } as const;

let server: ParameterServer | undefined;
let rows: ParameterServerRows | undefined;
afterEach(async () => {
  rows?.close();
  await server?.shutdown(0);
  server = undefined;
});

const startShard = (port = 0) =>
  startParameterServer({ token: TOKEN, shardIndex: 0, numShards: 1, job: JOB, port });

describe('ParameterServerRows', () => {
  it('waits for a shard that is not listening yet and declares the tables before the first pull', async () => {
    const probe = await startShard();
    const port = probe.port;
    await probe.shutdown(0);
    const client = new EmbeddingClient({ addresses: [`127.0.0.1:${port}`], token: TOKEN, shardOfId });
    rows = new ParameterServerRows({ client, tables: [TABLE], workerId: 'w0', unavailableMs: 20_000 });
    const ids = new Float64Array([3, 9, 27]);
    const pulled = rows.rows('user', ids, 4, true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    server = await startShard(port);
    const reference = new EmbeddingTable({ ...TABLE, ...JOB });
    expect(await pulled).toEqual(reference.pull(ids));

    const gradients = Float32Array.from({ length: 12 }, (_, i) => i / 10);
    await rows.push([{ table: 'user', ids, gradients }], 3);
    reference.push(ids, gradients);
    expect(await rows.rows('user', ids, 4, false)).toEqual(reference.lookup(ids));
    const [shard] = await client.describe();
    expect(shard?.tables).toMatchObject([{ name: 'user', rows: 3, pushes: 1, maxModelVersion: 3 }]);
  });

  it('declares the tables again to a shard that lost them, and fails other errors at once', async () => {
    server = await startShard();
    const port = server.port;
    const client = new EmbeddingClient({ addresses: [server.address], token: TOKEN, shardOfId });
    rows = new ParameterServerRows({ client, tables: [TABLE], workerId: 'w0' });
    const ids = new Float64Array([1, 2]);
    await rows.rows('user', ids, 4, true);
    await server.shutdown(0);
    server = await startShard(port);
    // A fresh shard: NOT_FOUND for the table, declared again, then served from the initializer.
    expect(await rows.rows('user', ids, 4, true)).toEqual(new EmbeddingTable({ ...TABLE, ...JOB }).pull(ids));
    await expect(rows.rows('other', ids, 4, true)).rejects.toThrow(
      /NOT_FOUND|has no embedding table 'other'/,
    );
  });
});
