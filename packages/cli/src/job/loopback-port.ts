import { type AddressInfo, createServer } from 'node:net';

/** A port of 127.0.0.1 that is free now (the kernel's pick), for a server that listens shortly. */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** Whether `error` (or an error it wraps) says that the address was taken. */
export function isAddressInUse(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE' || e.message.includes('EADDRINUSE')) return true;
  }
  return false;
}

/** Options of {@link withFreeLoopbackPort}. */
export interface FreePortOptions {
  /** Ports tried in all. Default 3. */
  readonly tries?: number;
  /** Where ports come from. Default {@link freeLoopbackPort}. */
  readonly choosePort?: () => Promise<number>;
}

/**
 * Runs `attempt` with a port that was free a moment ago. A port chosen before its server binds
 * can be taken in between by any process on the machine (another job's listener, an outgoing
 * connection's ephemeral port): when `attempt` fails because the address is in use, it runs
 * again with another port. Any other failure, or the last try's, is thrown as it is.
 */
export async function withFreeLoopbackPort<T>(
  attempt: (port: number) => Promise<T>,
  options: FreePortOptions = {},
): Promise<T> {
  const tries = options.tries ?? 3;
  const choosePort = options.choosePort ?? freeLoopbackPort;
  for (let n = 1; ; n++) {
    const port = await choosePort();
    try {
      return await attempt(port);
    } catch (error) {
      if (n >= tries || !isAddressInUse(error)) throw error;
    }
  }
}
