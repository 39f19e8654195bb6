// The Kubernetes client (tens of MB, and slow to load) is an optional peer dependency: importing
// @edl/master must not load it; only @edl/master/kubernetes does. A child process records every
// module URL that Node.js resolves, through a real module-resolution hook.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildDist, repoRoot } from '../helpers.js';

const hooks = `let port;
export function initialize(data) { port = data.port; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  port.postMessage(result.url);
  return result;
}`;

// Imports argv[1], then a sentinel module: messages on one port arrive in order, so once the
// sentinel's URL has arrived every URL resolved before it has too.
const child = `import { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';
const { port1, port2 } = new MessageChannel();
const urls = [];
const sentinel = 'data:text/javascript,export default 1';
const done = new Promise((resolve) => port1.on('message', (url) => (url === sentinel ? resolve() : urls.push(url))));
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}), import.meta.url, {
  data: { port: port2 },
  transferList: [port2],
});
const exports = Object.keys(await import(process.argv[1]));
await import(sentinel);
await done;
port1.close();
console.log(JSON.stringify({ exports, urls }));
`;

function load(specifier: string): { exports: string[]; urls: string[] } {
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', child, specifier], {
    cwd: join(repoRoot, 'packages', 'master'),
    encoding: 'utf8',
  });
  return JSON.parse(out) as { exports: string[]; urls: string[] };
}

const fromKubernetesClient = (urls: string[]) => urls.filter((u) => u.includes('/@kubernetes/client-node/'));

describe('@edl/master and @edl/master/kubernetes', () => {
  beforeAll(() => buildDist(['-b packages/master']), 120_000);

  it('importing @edl/master loads no module of @kubernetes/client-node', () => {
    const { exports, urls } = load('@edl/master');
    expect(exports).toContain('startMaster');
    expect(exports).not.toContain('kubernetesInstanceManager');
    expect(urls.some((u) => u.endsWith('/packages/master/dist/index.js'))).toBe(true);
    expect(fromKubernetesClient(urls)).toEqual([]);
  }, 60_000);

  it('@edl/master/kubernetes exports the Kubernetes instance manager and loads the client', () => {
    const { exports, urls } = load('@edl/master/kubernetes');
    expect(exports).toEqual(
      expect.arrayContaining([
        'kubernetesInstanceManager',
        'buildJobObjects',
        'loadKubeConfig',
        'PodWatcher',
      ]),
    );
    expect(fromKubernetesClient(urls).length).toBeGreaterThan(0);
  }, 60_000);
});
