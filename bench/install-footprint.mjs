#!/usr/bin/env node
/**
 * What a new user gets from `npm install @edl/cli`: install size, package count (those bundled
 * inside a tarball, TensorFlow.js in @edl/worker's, included), packages with install scripts,
 * start-up time of `edl --help`, `edl train --help` and `edl recordio --help`, and the time from
 * `edl train` to its first training step (the zoo's MNIST CNN, 1 worker, on 2,000 of the demo's
 * digits). Packs every package (`pnpm run pack:all`, or --packages DIR of its tarballs), installs
 * @edl/cli into an empty project with npm (third-party packages from the configured registry; our
 * own from the tarballs), measures (with what each third-party dependency brings), then adds the
 * optional extras (webgpu, @tensorflow/tfjs-backend-webgpu, @kubernetes/client-node, pg), measures
 * the size again and checks that the webgpu backend registers in @edl/worker's own tfjs-core, and
 * what a postgres:// origin says without pg and with it. Goals (issue 27): <= 40 MB and <= 60
 * packages without extras, `edl --help` <= 0.2 s of CPU, no install script of ours; `edl train
 * --help` <= 1 s (issue 17). Baseline in the same run: `node -e 0`.
 *
 *   node bench/install-footprint.mjs [--packages DIR] [--runs N] [--keep]
 *
 * Needs `pnpm run build` first (pack:all packs dist/ and build/Release).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { machineLine } from './lib/machine.mjs';

const { values: args } = parseArgs({
  options: {
    packages: { type: 'string' },
    runs: { type: 'string', default: '5' },
    keep: { type: 'boolean', default: false },
  },
});
const repoRoot = fileURLToPath(new URL('../', import.meta.url));
const scratch = mkdtempSync(join(os.tmpdir(), 'edl-footprint-'));
const runs = Number(args.runs);

console.log(
  `machine: ${machineLine()}; load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
console.log(`npm ${execFileSync('npm', ['--version'], { encoding: 'utf8' }).trim()}`);

let packDir = args.packages;
if (packDir === undefined) {
  packDir = join(scratch, 'packages');
  execFileSync(process.execPath, [join(repoRoot, 'scripts/pack-all.mjs'), '--out', packDir], {
    stdio: 'ignore',
  });
}
const tarballs = readdirSync(packDir).filter((f) => f.endsWith('.tgz'));
const nameOf = (file) =>
  JSON.parse(
    execFileSync('tar', ['-xzOf', join(packDir, file), 'package/package.json'], { encoding: 'utf8' }),
  ).name;
const ours = Object.fromEntries(tarballs.map((f) => [nameOf(f), `file:${join(packDir, f)}`]));
if (ours['@edl/cli'] === undefined) throw new Error(`no @edl/cli tarball in ${packDir}`);

const app = join(scratch, 'app');
mkdirSync(app);
// overrides stand in for the registry: every @edl/* package comes from its tarball.
writeFileSync(
  join(app, 'package.json'),
  JSON.stringify({ private: true, dependencies: { '@edl/cli': ours['@edl/cli'] }, overrides: ours }, null, 2),
);
const npm = (npmArgs) =>
  execFileSync('npm', [...npmArgs, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: app,
    stdio: 'pipe',
  });

function footprint() {
  const lock = JSON.parse(readFileSync(join(app, 'node_modules', '.package-lock.json'), 'utf8')).packages;
  const entries = Object.entries(lock).filter(([path]) => path.startsWith('node_modules/'));
  // A bundled package lies inside its parent's directory: count its bytes there only.
  const sizes = entries
    .filter(([, e]) => !e.inBundle)
    .map(([path]) => [path.replace(/^.*node_modules\//, ''), bytesIn(join(app, path))]);
  return {
    bytes: bytesIn(join(app, 'node_modules')),
    packages: entries.length,
    bundled: entries.filter(([, e]) => e.inBundle).length,
    installScripts: entries
      .filter(([, e]) => e.hasInstallScript)
      .map(([p]) => p.replace(/^.*node_modules\//, '')),
    largest: sizes.sort((a, b) => b[1] - a[1]).slice(0, 8),
  };
}

/**
 * What each third-party runtime dependency of our packages brings: the packages it pulls in (itself
 * included, each counted once however many paths lead to it) and their bytes, and the same for each
 * of its own dependencies, so that a heavy grandchild (e.g. @grpc/proto-loader under @grpc/grpc-js)
 * shows. Packages bundled in a tarball are left out (their bytes are in their parent's).
 */
