/**
 * CPU seconds of this process split by thread, from /proc/self/task/<tid>/schedstat (nanoseconds
 * on CPU, finer than the clock ticks of /proc/.../stat). Import it before opening a reader or
 * anything else that starts threads (importing the workspace packages starts none): the threads
 * alive when it is evaluated, other than the main one, are V8's platform threads (its concurrent and parallel garbage collector, the optimizing compiler), which
 * Node.js starts before any user code and names like the main thread. Threads started later are
 * libuv's pool (named `libuv-worker`) and the native threads of addons (the RecordIO prefetcher's
 * decoding threads). Linux only: elsewhere every figure is 0.
 */
import { readdirSync, readFileSync } from 'node:fs';

const TASKS = '/proc/self/task';
const listTasks = () => {
  try {
    return readdirSync(TASKS);
  } catch {
    return [];
  }
};
const atStartup = new Set(listTasks());
const mainThread = String(process.pid);

/** CPU seconds so far of the main thread, V8's helper threads, libuv's pool and native threads. */
export function threadCpu() {
  const split = { main: 0, v8Helpers: 0, libuv: 0, native: 0 };
  for (const tid of listTasks()) {
    let comm;
    let ns;
    try {
      comm = readFileSync(`${TASKS}/${tid}/comm`, 'utf8').trim();
      ns = Number(readFileSync(`${TASKS}/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      continue; // the thread ended meanwhile
    }
    const kind =
      tid === mainThread
        ? 'main'
        : atStartup.has(tid)
          ? 'v8Helpers'
          : comm.startsWith('libuv')
            ? 'libuv'
            : 'native';
    split[kind] += ns / 1e9;
  }
  return split;
}

/** `after - before`, thread kind by thread kind. */
export function threadCpuSince(before) {
  const after = threadCpu();
  return Object.fromEntries(Object.entries(after).map(([kind, s]) => [kind, s - before[kind]]));
}
