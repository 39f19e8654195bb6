/**
 * Master dispatch throughput: get_task + report_task_result round trips per second over loopback
 * gRPC with 1, 16 and 256 concurrent simulated workers, and in-process dispatch decisions per second.
 *
 * The master runs in this process; the workers run in separate client processes (2 by default, the
 * workers split between them), so the master's CPU is measured alone and both cores are used. Each
 * simulated worker loops: getTask(workerId), then reportTaskResult(workerId, task.id, recordsDone)
 * of that one-record prediction task; nothing else (no compute, no heartbeat). One round trip = those
 * two calls. Measured for each worker count:
 *   - Ping: two no-op unary calls per round trip (baseline, same clients, same run);
 *   - unary: getTask + reportTaskResult as unary calls (each worker its own MasterClient);
 *   - stream: one MasterClient (one stream) per worker, as one worker per process would run
 *     (transport 'stream': a TaskStream before issue 16, the TaskBatchStream since, whose lone calls
 *     go at once);
 *   - batch: the workers of a client process share one MasterClient on a TaskBatchStream; the calls
 *     made in the same event-loop turn travel in one message.
 * The master's CPU time (user + system, this process) and the clients' are measured over the same
 * window as the count (the parent tells the clients when to start and stop counting).
 *
 *   node bench/master-dispatch.mjs            (needs `pnpm build`, or at least proto + master dist)
 *   EDL_BENCH_SECONDS=3 EDL_BENCH_CONCURRENCY=1,16,256 EDL_BENCH_REPEAT=2 EDL_BENCH_CLIENT_PROCESSES=2
 *   EDL_BENCH_BEFORE=/path/to/other/packages  (also measure another build, e.g. the previous commit's,
 *                                              alternating with this one in the same run)
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { machineLine } from './lib/machine.mjs';

const self = fileURLToPath(import.meta.url);
const here = path.resolve(path.dirname(self), '../packages');
const seconds = Number(process.env.EDL_BENCH_SECONDS ?? 3);
const concurrencies = (process.env.EDL_BENCH_CONCURRENCY ?? '1,16,256').split(',').map(Number);
const repeat = Number(process.env.EDL_BENCH_REPEAT ?? 2);
const clientProcesses = Number(process.env.EDL_BENCH_CLIENT_PROCESSES ?? 2);

const load = (packages) =>
  Promise.all([
    import(pathToFileURL(path.join(packages, 'master/dist/index.js')).href),
    import(pathToFileURL(path.join(packages, 'proto/dist/index.js')).href),
  ]);

const cpuMicros = (since) => {
  const c = process.cpuUsage(since);
  return c.user + c.system;
};

if (process.argv[2] === '--client') {
  await runClient(...process.argv.slice(3));
  process.exit(0);
}

/**
 * Client process: `workers` simulated workers (ids from `firstId`) looping until told to stop; counts
 * the round trips between the parent's `start` and `stop` lines on stdin.
 */
async function runClient(packages, address, token, mode, workersText, firstIdText) {
  const [, { MasterClient }] = await load(packages);
  const workers = Number(workersText);
  const firstId = Number(firstIdText);
  const transport = mode === 'stream' ? 'stream' : mode === 'batch' ? 'batch' : 'unary';
  const shared = mode === 'batch' ? new MasterClient(address, token, { transport }) : undefined;
  const clients = [];
  for (let i = 0; i < workers; i++) clients.push(shared ?? new MasterClient(address, token, { transport }));
  await Promise.all([...new Set(clients)].map((c) => c.waitForReady(10_000)));
  let count = 0;
  let stop = false;
  let exhausted = false;
  const loop = async (client, i) => {
    const workerId = `bench-${firstId + i}`;
    while (!stop) {
      if (mode === 'ping') {
        await client.ping();
        await client.ping();
      } else {
        const { task, jobFinished } = await client.getTask(workerId);
        if (jobFinished) {
          exhausted = true;
          return;
        }
        await client.reportTaskResult({ workerId, taskId: task.id, recordsDone: task.end - task.start });
      }
      count++;
    }
  };
  const loops = clients.map(loop);
  process.stdout.write('ready\n');
  const lines = createInterface({ input: process.stdin });
  let t0 = 0;
  let cpu0;
  for await (const line of lines) {
    if (line === 'start') {
      count = 0;
      cpu0 = process.cpuUsage();
      t0 = performance.now();
    } else if (line === 'stop') {
      const elapsed = (performance.now() - t0) / 1000;
      const result = { count, elapsed, cpuUs: cpuMicros(cpu0), exhausted };
      stop = true;
      await Promise.all(loops);
      for (const c of new Set(clients)) c.close();
      process.stdout.write(`${JSON.stringify(result)}\n`);
      return;
    }
  }
}

