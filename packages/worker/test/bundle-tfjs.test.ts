import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs build script without declarations
import { bundleTfjs } from '../scripts/bundle-tfjs.mjs';

const workerDir = fileURLToPath(new URL('..', import.meta.url));
const scratch = mkdtempSync(path.join(tmpdir(), 'edl-bundle-tfjs-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
// A user's project with @edl/worker installed as pack:all packs it: the package pnpm packs (its
// manifest, dist and hooks), then the bundle; the other @edl/* packages are the workspace's.
const consumer = path.join(scratch, 'consumer');
const stage = path.join(consumer, 'node_modules', '@edl', 'worker');

const TFJS = [
  '@tensorflow/tfjs-core',
  '@tensorflow/tfjs-layers',
  '@tensorflow/tfjs-backend-cpu',
  '@tensorflow/tfjs-backend-wasm',
];

function filesBelow(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesBelow(path.join(dir, entry.name)) : [path.join(dir, entry.name)],
  );
}

interface Tf {
  setBackend(name: string): Promise<boolean>;
  getBackend(): string;
  tensor1d(values: number[]): { data(): Promise<Float32Array> };
  add(a: unknown, b: unknown): { data(): Promise<Float32Array> };
}

describe('bundle-tfjs (the TensorFlow.js inside the packed @edl/worker)', () => {
  mkdirSync(stage, { recursive: true });
  writeFileSync(path.join(stage, 'package.json'), readFileSync(path.join(workerDir, 'package.json')));
  for (const part of ['dist', 'hooks'])
    cpSync(path.join(workerDir, part), path.join(stage, part), { recursive: true });
  for (const name of ['common', 'data', 'proto', 'recordio']) {
    symlinkSync(path.join(workerDir, '..', name), path.join(consumer, 'node_modules', '@edl', name), 'dir');
  }
  const versions = bundleTfjs(stage) as Record<string, string>;
  const manifest = JSON.parse(readFileSync(path.join(stage, 'package.json'), 'utf8')) as {
    bundleDependencies: string[];
    dependencies: Record<string, string>;
  };
  const requireStaged = createRequire(path.join(stage, 'package.json'));

  it('bundles the four packages at the versions @edl/worker depends on, Node entries and no other builds', () => {
    expect(manifest.bundleDependencies).toEqual(TFJS);
    expect(versions).toEqual(Object.fromEntries(TFJS.map((name) => [name, manifest.dependencies[name]])));
    const files = filesBelow(path.join(stage, 'node_modules'));
    const scripts = files.filter((f) => f.endsWith('.js') && !f.includes(`${path.sep}seedrandom${path.sep}`));
    expect(scripts.map((f) => path.basename(f)).sort()).toEqual([
      'tf-backend-cpu.node.js',
      'tf-backend-wasm.node.js',
      'tf-core.node.js',
      'tf-layers.node.js',
    ]);
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(
      files
        .filter((f) => f.endsWith('.wasm'))
        .map((f) => path.basename(f))
        .sort(),
    ).toEqual(['tfjs-backend-wasm-simd.wasm', 'tfjs-backend-wasm.wasm']);
    for (const name of TFJS) {
      const dir = path.join(stage, 'node_modules', name);
      expect(readFileSync(path.join(dir, 'LICENSE'), 'utf8')).toContain('Apache License');
      const bundled = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { types: string };
      expect(statSync(path.join(dir, bundled.types)).isFile()).toBe(true);
    }
    const bytes = files.reduce((sum, f) => sum + statSync(f).size, 0);
    expect(bytes).toBeLessThan(10e6); // 92 MB as published
  });

  it('computes from the bundled copies alone: layers on the bundled core, the cpu and wasm backends', async () => {
    const tf = requireStaged('@tensorflow/tfjs-core') as Tf;
    expect(requireStaged.resolve('@tensorflow/tfjs-core').startsWith(stage)).toBe(true);
    requireStaged('@tensorflow/tfjs-backend-cpu');
    const tfl = requireStaged('@tensorflow/tfjs-layers') as {
      sequential(config: unknown): { predict(x: unknown): { data(): Promise<Float32Array> } };
      layers: { dense(config: unknown): unknown };
    };
    expect(await tf.setBackend('cpu')).toBe(true);
    const model = tfl.sequential({
      layers: [tfl.layers.dense({ inputShape: [2], units: 1, kernelInitializer: 'ones', useBias: false })],
    });
    const input = (tf as unknown as { tensor2d(v: number[][]): unknown }).tensor2d([[1, 2]]);
    expect([...(await model.predict(input).data())]).toEqual([3]);

    const wasm = requireStaged('@tensorflow/tfjs-backend-wasm') as { setWasmPaths(prefix: string): void };
    wasm.setWasmPaths(
      `${path.join(stage, 'node_modules', '@tensorflow', 'tfjs-backend-wasm', 'dist')}${path.sep}`,
    );
    expect(await tf.setBackend('wasm')).toBe(true);
    expect(tf.getBackend()).toBe('wasm');
    expect([...(await tf.add(tf.tensor1d([1, 2]), tf.tensor1d([3, 4])).data())]).toEqual([4, 6]);
  });

  it("types a consumer's model file through @edl/worker's declarations with the bundled ones", () => {
    const file = path.join(consumer, 'model.ts');
    writeFileSync(
      file,
      [
        "import { batchRecords, type DatasetFn, tf, tfl } from '@edl/worker';",
        'export const model = (): tfl.LayersModel =>',
        '  tfl.sequential({ layers: [tfl.layers.dense({ inputShape: [2], units: 1 })] });',
        'export const loss = (labels: tf.Tensor, outputs: tf.Tensor): tf.Scalar =>',
        '  tf.losses.logLoss(labels, outputs) as tf.Scalar;',
        'export const datasetFn: DatasetFn<number[]> = async function* (records, _mode, metadata) {',
        '  for await (const rows of batchRecords(records, metadata.minibatchSize)) {',
        '    yield { features: tf.tensor2d(rows.map((r) => [r[0] as number, r[1] as number])) };',
        '  }',
        '};',
        'export const wrong: number = tf.scalar(1);',
        '',
      ].join('\n'),
    );
    writeFileSync(path.join(consumer, 'package.json'), '{ "type": "module" }\n');
    const program = ts.createProgram([file], {
      strict: true,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      noEmit: true,
      skipLibCheck: true,
      types: ['node'],
      typeRoots: [path.join(workerDir, '..', '..', 'node_modules', '@types')],
    });
    const errors = ts
      .getPreEmitDiagnostics(program)
      .map((d) => `${d.file?.fileName ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
    // Only the deliberate error: tf's types are real (not any) and come from the bundle.
    expect(errors).toEqual([`${file}: Type 'Scalar' is not assignable to type 'number'.`]);
    const core = path.join(stage, 'node_modules', '@tensorflow', 'tfjs-core', 'dist', 'index.d.ts');
    expect(program.getSourceFiles().map((f) => path.normalize(f.fileName))).toContain(core);
  });
});
