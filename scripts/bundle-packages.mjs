// @ts-check
// Copies installed packages with their dependencies into a staged package's node_modules, for
// bundleDependencies: pack-all uses it for @edl/native-source's build tools and @edl/proto's grpc-js.
import { cpSync, existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../', import.meta.url));
const readJson = (/** @type {string} */ path) => JSON.parse(readFileSync(path, 'utf8'));

/**
 * Copies `names` and everything they depend on but `skip`, as resolved from directory `from` (pnpm's
 * node_modules), into dir/node_modules: hoisted where no other version is in the way, nested under
 * the dependent otherwise. Returns the exact versions of `names`.
 * @param {string} dir
 * @param {string[]} names
 * @param {string} [from]
 * @param {Set<string>} [skip]
 * @returns {Record<string, string>}
 */
export function bundle(dir, names, from = repoRoot, skip = new Set()) {
  const placed = new Map(); // install path -> real source directory
  const queue = names.map((name) => ({ name, from, at: dir }));
  while (queue.length > 0) {
    const next = queue.shift();
    if (next === undefined || skip.has(next.name)) continue;
    const { name, at } = next;
    const source = resolvePackage(name, next.from);
    let visible;
    for (let d = at; ; d = dirname(d)) {
      const path = join(d, 'node_modules', name);
      if (placed.has(path)) {
        visible = placed.get(path);
        break;
      }
      if (d === dir) break;
    }
    if (visible === source) continue;
    const path = visible === undefined ? join(dir, 'node_modules', name) : join(at, 'node_modules', name);
    placed.set(path, source);
    cpSync(source, path, {
      recursive: true,
      dereference: true,
      filter: (src) => !relative(source, src).split(/[\\/]/).includes('node_modules'),
    });
    const deps = Object.keys(readJson(join(source, 'package.json')).dependencies ?? {});
    for (const dep of deps) queue.push({ name: dep, from: source, at: path });
  }
  return Object.fromEntries(
    names.map((name) => [name, readJson(join(dir, 'node_modules', name, 'package.json')).version]),
  );
}

/** The real directory of package `name` as Node.js resolves it from directory `from`. */
function resolvePackage(/** @type {string} */ name, /** @type {string} */ from) {
  for (let d = from; ; d = dirname(d)) {
    const candidate = join(d, 'node_modules', name, 'package.json');
    if (existsSync(candidate)) return realpathSync(dirname(candidate));
    if (dirname(d) === d) throw new Error(`cannot bundle ${name}: not installed (run pnpm install)`);
  }
}