/** Starts the client processes, waits until they are all running, counts for `seconds`. */
async function measure(packages, address, token, mode, workers) {
  const procs = Math.max(1, Math.min(clientProcesses, workers));
  const children = [];
  for (let p = 0; p < procs; p++) {
    const share = Math.floor(workers / procs) + (p < workers % procs ? 1 : 0);
    const first = p * Math.ceil(workers / procs);
    const child = spawn(
      process.execPath,
      [self, '--client', packages, address, token, mode, String(share), String(first)],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    const lines = createInterface({ input: child.stdout });
    const next = () =>
      new Promise((resolve, reject) => {
        lines.once('line', resolve);
        child.once('exit', (code) => reject(new Error(`client exited ${code}`)));
      });
    children.push({ child, next, ready: next() });
  }
  await Promise.all(children.map((c) => c.ready));
  await new Promise((r) => setTimeout(r, 500)); // warm-up
  const cpu0 = process.cpuUsage();
  for (const c of children) c.child.stdin.write('start\n');
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const masterCpuUs = cpuMicros(cpu0);
  const results = children.map((c) => c.next());
  for (const c of children) c.child.stdin.write('stop\n');
  const parts = (await Promise.all(results)).map((line) => JSON.parse(line));
  for (const c of children) c.child.stdin.end();
  const count = parts.reduce((s, r) => s + r.count, 0);
  return {
    perSecond: parts.reduce((s, r) => s + r.count / r.elapsed, 0),
    masterUs: masterCpuUs / Math.max(1, count),
    clientUs: parts.reduce((s, r) => s + r.cpuUs, 0) / Math.max(1, count),
    exhausted: parts.some((r) => r.exhausted),
  };
}

/** A prediction job of one-record tasks: each round trip dispatches and completes one task. */
function dispatchOptions(tasks, silentLogger) {
  return {
    jobType: 'prediction',
    predictionShards: [{ name: 'bench', start: 0, count: tasks }],
    minibatchSize: 1,
    numMinibatchesPerTask: 1,
    logger: silentLogger,
  };
}

/** Best of `repeat` (the machine is shared: the best run is the least disturbed), fresh master each. */
async function best(build, mode, workers) {
  let top;
  for (let i = 0; i < repeat; i++) {
    const { startMaster, silentLogger } = build.master;
    const handle = await startMaster({ ...dispatchOptions(600_000, silentLogger), workerExitGraceMs: 0 });
    // Create the job's tasks now, outside the measured window, and give the first one back.
    const first = handle.master.getTask('warm-up');
    handle.master.reportTaskResult('warm-up', first.task.id, 1, '');
    const r = await measure(build.packages, handle.address, handle.token, mode, workers);
    await handle.stop();
    if (top === undefined || r.perSecond > top.perSecond) top = r;
  }
  return top;
}

/** Decisions per second of `getTask` + `reportTaskResult` on a started job (task creation excluded). */
function timeDispatch(dispatcher, n) {
  const first = dispatcher.getTask('w'); // creates the job's tasks
  dispatcher.reportTaskResult('w', (first.task ?? first).id, 1, '');
  const t0 = performance.now();
  for (let i = 1; i < n; i++) {
    const reply = dispatcher.getTask('w');
    dispatcher.reportTaskResult('w', (reply.task ?? reply).id, 1, '');
  }
  return (n - 1) / ((performance.now() - t0) / 1000);
}

function inProcess({ Master, TaskManager, silentLogger }) {
  const n = 1_000_000;
  let taskManagerRate = 0;
  let masterRate = 0;
  for (let round = 0; round < repeat; round++) {
    taskManagerRate = Math.max(
      taskManagerRate,
      timeDispatch(new TaskManager(dispatchOptions(n, silentLogger)), n),
    );
    masterRate = Math.max(masterRate, timeDispatch(new Master(dispatchOptions(n, silentLogger)), n));
  }
  // Baseline: the cheapest possible "decision", a Map set + delete per task id.
  const doing = new Map();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    doing.set(i, i);
    doing.delete(i);
  }
  const baselineRate = n / ((performance.now() - t0) / 1000);
  return { taskManagerRate, masterRate, baselineRate };
}

