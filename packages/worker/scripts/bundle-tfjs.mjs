// @ts-check
/**
 * The TensorFlow.js that the published @edl/worker carries (scripts/pack-all.mjs calls this on the
 * package it staged): tfjs-core, tfjs-layers and the cpu and wasm backends, each reduced to what
 * Node.js loads, as bundled dependencies in the tarball's node_modules. npm installs them from the
 * tarball and asks no registry for them.
 *
 * Each TensorFlow.js package ships about eight builds of the same code (ES modules, UMD, minified,
 * each with a source map), 92 MB for the four; Node loads one, the CommonJS `dist/tf-*.node.js`
 * that `main` names. Kept per package: that file, the declarations (`dist/**\/*.d.ts`, what
 * `types` names and the worker's own declarations import), package.json with `main` and `types`
 * only and the dependencies those need, and the licence; for the wasm backend also the two `.wasm`
 * binaries Node can pick (with and without SIMD; tfjs never uses the threaded one on Node). Their
 * dependencies come along the same way, nested, so that nothing is left for npm to fetch:
 * seedrandom (tfjs-backend-cpu's kernels) and @webgpu/types (tfjs-core's declarations reference it).
 * Left out: @types/emscripten, whose global types the wasm backend's declarations use without a
 * reference (a consumer's tsc sees them only with skipLibCheck off, where tfjs-layers' own
 * declarations fail anyway), and node-fetch, which tfjs-core loads only where `fetch` is missing.
 * The packages keep their names and places (@edl/worker/node_modules/@tensorflow/...), so the
 * worker, the resolve hooks of hooks/shared-packages.mjs and duplicate-tfjs.ts find them as before.
 *
 *   node packages/worker/scripts/bundle-tfjs.mjs <staged @edl/worker directory>
 */
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const workerDir = fileURLToPath(new URL('..', import.meta.url));
const APACHE_LICENSE = fileURLToPath(new URL('../LICENSE', import.meta.url));

/**
 * @typedef {object} Pruned
 * @property {string} name
 * @property {(file: string) => boolean} keep  which files (paths relative to the package) to copy
 * @property {string[]} dependencies  bundled beneath it, resolved from its own directory
 * @property {boolean} [apacheLicense]  the package has no licence file: add Apache-2.0's text
 */

const declarations = (file) => file.endsWith('.d.ts') && !file.endsWith('_test.d.ts');
/** @param {string} entry */
const tfjs =
  (entry, extra = (/** @type {string} */ _file) => false) =>
  (/** @type {string} */ file) =>
    file === entry || (file.startsWith('dist/') && declarations(file)) || extra(file);

/** @type {Pruned[]} */
export const BUNDLED_TFJS = [
  {
    name: '@tensorflow/tfjs-core',
    keep: tfjs('dist/tf-core.node.js'),
    dependencies: ['@webgpu/types'],
    apacheLicense: true,
  },
  {
    name: '@tensorflow/tfjs-layers',
    keep: tfjs('dist/tf-layers.node.js'),
    dependencies: [],
    apacheLicense: true,
  },
  {
    name: '@tensorflow/tfjs-backend-cpu',
    keep: tfjs('dist/tf-backend-cpu.node.js'),
    dependencies: ['seedrandom'],
    apacheLicense: true,
  },
  {
    name: '@tensorflow/tfjs-backend-wasm',
    keep: tfjs(
      'dist/tf-backend-wasm.node.js',
      (file) =>
        file === 'dist/tfjs-backend-wasm.wasm' ||
        file === 'dist/tfjs-backend-wasm-simd.wasm' ||
        (file.startsWith('wasm-out/') && declarations(file)),
    ),
    dependencies: [],
    apacheLicense: true,
  },
];

/** The nested ones: how much of each to keep. */
const NESTED = new Map([
  // index.js and the generators it requires; not the minified copies, tests or build files.
  [
    'seedrandom',
    (/** @type {string} */ f) =>
      /^(index|seedrandom)\.js$|^lib\/\w+\.js$|^README\.md$/.test(f) && !f.endsWith('.min.js'),
  ],
  ['@webgpu/types', (/** @type {string} */ f) => /^dist\/index\.d\.ts$|^LICENSE/.test(f)],
]);

