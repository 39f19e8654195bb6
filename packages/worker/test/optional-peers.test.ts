// Optional peer dependencies of @edl/worker: `webgpu` (Dawn's binaries, over 100 MB) with
// @tensorflow/tfjs-backend-webgpu, and tsx (esbuild, over 20 MB) for TypeScript model definitions.
// Without webgpu the automatic order goes on to the next backend and naming webgpu fails with the
// command that installs it; without tsx a .ts model definition fails with the same kind of advice.
// A child process runs the built @edl/worker with a real module-resolution hook that reports the
// packages as missing, as Node.js does when they are absent.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const workerDir = fileURLToPath(new URL('../', import.meta.url));

const hooks = `export async function resolve(specifier, context, next) {
  const name = specifier === 'webgpu' ? 'webgpu' : specifier.startsWith('tsx/') ? 'tsx' : undefined;
  if (name !== undefined) {
    const error = new Error("Cannot find package '" + name + "' imported from " + context.parentURL);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}`;

const child = `import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}), import.meta.url);
const { selectBackend, loadModelDefinition } = await import('@edl/worker');
const auto = await selectBackend();
const named = await selectBackend({ backend: 'webgpu' }).then(
  () => ({ ok: true }),
  (error) => ({ code: error.code, message: error.message }),
);
const tsModel = await loadModelDefinition(process.argv[1]).then(
  () => ({ ok: true }),
  (error) => ({ code: error.code, message: error.message }),
);
console.log(JSON.stringify({ auto, named, tsModel }));
`;

const install = 'npm install webgpu@^0.6.2 @tensorflow/tfjs-backend-webgpu@4.22.0';

describe('without the optional packages', () => {
  let result: {
    auto: { name: string; attempts: { name: string; ok: boolean; detail: string }[] };
    named: { code?: string; message?: string };
    tsModel: { code?: string; message?: string };
  };
  const tsFile = join(mkdtempSync(join(tmpdir(), 'edl-peers-')), 'model.ts');
  beforeAll(() => {
    execFileSync('pnpm', ['exec', 'tsc', '-b', 'packages/worker'], { cwd: repoRoot, stdio: 'pipe' });
    writeFileSync(tsFile, 'export const loss: string = "unused";\n');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', child, tsFile], {
      cwd: workerDir,
      encoding: 'utf8',
    });
    result = JSON.parse(out) as typeof result;
  }, 180_000);

  it('the automatic order skips webgpu, saying how to add it, and goes on', () => {
    expect(result.auto.attempts[0]).toEqual({
      name: 'webgpu',
      ok: false,
      detail: `webgpu is not installed (an optional dependency of @edl/worker): ${install}`,
    });
    expect(result.auto.name).not.toBe('webgpu');
  });

  it('naming webgpu fails with BACKEND_UNAVAILABLE and the install command', () => {
    expect(result.named.code).toBe('BACKEND_UNAVAILABLE');
    expect(result.named.message).toContain(`webgpu is not installed`);
    expect(result.named.message).toContain(install);
  });

  it('a TypeScript model definition fails with MODEL_DEF_LOAD_FAILED saying how to add tsx', () => {
    expect(result.tsModel).toEqual({
      code: 'MODEL_DEF_LOAD_FAILED',
      message:
        `Model definition ${tsFile} is TypeScript, which needs tsx (an optional dependency of @edl/worker): ` +
        'npm install tsx@^4.23.15, or write the model definition in JavaScript',
    });
  });
});
