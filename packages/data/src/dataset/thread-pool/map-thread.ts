// The program of one `mapParallel` thread, loaded by path (compiled by tsc to dist/). It imports the
// user's module once, calls the export for each job, and transfers the ArrayBuffers of each result
// back.
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { notAFunctionMessage, type ThreadData, type ThreadJob, type ThreadReply } from './messages.js';
import { packForTransfer } from './transferables.js';

type MapFn = (value: unknown, args: unknown, context: { readonly index: number }) => unknown;

const data = workerData as ThreadData;
const port = parentPort;
if (port === null) throw new Error('map-thread.js runs as a worker thread of mapParallel');

const loaded = import(data.moduleUrl).then((m: Record<string, unknown>) => {
  const fn = m[data.exportName];
  if (typeof fn !== 'function') throw new TypeError(notAFunctionMessage(data, m));
  return fn as MapFn;
});
// The failure is reported per job, below; keep Node from reporting it as unhandled first.
loaded.catch(() => undefined);

port.on('message', async (job: ThreadJob) => {
  try {
    const fn = await loaded;
    const start = performance.now();
    const transfer = new Set<ArrayBuffer>();
    const value = packForTransfer(await fn(job.value, data.args, { index: job.index }), true, transfer);
    const workMs = performance.now() - start;
    // Inside the try: a result that cannot be cloned is a failure of this element, not of the thread.
    port.postMessage({ id: job.id, ok: true, value, workMs } satisfies ThreadReply, [...transfer]);
  } catch (error) {
    const e = error instanceof Error ? error : new Error(String(error));
    const reply: ThreadReply = {
      id: job.id,
      ok: false,
      error: { name: e.name, message: e.message, stack: e.stack },
    };
    port.postMessage(reply);
  }
});
