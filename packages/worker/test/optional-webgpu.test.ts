// `webgpu` (Dawn's binaries, over 100 MB) and @tensorflow/tfjs-backend-webgpu are optional peer
// dependencies. Without them the automatic order goes on to the next backend, and naming webgpu
// fails with the command that installs them. A child process runs the built @edl/worker with a real
// module-resolution hook that reports the package as missing, as Node.js does when it is absent.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const workerDir = fileURLToPath(new URL('../', import.meta.url));

const hooks = `export async function resolve(specifier, context, next) {
  if (specifier === 'webgpu') {
    const error = new Error("Cannot find package 'webgpu' imported from " + context.parentURL);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}`;

const child = `import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}), import.meta.url);
const { selectBackend } = await import('@edl/worker');
const auto = await selectBackend();
const named = await selectBackend({ backend: 'webgpu' }).then(
  () => ({ ok: true }),
  (error) => ({ code: error.code, message: error.message }),
);
console.log(JSON.stringify({ auto, named }));
`;

const install = 'npm install webgpu@^0.6.2 @tensorflow/tfjs-backend-webgpu@4.22.0';

describe('without the webgpu package', () => {
  let result: {
    auto: { name: string; attempts: { name: string; ok: boolean; detail: string }[] };
    named: { code?: string; message?: string };
  };
  beforeAll(() => {
    execFileSync('pnpm', ['exec', 'tsc', '-b', 'packages/worker'], { cwd: repoRoot, stdio: 'pipe' });
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', child], {
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
});
