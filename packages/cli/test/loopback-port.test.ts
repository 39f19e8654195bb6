import { type AddressInfo, createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freeLoopbackPort, isAddressInUse, withFreeLoopbackPort } from '../src/job/loopback-port.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/** Listens on 127.0.0.1:`port` (0: any); resolves the port, rejects as listen() does. */
function listen(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      servers.push(server);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

describe('withFreeLoopbackPort', () => {
  it('starts again on another port when the one chosen was taken before the bind', async () => {
    const taken = await listen(0);
    const ports = [taken, await freeLoopbackPort()];
    const tried: number[] = [];
    const bound = await withFreeLoopbackPort(
      async (port) => {
        tried.push(port);
        return listen(port);
      },
      { choosePort: async () => ports.shift() as number },
    );
    expect(tried).toEqual([taken, bound]);
    expect(bound).not.toBe(taken);
  });

  it('gives up after its tries, with the last conflict', async () => {
    const taken = await listen(0);
    let calls = 0;
    await expect(
      withFreeLoopbackPort(
        async (port) => {
          calls++;
          return listen(port);
        },
        { tries: 2, choosePort: async () => taken },
      ),
    ).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(calls).toBe(2);
  });

  it('throws any other failure at once', async () => {
    let calls = 0;
    await expect(
      withFreeLoopbackPort(async () => {
        calls++;
        throw new Error('the model definition has no datasetFn');
      }),
    ).rejects.toThrow('no datasetFn');
    expect(calls).toBe(1);
  });

  it("recognizes grpc-js's bind failure on a taken port", async () => {
    const taken = await listen(0);
    // grpc-js as @edl/master has it, through @edl/proto (the CLI does not depend on it directly).
    const grpc = await import('@edl/proto/grpc');
    const server = new grpc.Server();
    const error = await new Promise<Error | null>((resolve) =>
      server.bindAsync(`127.0.0.1:${taken}`, grpc.ServerCredentials.createInsecure(), (e) => resolve(e)),
    );
    server.forceShutdown();
    expect(error).toBeInstanceOf(Error);
    expect(isAddressInUse(error)).toBe(true);
    expect(isAddressInUse(new Error('ENOENT: no such file'))).toBe(false);
    expect(
      isAddressInUse(new Error('wrapped', { cause: Object.assign(new Error('x'), { code: 'EADDRINUSE' }) })),
    ).toBe(true);
  });
});
