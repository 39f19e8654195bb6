import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs build script without declarations
import { bundleTfjs } from '../scripts/bundle-tfjs.mjs';

const workerDir = fileURLToPath(new URL('..', import.meta.url));
const stage = mkdtempSync(path.join(tmpdir(), 'edl-bundle-tfjs-'));
afterAll(() => rmSync(stage, { recursive: true, force: true }));

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
  // What pack:all does to the package pnpm packed: the manifest is the repository's.
  writeFileSync(path.join(stage, 'package.json'), readFileSync(path.join(workerDir, 'package.json')));
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
});
