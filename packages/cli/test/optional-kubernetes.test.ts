// @kubernetes/client-node is an optional dependency of @edl/cli that only `edl k8s` needs. Without
// it, `edl k8s` says how to add it and every other command works. The built `edl` runs with a real
// module-resolution hook that reports the package as missing, as Node.js does when it is absent.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const edlBin = fileURLToPath(new URL('../dist/bin/edl.js', import.meta.url));

const hooks = `export async function resolve(specifier, context, next) {
  if (specifier === '@kubernetes/client-node') {
    const error = new Error("Cannot find package '@kubernetes/client-node' imported from " + context.parentURL);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}`;

describe('edl without @kubernetes/client-node', () => {
  let hide: string;
  beforeAll(() => {
    spawnSync('pnpm', ['exec', 'tsc', '-b', 'packages/cli'], { cwd: repoRoot, stdio: 'pipe' });
    hide = join(mkdtempSync(join(tmpdir(), 'edl-no-k8s-')), 'hide-kubernetes.mjs');
    writeFileSync(
      hide,
      `import { register } from 'node:module';\nregister('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}));\n`,
    );
  }, 180_000);

  // --no-deprecation: Node 26 deprecates this test's own hiding hook (`module.register`, DEP0205),
  // and the assertions compare stderr whole.
  const edl = (args: string[]) =>
    spawnSync(process.execPath, ['--no-deprecation', '--import', hide, edlBin, ...args], {
      encoding: 'utf8',
      timeout: 60_000,
    });

  it('edl k8s exits 1 and names the package and the command that installs it', () => {
    // Its arguments are checked first (and its --help needs nothing); the client loads to do the work.
    expect(edl(['k8s', 'manifest', '--help']).status).toBe(0);
    const result = edl([
      'k8s',
      'manifest',
      '--image',
      'registry.example/edl:1',
      '--namespace',
      'ml',
      '--num-workers',
      '2',
      '--model-def',
      'census',
      '--training-data',
      'train.csv',
    ]);
    expect(result.status).toBe(1);
    expect(result.stderr).toBe(
      'edl k8s: needs @kubernetes/client-node, an optional dependency of @edl/cli that is not installed. ' +
        'Install it next to @edl/cli: npm install @kubernetes/client-node@~1.4.0\n',
    );
  });

  it('the other commands do not need it', () => {
    const result = edl(['train', '--help']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('Usage: edl train');
  });
});
