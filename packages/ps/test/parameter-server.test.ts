import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import {
  bytesToFloats,
  bytesToIds,
  EmbeddingClient,
  encodePullEmbeddingsRequest,
  encodePullEmbeddingsResponse,
  encodePushEmbeddingGradientsRequest,
  floatsToBytes,
  idsToBytes,
  PullEmbeddingsRequestSchema,
  PullEmbeddingsResponseSchema,
  PushEmbeddingGradientsRequestSchema,
  parameterServerServiceDefinition,
} from '@edl/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddingTable, type ParameterServer, shardOfId, startParameterServer } from '../src/index.js';

const TOKEN = 'shard-token';
const SPEC = { name: 'item', dim: 16, optimizer: { type: 'sgd', learningRate: 0.1 }, seed: 9 } as const;

describe('ParameterServerService codec', () => {
  it('reads ids and floats from unaligned bytes by copying, and refuses a ragged length', () => {
    const ids = new Float64Array([5, 2 ** 52 + 1, 0]);
    const framed = new Uint8Array(1 + ids.byteLength);
    framed.set(idsToBytes(ids), 1);
    expect(bytesToIds(framed.subarray(1), 'the ids')).toEqual(ids);
    const floats = new Float32Array([0.5, -3, 1e-7]);
    const framedFloats = new Uint8Array(2 + floats.byteLength);
    framedFloats.set(floatsToBytes(floats), 2);
    expect(bytesToFloats(framedFloats.subarray(2), 'the rows')).toEqual(floats);
    expect(() => bytesToIds(new Uint8Array(12), 'the ids pulled')).toThrow(
      'Expected a multiple of 8 bytes for the ids pulled but received 12 bytes',
    );
  });

  it('encodes the hot messages to the generated toBinary bytes', () => {
    const ids = new Float64Array([1, 2 ** 53 - 1, 77]);
    const rows = Float32Array.from({ length: 3 * 16 }, (_, i) => i / 7);
    const pullRequest = create(PullEmbeddingsRequestSchema, {
      table: 'item',
      ids: idsToBytes(ids),
      create: true,
    });
    expect(new Uint8Array(encodePullEmbeddingsRequest(pullRequest))).toEqual(
      toBinary(PullEmbeddingsRequestSchema, pullRequest),
    );
    const pullResponse = create(PullEmbeddingsResponseSchema, { dim: 16, rows: floatsToBytes(rows) });
    expect(new Uint8Array(encodePullEmbeddingsResponse(pullResponse))).toEqual(
      toBinary(PullEmbeddingsResponseSchema, pullResponse),
    );
    const push = create(PushEmbeddingGradientsRequestSchema, {
      table: 'item',
      ids: idsToBytes(ids),
      gradients: floatsToBytes(rows),
      modelVersion: 123_456_789_012n,
      workerId: 'worker-3',
    });
    expect(new Uint8Array(encodePushEmbeddingGradientsRequest(push))).toEqual(
      toBinary(PushEmbeddingGradientsRequestSchema, push),
    );
    const decoded = fromBinary(
      PushEmbeddingGradientsRequestSchema,
      encodePushEmbeddingGradientsRequest(push),
    );
    expect(decoded.modelVersion).toBe(123_456_789_012n);
    expect(decoded.workerId).toBe('worker-3');
  });
});

describe('startParameterServer (one shard in this process)', () => {
  let server: ParameterServer;
  let client: EmbeddingClient;
  const sent: Record<string, number[]> = { pullRequest: [], pullResponse: [] };
  const pull = parameterServerServiceDefinition.pullEmbeddings;
  const original = { requestSerialize: pull.requestSerialize, responseSerialize: pull.responseSerialize };

  beforeAll(async () => {
    // Count the bytes each pull puts on the wire, through the very encoders the server and client use.
    pull.requestSerialize = (m) => {
      const bytes = encodePullEmbeddingsRequest(m);
      sent.pullRequest?.push(bytes.length);
      return bytes;
    };
    pull.responseSerialize = (m) => {
      const bytes = encodePullEmbeddingsResponse(m);
      sent.pullResponse?.push(bytes.length);
      return bytes;
    };
    server = await startParameterServer({ token: TOKEN, shardIndex: 0, numShards: 1, tables: [SPEC] });
    client = new EmbeddingClient({ addresses: [server.address], token: TOKEN, shardOfId });
  });
  afterAll(async () => {
    Object.assign(pull, original);
    client?.close();
    await server?.shutdown(1000);
  });

  it('moves about ids x dim x 4 bytes per pull, plus a few bytes of framing', async () => {
    const n = 1000;
    const ids = Float64Array.from({ length: n }, (_, i) => i * 7919);
    const rows = await client.pull(SPEC.name, ids);
    expect(rows).toEqual(new EmbeddingTable(SPEC).pull(ids));
    expect(sent.pullResponse).toHaveLength(1);
    const down = sent.pullResponse?.[0] as number;
    expect(down).toBeGreaterThanOrEqual(n * SPEC.dim * 4);
    expect(down - n * SPEC.dim * 4).toBeLessThanOrEqual(8); // dim field, tag, length
    const up = sent.pullRequest?.[0] as number;
    expect(up - n * 8).toBeLessThanOrEqual(16); // table name, tags, lengths, create flag
    expect(server.shard.describe()[0]).toMatchObject({ name: 'item', rows: n, dim: 16, optimizer: 'sgd' });
  });

  it('answers an unknown table with NOT_FOUND and gradients of the wrong width with INVALID_ARGUMENT', async () => {
    await expect(client.pull('nope', new Float64Array([1]))).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: expect.stringContaining("has no embedding table 'nope' (it has 'item')"),
    });
    // 34 values for 2 ids is 17 per id to the client, which the shard's 16-float table refuses.
    await expect(
      client.push(SPEC.name, new Float64Array([1, 2]), new Float32Array(34), {
        modelVersion: 1,
        workerId: 'w',
      }),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining(
        "Expected 2 x 16 = 32 gradient values for the 2 ids pushed to embedding table 'item'",
      ),
    });
    await expect(
      client.push(SPEC.name, new Float64Array([1, 2]), new Float32Array(33), {
        modelVersion: 1,
        workerId: 'w',
      }),
    ).rejects.toThrow(/whole number of gradient values per id/);
    await expect(
      client.push(SPEC.name, new Float64Array([1.5]), new Float32Array(16), {
        modelVersion: 1,
        workerId: 'w',
      }),
    ).rejects.toThrow(/Expected an integer in \[0, 9007199254740991\] for id but received 1\.5/);
  });
});