function dependencyBreakdown() {
  const lock = JSON.parse(readFileSync(join(app, 'node_modules', '.package-lock.json'), 'utf8')).packages;
  // Node's lookup: from the package's directory up through every node_modules above it.
  const resolve = (fromPath, name) => {
    for (let at = fromPath; ; at = at.slice(0, Math.max(0, at.lastIndexOf('/node_modules/')))) {
      const candidate = `${at === '' ? '' : `${at}/`}node_modules/${name}`;
      if (lock[candidate] !== undefined) return candidate;
      if (at === '') return undefined;
    }
  };
  const childrenOf = (path) =>
    Object.keys({ ...lock[path].dependencies, ...lock[path].optionalDependencies })
      .map((name) => resolve(path, name))
      .filter((child) => child !== undefined && !lock[child].inBundle);
  const closure = (path) => {
    const seen = new Set([path]);
    for (const p of seen) for (const child of childrenOf(p)) seen.add(child);
    return seen;
  };
  const ownBytes = (path) => bytesIn(join(app, path), ['node_modules']);
  const nameOf = (path) => path.replace(/^.*node_modules\//, '');
  const describe = (path) => {
    const all = closure(path);
    return `${nameOf(path)}: ${all.size} packages, ${mb([...all].reduce((sum, p) => sum + ownBytes(p), 0))}`;
  };
  const direct = new Set();
  for (const path of Object.keys(lock).filter((p) => /node_modules\/@edl\/[^/]+$/.test(p))) {
    for (const child of childrenOf(path)) if (!nameOf(child).startsWith('@edl/')) direct.add(child);
  }
  return [...direct].sort().map((path) => ({
    line: describe(path),
    children: childrenOf(path).map(describe),
  }));
}

/** Apparent size of every file under dir (what `du -sb` counts), nested packages included. */
function bytesIn(dir, skip = []) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += skip.includes(entry.name) ? 0 : bytesIn(path, skip);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
function report(label, f) {
  console.log(
    `\n${label}: ${mb(f.bytes)} in ${f.packages} packages (${f.bundled} of them bundled in a tarball)`,
  );
  console.log(`  largest: ${f.largest.map(([name, b]) => `${name} ${mb(b)}`).join(', ')}`);
  console.log(`  install scripts: ${f.installScripts.length === 0 ? 'none' : f.installScripts.join(', ')}`);
}

let t0 = performance.now();
npm(['install']);
const light = footprint();
report(`npm install @edl/cli (${((performance.now() - t0) / 1000).toFixed(0)} s)`, light);
console.log('  what each third-party runtime dependency brings (itself included):');
for (const { line, children } of dependencyBreakdown()) {
  console.log(`    ${line}`);
  for (const child of children) console.log(`      ${child}`);
}

// ---- start-up: median of `runs` runs, after one warm-up run each ----
// Wall time, and CPU time (user + sys, from /usr/bin/time when present): on a busy machine the CPU
// time is the steadier figure, and about what the wall time is on an idle one.
const edl = join(app, 'node_modules', '@edl', 'cli', 'dist', 'bin', 'edl.js');
const timeBin = ['/usr/bin/time'].find((p) => spawnSync(p, ['-f', '%U', 'true']).status === 0);
function median(argv) {
  const walls = [];
  const cpus = [];
  for (let i = 0; i <= runs; i++) {
    t0 = performance.now();
    const result =
      timeBin === undefined
        ? spawnSync(process.execPath, argv, { cwd: app, encoding: 'utf8' })
        : spawnSync(timeBin, ['-f', 'EDL_CPU %U %S', process.execPath, ...argv], {
            cwd: app,
            encoding: 'utf8',
          });
    const ms = performance.now() - t0;
    if (result.status !== 0) throw new Error(`node ${argv.join(' ')}: ${result.stderr}`);
    if (i === 0) continue;
    walls.push(ms);
    const cpu = /EDL_CPU ([\d.]+) ([\d.]+)/.exec(result.stderr ?? '');
    if (cpu) cpus.push((Number(cpu[1]) + Number(cpu[2])) * 1000);
  }
  const mid = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { wall: mid(walls), cpu: cpus.length > 0 ? mid(cpus) : undefined };
}
const fmt = ({ wall, cpu }) =>
  `wall ${wall.toFixed(0).padStart(5)} ms, cpu ${cpu === undefined ? '  n/a' : cpu.toFixed(0).padStart(5)} ms`;
const baseline = median(['-e', '0']);
console.log(`\nstart-up, median of ${runs} runs; load average ${os.loadavg()[0].toFixed(2)}`);
console.log(`  node -e 0              ${fmt(baseline)}  (baseline)`);
for (const [argv, goal] of [
  [['--help'], 200],
  [['train', '--help'], 1000],
  [['recordio', '--help'], undefined],
]) {
  const t = median([edl, ...argv]);
  const verdict =
    goal === undefined
      ? ''
      : `  goal <= ${goal} ms: wall ${t.wall <= goal ? 'met' : 'NOT met'}` +
        (t.cpu === undefined ? '' : `, cpu ${t.cpu <= goal ? 'met' : 'NOT met'}`);
  console.log(
    `  edl ${argv.join(' ').padEnd(18)} ${fmt(t)}  ${(t.wall / baseline.wall).toFixed(2)}x node${verdict}`,
  );
}
const k8s = spawnSync(process.execPath, [edl, 'k8s', '--help'], { cwd: app, encoding: 'utf8' });
console.log(`  edl k8s --help without the Kubernetes client: exit ${k8s.status}: ${k8s.stderr.trim()}`);
// pg is an optional peer of @edl/data: a table origin without it says what to install.
const tableReader = (cwd) =>
  spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const { createDataReader } = await import('@edl/data/readers');
await createDataReader('postgres://127.0.0.1:1/none', { table: 'census', maxRetries: 0 }).catch((e) => console.log(e.message));`,
    ],
    { cwd, encoding: 'utf8' },
  ).stdout.trim();
console.log(`  a postgres:// origin without pg: ${tableReader(app)}`);

// ---- time to the first training step ----
// From the start of `edl train` to the first worker line reporting a training step (the worker logs
// progress after a step, at most once a second, the first one at once).
execFileSync(
  process.execPath,
  [
    '--input-type=module',
    '-e',
    "const { writeMnistRecordIO } = await import('@edl/model-zoo'); await writeMnistRecordIO({ dir: 'digits', testRecords: 200, trainRecords: 2000, trainFiles: 1 });",
  ],
  { cwd: app },
);
function firstStep() {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(
      process.execPath,
      [
        edl,
        'train',
        '--model-def',
        'mnist',
        '--training-data',
        'digits/train',
        '--num-workers',
        '1',
        '--num-epochs',
        '1',
      ],
      { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let seen;
    let out = '';
    // The job's log lines and its report, whichever stream each goes to.
    const watch = (chunk) => {
      out += chunk;
      const stepped = out
        .split('\n')
        .some((line) => line.includes('"msg":"progress"') && line.includes('"mode":"training"'));
      if (seen === undefined && stepped) {
        seen = performance.now() - started;
        child.kill('SIGTERM');
      }
    };
    for (const stream of [child.stdout, child.stderr]) stream.setEncoding('utf8').on('data', watch);
    child.on('exit', (code) =>
      seen === undefined
        ? reject(new Error(`edl train exited ${code} before a step:\n${out.slice(-2000)}`))
        : resolve(seen),
    );
  });
}
const firstSteps = [];
for (let i = 0; i < Math.min(runs, 3); i++) firstSteps.push(await firstStep());
firstSteps.sort((a, b) => a - b);
console.log(
  `  edl train to its first step (MNIST CNN, 1 worker, median of ${firstSteps.length}): wall ${firstSteps[Math.floor(firstSteps.length / 2)].toFixed(0)} ms`,
);

console.log(
  `\ngoals without extras: <= 40 MB ${light.bytes <= 40e6 ? 'met' : 'NOT met'} (${mb(light.bytes)}), ` +
    `<= 60 packages ${light.packages <= 60 ? 'met' : 'NOT met'} (${light.packages}), ` +
    `install scripts of ours: ${light.installScripts.filter((p) => p.startsWith('@edl/')).join(', ') || 'none'}`,
);

// ---- the optional extras, as the messages of `edl k8s` and --backend webgpu say to add them ----
t0 = performance.now();
npm([
  'install',
  'webgpu@^0.6.2',
  '@tensorflow/tfjs-backend-webgpu@4.22.0',
  '@kubernetes/client-node@~1.4.0',
  'pg@^8.16.0',
]);
const full = footprint();
report(
  `+ webgpu, @tensorflow/tfjs-backend-webgpu, @kubernetes/client-node, pg (${((performance.now() - t0) / 1000).toFixed(0)} s)`,
  full,
);
console.log(`  a postgres:// origin with pg (nothing listens on port 1): ${tableReader(app)}`);
const r = spawnSync(process.execPath, [edl, 'k8s', '--help'], { cwd: app, encoding: 'utf8' });
console.log(`  edl k8s --help with the client: exit ${r.status}`);
// The extras' tfjs-backend-webgpu sits beside @edl/worker, whose tfjs-core is bundled inside it:
// the backend must register its kernels in that copy (a software adapter is enough to show it).
const webgpu = spawnSync(
  process.execPath,
  [
    '--input-type=module',
    '-e',
    `const w = await import('@edl/worker');
const r = await w.selectBackend({ backend: 'webgpu', allowSoftwareWebGpu: true }).catch((e) => ({ name: 'none', detail: e.message }));
const { createRequire } = await import('node:module');
const cores = Object.keys(createRequire(import.meta.url).cache).filter((f) => /tfjs-core[\\/]dist/.test(f));
console.log(JSON.stringify({ backend: r.name, detail: r.detail, registered: w.tf.findBackendFactory('webgpu') !== null, cores }));`,
  ],
  { cwd: app, encoding: 'utf8' },
);
console.log(`  --backend webgpu with the extras: ${webgpu.stdout.trim() || webgpu.stderr.trim()}`);
console.log(
  `  extras add ${mb(full.bytes - light.bytes)}; without them the install is ${((light.bytes / full.bytes) * 100).toFixed(0)}% of the full one`,
);

if (args.keep) console.log(`kept ${scratch}`);
else rmSync(scratch, { recursive: true, force: true });