const builds = [{ name: 'this tree', packages: here }];
if (process.env.EDL_BENCH_BEFORE) builds.push({ name: 'before', packages: process.env.EDL_BENCH_BEFORE });
for (const b of builds) {
  [b.master, b.proto] = await load(b.packages);
  b.hasBatch = 'taskBatchStream' in b.proto.masterServiceDefinition;
}

const fmt = (x) => Math.round(x).toLocaleString('en-US');
const loadavg = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
console.log(`master-dispatch: ${machineLine()}`);
console.log(
  `${seconds} s per measurement after 0.5 s warm-up, best of ${repeat}; workers in ${clientProcesses} client processes, master alone in this one; loopback; load average ${loadavg()}`,
);

const local = inProcess(builds[0].master);
console.log('\nIn-process dispatch (get_task + report_task_result, 1,000,000 one-record tasks):');
console.log(`  TaskManager        ${fmt(local.taskManagerRate)} decisions/s`);
console.log(`  Master             ${fmt(local.masterRate)} decisions/s`);
console.log(`  baseline Map set+delete ${fmt(local.baselineRate)}/s`);

console.log(
  '\nOver gRPC: round trips/s (a round trip is get_task then report_task_result), ratio to the Ping baseline, and CPU µs per round trip (master / clients):',
);
console.log(
  '| build | workers | 2 x Ping, unary no-op (baseline) | unary | ratio | stream (one per worker) | ratio | batch (one per client process) | ratio |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
const cell = (r, ping) =>
  r === undefined
    ? '— | —'
    : `${fmt(r.perSecond)}${r.exhausted ? ' (tasks ran out)' : ''} (${r.masterUs.toFixed(0)} / ${r.clientUs.toFixed(0)} µs) | ${(r.perSecond / ping.perSecond).toFixed(2)}`;
let top = 0;
for (const c of concurrencies) {
  for (const build of builds) {
    const ping = await best(build, 'ping', c);
    const unary = await best(build, 'unary', c);
    const stream = await best(build, 'stream', c);
    const batch = build.hasBatch ? await best(build, 'batch', c) : undefined;
    if (build === builds[0]) top = Math.max(top, unary.perSecond, stream.perSecond, batch?.perSecond ?? 0);
    console.log(
      `| ${build.name} | ${c} | ${fmt(ping.perSecond)} (${ping.masterUs.toFixed(0)} / ${ping.clientUs.toFixed(0)} µs) | ${cell(unary, ping)} | ${cell(stream, ping)} | ${cell(batch, ping)} |`,
    );
  }
}
console.log(`load average at the end: ${loadavg()}`);
console.log(`\nGoal >= 20,000 round trips/s: best ${fmt(top)} -> ${top >= 20_000 ? 'met' : 'NOT met'}`);
process.exit(0);