describe("a worker's last step on two shards (DescribeShard last_push)", () => {
  const JOB = { optimizer: { type: 'sgd' as const, learningRate: 0.5 }, seed: 4 };
  const idsOn = (shard: number) =>
    Float64Array.from(
      Array.from({ length: 40 }, (_, i) => i).filter((id) => shardOfId(id, 2) === shard),
    ).subarray(0, 3);

  it('counts each step push towards its worker, pushes empty to shards holding none of the ids, and says when a shard cannot be asked', async () => {
    const servers = [
      await startParameterServer({ token: TOKEN, shardIndex: 0, numShards: 2, job: JOB }),
      await startParameterServer({ token: TOKEN, shardIndex: 1, numShards: 2, job: JOB }),
    ];
    const client = new EmbeddingClient({ addresses: servers.map((s) => s.address), token: TOKEN, shardOfId });
    await client.declareTables(
      [
        { name: 'a', dim: 2 },
        { name: 'b', dim: 2 },
      ],
      'w-1',
    );
    const onlyShard0 = idsOn(0);
    const grads = new Float32Array(onlyShard0.length * 2).fill(1);
    expect(await client.lastPushes('w-1')).toEqual([undefined, undefined]);

    // A step of two tables whose ids all live on shard 0: shard 1 gets two empty pushes.
    const step = { workerId: 'w-1', modelVersion: 5, stepPushes: 2 };
    const answers = await client.push('a', onlyShard0, grads, step);
    expect(answers.map((a) => a.shard)).toEqual([0, 1]);
    await client.push('b', onlyShard0, grads, step);
    const whole = { modelVersion: 5, due: 2, applied: 2 };
    expect(await client.lastPushes('w-1')).toEqual([whole, whole]);
    // The empty pushes carried no rows: shard 1's tables count no push and hold no row.
    const [, shard1] = await client.describe();
    expect(shard1?.tables.map((t) => [t.name, t.pushes, t.rows])).toEqual([
      ['a', 0, 0],
      ['b', 0, 0],
    ]);

    // Half of the next step arrived; another worker's pushes and uncounted ones change nothing.
    await client.push('a', onlyShard0, grads, { ...step, modelVersion: 6 });
    await client.push('a', onlyShard0, grads, { workerId: 'w-2', modelVersion: 6, stepPushes: 1 });
    await client.push('a', onlyShard0, grads, { workerId: 'w-1', modelVersion: 9 });
    const half = { modelVersion: 6, due: 2, applied: 1 };
    expect(await client.lastPushes('w-1')).toEqual([half, half]);
    expect(await client.lastPushes('w-2')).toEqual([
      { modelVersion: 6, due: 1, applied: 1 },
      { modelVersion: 6, due: 1, applied: 1 },
    ]);

    // The rest of it, then a step at the same version: a push after a whole step begins the next.
    await client.push('b', onlyShard0, grads, { ...step, modelVersion: 6 });
    await client.push('a', onlyShard0, grads, { ...step, modelVersion: 6 });
    expect(await client.lastPushes('w-1')).toEqual([half, half]);

    await servers[1]?.shutdown(0);
    const [first, second] = await client.lastPushes('w-1');
    expect(first).toEqual(half);
    expect(second).toBeInstanceOf(Error);
    expect((second as Error).message).toMatch(
      /describeShard to parameter-server shard 1 \(127\.0\.0\.1:\d+\) failed/,
    );
    client.close();
    await servers[0]?.shutdown(0);
  });

  it('encodes step_pushes as the generated toBinary does', () => {
    const push = create(PushEmbeddingGradientsRequestSchema, {
      table: 'a',
      ids: idsToBytes(new Float64Array([3])),
      gradients: floatsToBytes(new Float32Array([1, 2])),
      modelVersion: 7n,
      workerId: 'w-1',
      stepPushes: 3,
    });
    const bytes = encodePushEmbeddingGradientsRequest(push);
    expect(new Uint8Array(bytes)).toEqual(toBinary(PushEmbeddingGradientsRequestSchema, push));
    expect(fromBinary(PushEmbeddingGradientsRequestSchema, bytes).stepPushes).toBe(3);
  });
});
