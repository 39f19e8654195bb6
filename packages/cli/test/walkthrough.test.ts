/**
 * The README's "Train on your own data", followed literally in an empty directory: its files
 * written as shown, its shell commands run as shown (`npm install`, then `npx edl ...`), then the
 * exported model checked against `edl predict` to 1e-5 with plain TensorFlow.js. npm installs the
 * tarballs of `pack:all` and, for their dependencies, the versions this checkout has, from a
 * registry on 127.0.0.1 (./helpers/local-registry.ts) named in the user's ~/.npmrc; PATH has
 * node, npm, npx and sh only. Needs `pnpm build`.
 */
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createNpmSandbox,
  type NpmSandbox,
  ok,
  packAll,
  type Run,
} from '../../recordio/test/helpers/npm-sandbox.js';
import { type LocalRegistry, startLocalRegistry } from './helpers/local-registry.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
/** Third-party tarballs packed from this checkout's node_modules, kept between runs. */
const CACHE_DIR = path.join(repoRoot, 'node_modules', '.cache', 'edl-test-registry');

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

const scratch = mkdtempSync(path.join(tmpdir(), 'edl-walkthrough-'));
const dir = path.join(scratch, 'app'); // the user's empty directory
let sandbox: NpmSandbox;
let registry: LocalRegistry | undefined;
const steps = walkthroughSteps();
/** The packages of the README's `npm install` line. */
const installed = (steps.find((s) => s.kind === 'shell' && /^npm install /.test(s.text))?.text ?? '')
  .trim()
  .split(/\s+/)
  .slice(2);

function timed<T>(label: string, started: number, value: T): T {
  console.log(`walkthrough: ${label} ${((performance.now() - started) / 1000).toFixed(1)}s`);
  return value;
}

beforeAll(async () => {
  let started = performance.now();
  packAll(path.join(scratch, 'packages'), 'packages/cli');
  timed('pack:all', started, undefined);
  started = performance.now();
  registry = await startLocalRegistry({
    packDir: path.join(scratch, 'packages'),
    install: installed,
    cacheDir: CACHE_DIR,
    log: console.log,
  });
  timed('local registry up', started, undefined);
  sandbox = createNpmSandbox(scratch);
  // The user's npm configuration: this registry instead of the public one, no audit or fund calls.
  writeFileSync(
    path.join(sandbox.home, '.npmrc'),
    `registry=${registry.url}\naudit=false\nfund=false\nupdate-notifier=false\n`,
  );
  mkdirSync(dir);
}, 400_000);
afterAll(async () => {
  await registry?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** Runs a shell command in the user's directory; the registry in this process keeps answering. */
async function sh(command: string): Promise<Run> {
  const started = performance.now();
  const run = ok(await sandbox.runAsync(path.join(sandbox.binDir, 'sh'), ['-c', command], dir), command);
  return timed(command.split('\n')[0]?.slice(0, 60) ?? '', started, run);
}

describe("the README's walkthrough", () => {
  it('installs with npm, trains on a CSV with a model file, exports, and plain tfjs predicts what edl predict does', async () => {
    expect(steps.map((s) => s.name ?? s.kind)).toEqual([
      'shell',
      'shell',
      'model.ts',
      'shell',
      'load.mjs',
      'shell',
    ]);
    expect(installed).toContain('@edl/cli');
    const outputs: string[] = [];
    let requestsAfterInstall = -1;
    for (const step of steps) {
      if (step.kind === 'file') writeFileSync(path.join(dir, step.name as string), step.text);
      else outputs.push((await sh(step.text)).stdout);
      if (step.text.startsWith('npm install ')) requestsAfterInstall = registry?.requests.length ?? 0;
    }
    // npm installed real copies from the registry (no link into this checkout), and asked only
    // for what it serves, apart from other platforms' optional packages.
    expect(lstatSync(path.join(dir, 'node_modules', '@edl', 'cli')).isSymbolicLink()).toBe(false);
    expect(registry?.notFound.filter((name) => !registry?.skippedOptional.has(name))).toEqual([]);
    // Every package served was fetched: this platform's optional ones too (@esbuild/<platform>,
    // which esbuild's install script would otherwise download from the public registry).
    expect([...new Set(registry?.fetched)].sort()).toEqual([...(registry?.packages ?? [])].sort());
    expect(existsSync(path.join(dir, 'ckpt', 'model', 'model.json'))).toBe(true);
    expect(existsSync(path.join(dir, 'exported', 'weights.bin'))).toBe(true);
    const [centre, corner] = (JSON.parse(outputs.at(-1)?.trim() as string) as number[][]).map(
      (row) => row[0],
    );
    expect(centre).toBeGreaterThan(0.5);
    expect(corner).toBeLessThan(0.5);

    // edl predict from the same checkpoint, against the exported model in plain tfjs, record by record.
    await sh(
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
    const compared = JSON.parse((await sh('node compare.mjs')).stdout.trim()) as {
      count: number;
      worst: number;
    };
    expect(compared.count).toBe(2000);
    expect(compared.worst).toBeLessThan(1e-5);
    expect(registry?.requests.length).toBe(requestsAfterInstall); // npx edl asked no registry
  }, 600_000);
});
