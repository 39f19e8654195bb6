/** Real parameter-server shards over gRPC for the shard checkpoint tests, stopped after each test. */
import { EmbeddingClient } from '@edl/proto';
import { type ParameterServer, shardOfId, startParameterServer } from '../src/index.js';

export const TOKEN = 'ckpt-token';
export const JOB = { optimizer: { type: 'adam', learningRate: 0.05 }, seed: 5 } as const;
export const TABLE = { name: 'user', dim: 4 } as const;

const running: { servers: ParameterServer[]; client: EmbeddingClient }[] = [];

/** `n` shards of a job, with {@link TABLE} declared; a client that reaches them all. */
export async function startShards(
  n: number,
): Promise<{ servers: ParameterServer[]; client: EmbeddingClient }> {
  const servers = await Promise.all(
    Array.from({ length: n }, (_, shardIndex) =>
      startParameterServer({ token: TOKEN, shardIndex, numShards: n, job: JOB }),
    ),
  );
  const client = new EmbeddingClient({ addresses: servers.map((s) => s.address), token: TOKEN, shardOfId });
  await client.declareTables([TABLE], 'worker-0');
  running.push({ servers, client });
  return { servers, client };
}

/** Stops every shard {@link startShards} started (an afterEach). */
export async function stopAll(): Promise<void> {
  for (const { servers, client } of running.splice(0)) {
    client.close();
    await Promise.all(servers.map((s) => s.shutdown(0)));
  }
}
