import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { EmbeddingClient, ShardRpcError } from '@edl/proto';
import { EmbeddingTable, shardOfId } from '@edl/ps';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EDL_BIN } from './helpers/run-edl.js';

// Two real `edl ps` shard processes (the built dist) against an in-process EmbeddingTable with the
// same seed: the shards together must hold exactly the table one process would.
const TOKEN = 'ps-cli-test-token';
const NUM_SHARDS = 2;
const DIM = 8;
const TABLE = {
  name: 'user',
  dim: DIM,
  optimizer: { type: 'adagrad', learningRate: 0.5 },
  seed: 1234,
} as const;

interface Shard {
  readonly child: ChildProcessWithoutNullStreams;
  readonly address: string;
  stderr: string;
}

function startShard(shardIndex: number): Promise<Shard> {
  const child = spawn(
    process.execPath,
    [
      EDL_BIN,
      'ps',
      '--shard-index',
      String(shardIndex),
      '--num-shards',
      String(NUM_SHARDS),
      '--tables',
      JSON.stringify([TABLE]),
    ],
    { env: { ...process.env, EDL_JOB_TOKEN: TOKEN }, stdio: 'pipe' },
  );
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.once('exit', (code) =>
      reject(new Error(`edl ps shard ${shardIndex} exited with ${code}: ${stderr}`)),
    );
    createInterface({ input: child.stdout }).once('line', (line) => {
      const ready = JSON.parse(line) as { event: string; address: string; shardIndex: number };
      expect(ready).toMatchObject({ event: 'listening', shardIndex, numShards: NUM_SHARDS });
      resolve({ child, address: ready.address, stderr });
    });
  });
}

let shards: Shard[] = [];
let client: EmbeddingClient;

beforeAll(async () => {
  if (!existsSync(EDL_BIN)) throw new Error(`${EDL_BIN} is missing: run 'pnpm build' first`);
  shards = await Promise.all([startShard(0), startShard(1)]);
  client = new EmbeddingClient({ addresses: shards.map((s) => s.address), token: TOKEN, shardOfId });
}, 60_000);

afterAll(async () => {
  client?.close();
  await Promise.all(
    shards.map(
      (s) =>
        new Promise<void>((resolve) => {
          if (s.child.exitCode !== null) resolve();
          else {
            s.child.once('exit', () => resolve());
            s.child.kill('SIGTERM');
          }
        }),
    ),
  );
});

/** Ids spread over both shards, with a duplicate and a large id. */
const ids = new Float64Array([3, 17, 42, 99, 1_000_003, 17, 2 ** 40 + 5, 7, 8, 12_345]);

describe('edl ps: two shard processes and an EmbeddingClient', () => {
  it('pulls, pushes and pulls again exactly as an in-process table with the same seed', async () => {
    const owners = new Set(Array.from(ids, (id) => shardOfId(id, NUM_SHARDS)));
    expect(owners.size).toBe(NUM_SHARDS); // the ids really span both processes

    const reference = new EmbeddingTable(TABLE);
    const pulled = await client.pull(TABLE.name, ids);
    expect(pulled).toEqual(reference.pull(ids));
    // A duplicate id reads the same row twice.
    expect(pulled.subarray(5 * DIM, 6 * DIM)).toEqual(pulled.subarray(1 * DIM, 2 * DIM));

    const gradients = Float32Array.from({ length: ids.length * DIM }, (_, i) => Math.sin(i + 1) * 0.3);
    const answers = await client.push(TABLE.name, ids, gradients, { modelVersion: 5, workerId: 'w0' });
    expect(answers.map((a) => a.shard).sort()).toEqual([0, 1]);
    reference.push(ids, gradients);

    const again = await client.pull(TABLE.name, ids);
    expect(again).toEqual(reference.pull(ids));
    expect(again).not.toEqual(pulled);

    const described = await client.describe();
    const rowsPerShard = described.map((d) => d.tables[0]?.rows);
    const uniquePerShard = [0, 1].map(
      (s) => new Set(Array.from(ids).filter((id) => shardOfId(id, NUM_SHARDS) === s)).size,
    );
    expect(rowsPerShard).toEqual(uniquePerShard);
    expect(described.map((d) => d.tables[0]?.maxModelVersion)).toEqual([5, 5]);
    expect(described.map((d) => d.tables[0]?.optimizer)).toEqual(['adagrad', 'adagrad']);
  });

  it('reads unknown ids without creating them when create is false', async () => {
    const fresh = new Float64Array([500_001, 500_002, 500_003, 500_004]);
    const before = (await client.describe()).map((d) => d.tables[0]?.rows);
    const rows = await client.pull(TABLE.name, fresh, { create: false });
    expect(rows).toEqual(new EmbeddingTable(TABLE).lookup(fresh));
    expect((await client.describe()).map((d) => d.tables[0]?.rows)).toEqual(before);
  });

  it('refuses a call with the wrong job token', async () => {
    const intruder = new EmbeddingClient({
      addresses: shards.map((s) => s.address),
      token: 'not-the-token',
      shardOfId,
    });
    try {
      await expect(intruder.pull(TABLE.name, ids)).rejects.toMatchObject({
        name: 'ShardRpcError',
        code: 'UNAUTHENTICATED',
      });
    } finally {
      intruder.close();
    }
  });

  it('refuses ids of another shard, naming the id and the shard that holds it', async () => {
    // The shards in the wrong order: every id goes to the shard that does not hold it.
    const swapped = new EmbeddingClient({
      addresses: [shards[1]?.address as string, shards[0]?.address as string],
      token: TOKEN,
      shardOfId,
    });
    try {
      const id = ids.find((x) => shardOfId(x, NUM_SHARDS) === 0) as number;
      const error = await swapped.pull(TABLE.name, new Float64Array([id])).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ShardRpcError);
      expect((error as ShardRpcError).code).toBe('FAILED_PRECONDITION');
      expect((error as Error).message).toContain(
        `WRONG_SHARD: Id ${id} (index 0) of embedding table 'user' belongs to parameter-server shard 0 of 2, not to this shard 1`,
      );
      const rowsBefore = (await client.describe()).map((d) => d.tables[0]?.rows);
      await expect(
        swapped.push(TABLE.name, new Float64Array([id]), new Float32Array(DIM).fill(1), {
          modelVersion: 6,
          workerId: 'w1',
        }),
      ).rejects.toMatchObject({ code: 'FAILED_PRECONDITION' });
      expect((await client.describe()).map((d) => d.tables[0]?.rows)).toEqual(rowsBefore);
      await expect(swapped.describe()).rejects.toMatchObject({ code: 'BAD_RESPONSE' });
    } finally {
      swapped.close();
    }
  });
});
