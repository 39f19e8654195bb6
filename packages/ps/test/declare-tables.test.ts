import { EmbeddingClient, ShardRpcError } from '@edl/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EmbeddingShard,
  EmbeddingTable,
  type ParameterServer,
  ParameterStoreError,
  shardOfId,
  startParameterServer,
} from '../src/index.js';

// Tables declared by workers (DeclareEmbeddingTables), as ElasticDL's workers report their
// embedding infos to the parameter servers: two real shards over gRPC, the optimizer and seed
// job-wide.
const TOKEN = 'declare-token';
const JOB = { optimizer: { type: 'adagrad', learningRate: 0.3 }, seed: 77 } as const;

describe('DeclareEmbeddingTables', () => {
  let servers: ParameterServer[] = [];
  let client: EmbeddingClient;
  const declared: string[] = [];

  beforeAll(async () => {
    servers = await Promise.all(
      [0, 1].map((shardIndex) =>
        startParameterServer({
          token: TOKEN,
          shardIndex,
          numShards: 2,
          job: JOB,
          onDeclared: (table, workerId) => declared.push(`${shardIndex}:${table}:${workerId}`),
        }),
      ),
    );
    client = new EmbeddingClient({ addresses: servers.map((s) => s.address), token: TOKEN, shardOfId });
  });

  afterAll(async () => {
    client?.close();
    await Promise.all(servers.map((s) => s.shutdown(0)));
  });

  it('creates the tables on every shard with the job optimizer and seed, once', async () => {
    const tables = [
      { name: 'user', dim: 4 },
      { name: 'item', dim: 3, initializer: { type: 'normal', stddev: 0.2 } },
    ] as const;
    await client.declareTables(tables, 'worker-0');
    await client.declareTables(tables, 'worker-1');
    expect(declared.sort()).toEqual([
      '0:item:worker-0',
      '0:user:worker-0',
      '1:item:worker-0',
      '1:user:worker-0',
    ]);
    const ids = Float64Array.from({ length: 40 }, (_, i) => i * 13 + 1);
    const reference = new EmbeddingTable({
      name: 'item',
      dim: 3,
      ...JOB,
      initializer: tables[1].initializer,
    });
    expect(await client.pull('item', ids)).toEqual(reference.pull(ids));
    const gradients = Float32Array.from({ length: ids.length * 3 }, (_, i) => Math.sin(i));
    await client.push('item', ids, gradients, { modelVersion: 1, workerId: 'worker-0' });
    reference.push(ids, gradients);
    // A second declaration keeps the rows and their optimizer state.
    await client.declareTables(tables, 'worker-2');
    expect(await client.pull('item', ids)).toEqual(reference.pull(ids));
    const described = await client.describe();
    for (const shard of described) {
      expect(shard.tables.map((t) => [t.name, t.dim, t.optimizer])).toEqual([
        ['user', 4, 'adagrad'],
        ['item', 3, 'adagrad'],
      ]);
    }
    expect(described.reduce((n, s) => n + (s.tables[1]?.rows ?? 0), 0)).toBe(ids.length);
  });

  it('refuses another dim or initializer for a known table, naming the table and both values', async () => {
    const refused = await client.declareTables([{ name: 'user', dim: 8 }], 'worker-3').catch((e) => e);
    expect(refused).toBeInstanceOf(ShardRpcError);
    expect((refused as ShardRpcError).code).toBe('FAILED_PRECONDITION');
    expect((refused as Error).message).toContain(
      "TABLE_CONFLICT: Embedding table 'user' was declared with dim 4 and now with dim 8",
    );
    await expect(
      client.declareTables([{ name: 'user', dim: 4, initializer: { type: 'uniform', scale: 0.5 } }], 'w'),
    ).rejects.toThrow(/'user' was declared with initializer \{"type":"uniform","scale":0.05\} and now with/);
    // The default initializer, given or left out, is the same declaration.
    await client.declareTables([{ name: 'user', dim: 4, initializer: { type: 'uniform' } }], 'w');
  });
});

describe('EmbeddingShard.declare', () => {
  it('checks every declaration before creating any table', () => {
    const shard = new EmbeddingShard(0, 1, [], JOB);
    expect(() =>
      shard.declare([
        { name: 'a', dim: 2 },
        { name: 'a', dim: 3 },
      ]),
    ).toThrow("Embedding table 'a' was declared with dim 2 and now with dim 3");
    expect(shard.describe()).toEqual([]);
    expect(shard.declare([{ name: 'a', dim: 2 }])).toEqual(['a']);
    expect(shard.declare([{ name: 'a', dim: 2 }])).toEqual([]);
  });

  it('refuses a declaration on a shard started without the job optimizer', () => {
    const shard = new EmbeddingShard(0, 1, []);
    const error = (() => {
      try {
        shard.declare([{ name: 'a', dim: 2 }]);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ParameterStoreError);
    expect((error as ParameterStoreError).code).toBe('NO_JOB_OPTIMIZER');
    expect(() => new EmbeddingShard(0, 1, [], { optimizer: { type: 'lion' } as never, seed: 1 })).toThrow(
      /lion/,
    );
  });
});
