/**
 * The README's "Train on your own data", followed literally in an empty directory: its files
 * written as shown, its shell commands run as shown (`npx edl ...`), then the exported model
 * checked against `edl predict` to 1e-5 with plain TensorFlow.js. The directory gets the packages
 * as an npm install lays them out (node_modules/@edl/cli with its `edl` bin, TensorFlow.js hoisted),
 * linked to this checkout's builds. Needs `pnpm build`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const cliDir = path.join(repoRoot, 'packages', 'cli');
const workerRequire = createRequire(path.join(repoRoot, 'packages', 'worker', 'package.json'));

interface Step {
  readonly kind: 'file' | 'shell';
  readonly name?: string;
  readonly text: string;
}

/** The section's code blocks in order: files (named by the last `name.ext` before them) and shell. */
function walkthroughSteps(): Step[] {
  const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Train on your own data\n');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end);
  const steps: Step[] = [];
  const block = /```(\w+)\n([\s\S]*?)```/g;
  let last = 0;
  for (let match = block.exec(section); match !== null; match = block.exec(section)) {
    const [whole, lang, body] = match as unknown as [string, string, string];
    const prose = section.slice(last, match.index);
    last = match.index + whole.length;
    if (lang === 'sh') steps.push({ kind: 'shell', text: body });
    else {
      const names = [...prose.matchAll(/`([\w-]+\.(?:ts|mts|js|mjs))`/g)].map((m) => m[1] as string);
      steps.push({ kind: 'file', name: names.at(-1) as string, text: body });
    }
  }
  return steps;
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'edl-walkthrough-'));
  // What `npm install @edl/cli` leaves: the package, its bin, and its dependencies hoisted.
  const modules = path.join(dir, 'node_modules');
  mkdirSync(path.join(modules, '@edl'), { recursive: true });
  mkdirSync(path.join(modules, '@tensorflow'), { recursive: true });
  mkdirSync(path.join(modules, '.bin'), { recursive: true });
  symlinkSync(cliDir, path.join(modules, '@edl', 'cli'));
  // npm makes the bin executable when it installs it; tsc does not, so a shim runs it through node.
  writeFileSync(
    path.join(modules, '.bin', 'edl'),
    `#!/bin/sh\nexec "${process.execPath}" "${path.join(cliDir, 'dist', 'bin', 'edl.js')}" "$@"\n`,
    { mode: 0o755 },
  );
  for (const name of ['tfjs-core', 'tfjs-layers', 'tfjs-backend-cpu']) {
    const target = path.dirname(workerRequire.resolve(`@tensorflow/${name}/package.json`));
    symlinkSync(target, path.join(modules, '@tensorflow', name));
  }
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function sh(command: string) {
  const run = spawnSync('/bin/sh', ['-c', command], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 400_000,
    env: { ...process.env, npm_config_offline: 'true', npm_config_update_notifier: 'false' },
  });
  expect(run.status, `${command}\n${run.stdout}\n${run.stderr}`).toBe(0);
  return run;
}

describe("the README's walkthrough", () => {
  it('trains on a CSV with a model file, exports, and plain tfjs predicts what edl predict does', () => {
    const steps = walkthroughSteps();
    expect(steps.map((s) => s.name ?? s.kind)).toEqual(['shell', 'model.ts', 'shell', 'load.mjs', 'shell']);
    const outputs: string[] = [];
    for (const step of steps) {
      if (step.kind === 'file') writeFileSync(path.join(dir, step.name as string), step.text);
      else outputs.push(sh(step.text).stdout);
    }
    expect(existsSync(path.join(dir, 'ckpt', 'model', 'model.json'))).toBe(true);
    expect(existsSync(path.join(dir, 'exported', 'weights.bin'))).toBe(true);
    const [centre, corner] = (JSON.parse(outputs.at(-1)?.trim() as string) as number[][]).map(
      (row) => row[0],
    );
    expect(centre).toBeGreaterThan(0.5);
    expect(corner).toBeLessThan(0.5);

    // edl predict from the same checkpoint, against the exported model in plain tfjs, record by record.
    sh(
      'npx edl predict --model-def model.ts --prediction-data points.csv --data-reader-params \'{"header":true,"inferTypes":true}\' --model-checkpoint ckpt --output predictions.jsonl',
    );
    writeFileSync(
      path.join(dir, 'compare.mjs'),
      `${readFileSync(path.join(dir, 'load.mjs'), 'utf8').split('const inside')[0]}
const rows = readFileSync('points.csv', 'utf8').trim().split('\\n').slice(1).map((l) => l.split(',').map(Number));
const all = await model.predict(tf.tensor2d(rows.map((r) => [r[0], r[1]]))).array();
let worst = 0;
let count = 0;
for (const line of readFileSync('predictions.jsonl', 'utf8').trim().split('\\n')) {
  const { record, output } = JSON.parse(line);
  worst = Math.max(worst, Math.abs(output[0] - all[record][0]));
  count++;
}
console.log(JSON.stringify({ count, worst }));
`,
    );
    const compared = JSON.parse(sh('node compare.mjs').stdout.trim()) as { count: number; worst: number };
    expect(compared.count).toBe(2000);
    expect(compared.worst).toBeLessThan(1e-5);
  }, 600_000);
});
