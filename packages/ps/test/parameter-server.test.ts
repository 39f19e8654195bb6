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
