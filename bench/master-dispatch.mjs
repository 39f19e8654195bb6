/**
 * Master dispatch throughput: get_task + report_task_result round trips per second over loopback
 * gRPC with 1, 16 and 256 concurrent simulated workers (in a separate client process), against a
 * no-op unary RPC (Ping) at the same concurrency in the same run; and in-process dispatch decisions
 * per second (TaskManager alone, and the Master with its locking-free exactly-once bookkeeping).
 *
 *   node bench/master-dispatch.mjs            (needs `pnpm build`, or at least proto + master dist)
 *   EDL_BENCH_SECONDS=3 EDL_BENCH_CONCURRENCY=1,16,256 node bench/master-dispatch.mjs
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Master, silentLogger, startMaster, TaskManager } from '../packages/master/dist/index.js';
import { MasterClient } from '../packages/proto/dist/index.js';
import { machineLine } from './lib/machine.mjs';

const self = fileURLToPath(import.meta.url);
const seconds = Number(process.env.EDL_BENCH_SECONDS ?? 3);
const concurrencies = (process.env.EDL_BENCH_CONCURRENCY ?? '1,16,256').split(',').map(Number);
const repeat = Number(process.env.EDL_BENCH_REPEAT ?? 2);

if (process.argv[2] === '--client') {
  await runClient(...process.argv.slice(3));
  process.exit(0);
}

/** Client process: `concurrency` simulated workers hammering the master for `seconds`. */
async function runClient(address, token, mode, concurrencyText, secondsText) {
  const concurrency = Number(concurrencyText);
  const duration = Number(secondsText) * 1000;
  const clients = [];
  const transport = mode === 'task-stream' ? 'stream' : 'unary';
  for (let i = 0; i < concurrency; i++) clients.push(new MasterClient(address, token, { transport }));
  await Promise.all(clients.map((c) => c.waitForReady(10_000)));
  let count = 0;
  let total = 0;
  let measuring = false;
  let stop = false;
  let exhausted = false;
  const loop = async (client, i) => {
    const workerId = `bench-${i}`;
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
      total++;
      if (measuring) count++;
    }
  };
  const loops = clients.map(loop);
  await new Promise((r) => setTimeout(r, 500)); // warm-up
  measuring = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, duration));
  measuring = false;
  const elapsed = (performance.now() - t0) / 1000;
  stop = true;
  await Promise.all(loops);
  for (const c of clients) c.close();
  process.stdout.write(`${JSON.stringify({ perSecond: count / elapsed, total, exhausted })}\n`);
}

/** Runs a client process; adds the master (this process) CPU microseconds per round trip. */
async function client(address, token, mode, concurrency) {
  const cpu0 = process.cpuUsage();
  const result = await clientProcess(address, token, mode, concurrency);
  const cpu = process.cpuUsage(cpu0);
  return { ...result, serverCpuUs: (cpu.user + cpu.system) / Math.max(1, result.total) };
}

/** Best of `repeat` runs (the machine is shared: the best run is the least disturbed). */
async function best(address, token, mode, concurrency) {
  let top;
  for (let i = 0; i < repeat; i++) {
    const r = await client(address, token, mode, concurrency);
    if (top === undefined || r.perSecond > top.perSecond) top = r;
  }
  return top;
}

function clientProcess(address, token, mode, concurrency) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [self, '--client', address, token, mode, String(concurrency), String(seconds)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.on('close', (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split('\n').at(-1)))
        : reject(new Error(`client exited ${code}`)),
    );
  });
}

/** A prediction job of one-record tasks: each round trip dispatches and completes one task. */
function dispatchOptions(tasks) {
  return {
    jobType: 'prediction',
    predictionShards: [{ name: 'bench', start: 0, count: tasks }],
    minibatchSize: 1,
    numMinibatchesPerTask: 1,
    logger: silentLogger,
  };
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

function inProcess() {
  const n = 1_000_000;
  let taskManagerRate = 0;
  let masterRate = 0;
  for (let round = 0; round < repeat; round++) {
    taskManagerRate = Math.max(taskManagerRate, timeDispatch(new TaskManager(dispatchOptions(n)), n));
    masterRate = Math.max(masterRate, timeDispatch(new Master(dispatchOptions(n)), n));
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

const fmt = (x) => Math.round(x).toLocaleString('en-US');
console.log(`master-dispatch: ${machineLine()}`);
console.log(
  `${seconds} s per measurement after 0.5 s warm-up, best of ${repeat}; clients in a separate process; loopback; load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);

const local = inProcess();
console.log('\nIn-process dispatch (get_task + report_task_result, 1,000,000 one-record tasks):');
console.log(`  TaskManager        ${fmt(local.taskManagerRate)} decisions/s`);
console.log(`  Master             ${fmt(local.masterRate)} decisions/s`);
console.log(`  baseline Map set+delete ${fmt(local.baselineRate)}/s`);

console.log('\nOver gRPC (round trips/s; a round trip is get_task then report_task_result):');
console.log(
  '| concurrent workers | 2 x Ping, unary no-op (baseline) | unary calls | ratio | TaskStream | ratio | master CPU per round trip: unary / TaskStream |',
);
console.log('|---|---|---|---|---|---|---|');
const rows = [];
for (const c of concurrencies) {
  const handle = await startMaster({
    ...dispatchOptions(Math.max(400_000, c * 2_000)),
    workerExitGraceMs: 0,
  });
  const ping = await best(handle.address, handle.token, 'ping', c);
  const unary = await best(handle.address, handle.token, 'task', c);
  const stream = await best(handle.address, handle.token, 'task-stream', c);
  await handle.stop();
  const row = {
    c,
    ping: ping.perSecond,
    unary: unary.perSecond,
    stream: stream.perSecond,
    streamCpu: stream.serverCpuUs,
  };
  const out = (r) => `${fmt(r.perSecond)}${r.exhausted ? ' (tasks ran out)' : ''}`;
  rows.push(row);
  console.log(
    `| ${c} | ${fmt(row.ping)} | ${out(unary)} | ${(row.unary / row.ping).toFixed(2)} | ${out(stream)} | ${(row.stream / row.ping).toFixed(2)} | ${unary.serverCpuUs.toFixed(0)} µs / ${stream.serverCpuUs.toFixed(0)} µs |`,
  );
}
const top = Math.max(...rows.map((r) => Math.max(r.unary, r.stream)));
const cpuBound = Math.min(...rows.map((r) => r.streamCpu));
console.log(
  `Master CPU per TaskStream round trip: ${cpuBound.toFixed(0)} µs at best -> one master core could serve about ${fmt(1e6 / cpuBound)} round trips/s given clients on other cores`,
);
console.log(`\nGoal >= 20,000 round trips/s: best ${fmt(top)} -> ${top >= 20_000 ? 'met' : 'NOT met'}`);
process.exit(0);