/** Every file below dir, as paths relative to it, node_modules excluded. */
function filesBelow(dir, base = dir) {
  /** @type {string[]} */
  const files = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...filesBelow(path, base));
    else files.push(relative(base, path).split('\\').join('/'));
  }
  return files;
}

/** The real directory of package `name` as Node.js resolves it from `from`. */
function packageDir(name, from) {
  return realpathSync(dirname(createRequire(join(from, 'package.json')).resolve(`${name}/package.json`)));
}

const readJson = (/** @type {string} */ path) => JSON.parse(readFileSync(path, 'utf8'));

/**
 * The published manifest, reduced to what npm and Node read: `main`, `types`, the dependencies
 * bundled with it and the peers it has; no `browser`, `module`, `unpkg`, ... (their files are gone).
 */
function prunedManifest(manifest, dependencies) {
  const kept = {};
  for (const field of [
    'name',
    'version',
    'description',
    'license',
    'repository',
    'homepage',
    'main',
    'types',
    'typings',
  ]) {
    if (manifest[field] !== undefined) kept[field] = manifest[field];
  }
  if (dependencies.length > 0) {
    kept.dependencies = Object.fromEntries(dependencies.map((d) => [d, manifest.dependencies[d]]));
  }
  if (manifest.peerDependencies !== undefined) kept.peerDependencies = manifest.peerDependencies;
  return kept;
}

/**
 * Copies `name` (from `source`) into `into`, keeping the files `keep` accepts; strips the
 * sourceMappingURL comment of JavaScript files whose map is not shipped.
 */
function copyPruned(source, into, keep, dependencies) {
  const manifest = readJson(join(source, 'package.json'));
  for (const file of filesBelow(source).filter((f) => f !== 'package.json' && keep(f))) {
    mkdirSync(dirname(join(into, file)), { recursive: true });
    if (file.endsWith('.js')) {
      const text = readFileSync(join(source, file), 'utf8');
      writeFileSync(join(into, file), text.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n'));
    } else cpSync(join(source, file), join(into, file));
  }
  writeFileSync(
    join(into, 'package.json'),
    `${JSON.stringify(prunedManifest(manifest, dependencies), null, 2)}\n`,
  );
  const entry = manifest.main ?? 'index.js';
  if (!existsSync(join(into, entry)) && !existsSync(join(into, `${entry}.js`))) {
    throw new Error(`bundle-tfjs: ${manifest.name}: its entry ${entry} was not kept`);
  }
  return manifest;
}

/**
 * Puts the pruned TensorFlow.js packages into `stagedDir/node_modules` and names them in the
 * staged package.json's `bundleDependencies`. Returns their names and versions.
 * @param {string} stagedDir
 */
export function bundleTfjs(stagedDir) {
  const stagedManifest = readJson(join(stagedDir, 'package.json'));
  /** @type {Record<string, string>} */
  const versions = {};
  for (const { name, keep, dependencies, apacheLicense } of BUNDLED_TFJS) {
    const declared = stagedManifest.dependencies?.[name];
    if (declared === undefined) throw new Error(`bundle-tfjs: ${name} is not a dependency of @edl/worker`);
    const source = packageDir(name, workerDir);
    const into = join(stagedDir, 'node_modules', name);
    const manifest = copyPruned(source, into, keep, dependencies);
    if (manifest.version !== declared) {
      throw new Error(`bundle-tfjs: ${name} is ${manifest.version} here, @edl/worker asks for ${declared}`);
    }
    if (apacheLicense) cpSync(APACHE_LICENSE, join(into, 'LICENSE'));
    for (const dependency of dependencies) {
      const keepNested = NESTED.get(dependency);
      if (keepNested === undefined) throw new Error(`bundle-tfjs: no file list for ${dependency}`);
      copyPruned(packageDir(dependency, source), join(into, 'node_modules', dependency), keepNested, []);
    }
    versions[name] = manifest.version;
  }
  stagedManifest.bundleDependencies = Object.keys(versions);
  writeFileSync(join(stagedDir, 'package.json'), `${JSON.stringify(stagedManifest, null, 2)}\n`);
  return versions;
}

if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [dir] = process.argv.slice(2);
  if (dir === undefined) {
    console.error('usage: node packages/worker/scripts/bundle-tfjs.mjs <staged @edl/worker directory>');
    process.exit(2);
  }
  console.log(bundleTfjs(dir));
}
