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
import { fileURLToPath } from 'node:url';
import { Master, TaskManager, silentLogger, startMaster } from '../packages/master/dist/index.js';
import { MasterClient } from '../packages/proto/dist/index.js';
import { machineLine } from './lib/machine.mjs';

const self = fileURLToPath(import.meta.url);
const seconds = Number(process.env.EDL_BENCH_SECONDS ?? 3);
const concurrencies = (process.env.EDL_BENCH_CONCURRENCY ?? '1,16,256').split(',').map(Number);

if (process.argv[2] === '--client') {
  await runClient(...process.argv.slice(3));
  process.exit(0);
}

/** Client process: `concurrency` simulated workers hammering the master for `seconds`. */
async function runClient(address, token, mode, concurrencyText, secondsText) {
  const concurrency = Number(concurrencyText);
  const duration = Number(secondsText) * 1000;
  const clients = [];
  for (let i = 0; i < concurrency; i++) clients.push(new MasterClient(address, token));
  await Promise.all(clients.map((c) => c.waitForReady(10_000)));
  let count = 0;
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
  process.stdout.write(`${JSON.stringify({ perSecond: count / elapsed, exhausted })}\n`);
}

function client(address, token, mode, concurrency) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [self, '--client', address, token, mode, String(concurrency), String(seconds)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1))) : reject(new Error(`client exited ${code}`))));
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

function inProcess() {
  const n = 1_000_000;
  const tm = new TaskManager(dispatchOptions(n));
  let t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const task = tm.getTask('w');
    tm.reportTaskResult('w', task.id, 1, '');
  }
  const taskManagerRate = n / ((performance.now() - t0) / 1000);
  const master = new Master(dispatchOptions(n));
  t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const { task } = master.getTask('w');
    master.reportTaskResult('w', task.id, 1, '');
  }
  const masterRate = n / ((performance.now() - t0) / 1000);
  // Baseline: the cheapest possible "decision", shifting ids off an array and deleting from a Map.
  const ids = Array.from({ length: n }, (_, i) => i);
  const doing = new Map();
  t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const id = ids[i];
    doing.set(id, i);
    doing.delete(id);
  }
  const baselineRate = n / ((performance.now() - t0) / 1000);
  return { taskManagerRate, masterRate, baselineRate };
}

const fmt = (x) => Math.round(x).toLocaleString('en-US');
console.log(`master-dispatch: ${machineLine()}`);
console.log(`${seconds} s per measurement after 0.5 s warm-up; clients in a separate process; loopback`);

const local = inProcess();
console.log('\nIn-process dispatch (get_task + report_task_result, 1,000,000 one-record tasks):');
console.log(`  TaskManager        ${fmt(local.taskManagerRate)} decisions/s`);
console.log(`  Master             ${fmt(local.masterRate)} decisions/s`);
console.log(`  baseline Map set+delete ${fmt(local.baselineRate)}/s`);

console.log('\nOver gRPC (round trips/s; a round trip is 2 unary calls):');
console.log('| concurrent workers | get_task + report_task_result /s | 2 x Ping (no-op) /s | ratio |');
console.log('|---|---|---|---|');
const rows = [];
for (const c of concurrencies) {
  const handle = await startMaster({ ...dispatchOptions(Math.max(200_000, c * 2_000)), workerExitGraceMs: 0 });
  const ping = await client(handle.address, handle.token, 'ping', c);
  const dispatch = await client(handle.address, handle.token, 'task', c);
  await handle.stop();
  const row = { c, dispatch: dispatch.perSecond, ping: ping.perSecond, exhausted: dispatch.exhausted };
  rows.push(row);
  console.log(
    `| ${c} | ${fmt(row.dispatch)}${row.exhausted ? ' (tasks ran out)' : ''} | ${fmt(row.ping)} | ${(row.dispatch / row.ping).toFixed(2)} |`,
  );
}
const best = Math.max(...rows.map((r) => r.dispatch));
console.log(`\nGoal >= 20,000 round trips/s: best ${fmt(best)} -> ${best >= 20_000 ? 'met' : 'NOT met'}`);
process.exit(0);
