#!/usr/bin/env node
// `pnpm run pack:all`: packs every package a user installs, all with the version of @edl/recordio,
// into dist-packages/ (or --out DIR):
// - each workspace @edl/* package (pnpm pack rewrites workspace:* to the version); the tarball of
//   @edl/recordio gets one optionalDependency per target of npm/targets.json, as napi-rs's
//   prepublish step does, so the repository itself never asks the registry for them;
// - the platform packages @edl/native-<target> whose binary is at hand: this host's from
//   build/Release (after scripts/check-portability.sh on Linux), others from
//   --binaries DIR/<target>/edl_native.node (CI artifacts built on that platform);
// - @edl/native-source: the C++ sources, CMakeLists.txt and `edl-build-native`, with cmake-js,
//   node-addon-api and node-api-headers bundled so that building from source needs no download;
// - @edl/worker with TensorFlow.js bundled, only the files Node loads (packages/worker/scripts/bundle-tfjs.mjs);
// - @edl/proto with @grpc/grpc-js bundled, without @grpc/proto-loader (packages/proto/scripts/bundle-grpc.mjs).
// Nothing runs an install script. Needs `pnpm run build` first (dist/ and build/Release).
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { bundleGrpc } from '../packages/proto/scripts/bundle-grpc.mjs';
import { bundleTfjs } from '../packages/worker/scripts/bundle-tfjs.mjs';
import { bundle } from './bundle-packages.mjs';
import {
  ADDON_FILE,
  generate,
  npmDir,
  platformManifest,
  platformPackageName,
  readTargets,
  recordioManifest,
  repoRoot,
  THIRD_PARTY_FILE,
  thirdPartyLicenses,
} from './platform-packages.mjs';

const { values: args } = parseArgs({
  options: {
    out: { type: 'string', default: join(repoRoot, 'dist-packages') },
    binaries: { type: 'string' },
  },
});
const outDir = resolve(args.out);
const stageDir = join(outDir, '.stage');
const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'));

function fail(message) {
  console.error(`pack:all: ${message}`);
  process.exit(1);
}

function run(command, commandArgs, cwd) {
  return execFileSync(command, commandArgs, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
}

/** `npm pack` of a staged directory into outDir; returns the tarball's file name. */
function npmPack(dir) {
  const [info] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', outDir], dir));
  return info.filename;
}

/** This host as a target name: linux-x64-gnu, linux-x64-musl, darwin-arm64, win32-x64-gnu. */
function hostTarget() {
  if (process.platform === 'linux') {
    const glibc = process.report.getReport().header.glibcVersionRuntime;
    return `linux-${process.arch}-${glibc === undefined ? 'musl' : 'gnu'}`;
  }
  if (process.platform === 'win32') return `win32-${process.arch}-gnu`;
  return `${process.platform}-${process.arch}`;
}

// ---- everything agrees on one version, and the generated directories are current ----
const recordio = recordioManifest();
const version = recordio.version;
const stale = generate({ check: true });
if (stale.length > 0)
  fail(`npm/ is out of date: run node scripts/platform-packages.mjs (${stale.join(', ')})`);

const workspace = readdirSync(join(repoRoot, 'packages'))
  .map((name) => join(repoRoot, 'packages', name))
  .filter((dir) => existsSync(join(dir, 'package.json')))
  .map((dir) => ({ dir, manifest: readJson(join(dir, 'package.json')) }))
  .filter(({ manifest }) => manifest.private !== true && manifest.name.startsWith('@edl/'));
const sourceTemplate = readJson(join(npmDir, 'native-source', 'package.json'));
const versions = [...workspace.map(({ manifest }) => manifest), sourceTemplate].filter(
  (m) => m.version !== version,
);
if (versions.length > 0) {
  fail(
    `every package must have version ${version}: ${versions.map((m) => `${m.name}@${m.version}`).join(', ')}`,
  );
}
for (const { dir, manifest } of workspace) {
  const main = manifest.main ?? 'index.js';
  if (!existsSync(join(dir, main)))
    fail(`${manifest.name} is not built (${relative(repoRoot, join(dir, main))}): run pnpm run build`);
}
for (const { manifest } of workspace) {
  const scripts = Object.keys(manifest.scripts ?? {}).filter((s) => /^(pre|post)?install$/.test(s));
  if (scripts.length > 0)
    fail(`${manifest.name} has install scripts (${scripts.join(', ')}): users would need to allow them`);
}

rmSync(outDir, { recursive: true, force: true });
mkdirSync(stageDir, { recursive: true });
const packed = [];

// ---- platform packages ----
const host = hostTarget();
for (const target of readTargets()) {
  const fromCi =
    args.binaries === undefined ? undefined : join(resolve(args.binaries), target.target, ADDON_FILE);
  let binary;
  if (fromCi !== undefined && existsSync(fromCi)) binary = fromCi;
  else if (target.target === host) binary = join(repoRoot, 'build', 'Release', ADDON_FILE);
  if (binary === undefined) {
    console.log(
      `pack:all: skip ${platformPackageName(target)} (built by CI on ${target.buildOn}; pass --binaries DIR)`,
    );
    continue;
  }
  if (!existsSync(binary)) fail(`no ${relative(repoRoot, binary)}: run pnpm run build:native`);
  if (target.os === 'linux' && target.libc === 'glibc' && process.platform === 'linux') {
    execFileSync('bash', [join(repoRoot, 'scripts', 'check-portability.sh'), binary], { stdio: 'inherit' });
  }
  const dir = join(stageDir, `native-${target.target}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify(platformManifest(target, recordio), null, 2)}\n`,
  );
  cpSync(join(npmDir, target.target, 'README.md'), join(dir, 'README.md'));
  cpSync(join(repoRoot, 'LICENSE'), join(dir, 'LICENSE'));
  writeFileSync(join(dir, THIRD_PARTY_FILE), thirdPartyLicenses());
  cpSync(binary, join(dir, ADDON_FILE));
  packed.push(npmPack(dir));
}

// ---- workspace packages ----
const optionalDependencies = Object.fromEntries(readTargets().map((t) => [platformPackageName(t), version]));
/** What becomes of a packed package before it is packed again, by name. */
const finishing = {
  // @edl/recordio: one optional dependency per platform package.
  [recordio.name]: (dir) => {
    const packedManifest = readJson(join(dir, 'package.json'));
    packedManifest.optionalDependencies = { ...packedManifest.optionalDependencies, ...optionalDependencies };
    writeFileSync(join(dir, 'package.json'), `${JSON.stringify(packedManifest, null, 2)}\n`);
  },
  // @edl/worker: TensorFlow.js as Node loads it, bundled (packages/worker/scripts/bundle-tfjs.mjs).
  '@edl/worker': bundleTfjs,
  '@edl/proto': bundleGrpc,
};
for (const { dir, manifest } of workspace) {
  const packDir = join(stageDir, 'pnpm', manifest.name.replace('@edl/', ''));
  mkdirSync(packDir, { recursive: true });
  run('pnpm', ['pack', '--pack-destination', packDir], dir);
  const [tarball] = readdirSync(packDir).filter((f) => f.endsWith('.tgz'));
  const finish = finishing[manifest.name];
  if (finish === undefined) {
    cpSync(join(packDir, tarball), join(outDir, tarball));
    packed.push(tarball);
    continue;
  }
  // Change what pnpm packed, then pack that directory again.
  run('tar', ['-xzf', tarball], packDir);
  const extracted = join(packDir, 'package');
  finish(extracted);
  packed.push(npmPack(extracted));
}

// ---- the source package, with its build tools bundled ----
const sourceDir = join(stageDir, 'native-source');
cpSync(join(npmDir, 'native-source'), sourceDir, { recursive: true });
cpSync(join(repoRoot, 'CMakeLists.txt'), join(sourceDir, 'CMakeLists.txt'));
writeFileSync(join(sourceDir, THIRD_PARTY_FILE), thirdPartyLicenses());
// The addon's sources only: native/tests and native/fuzz are built only with EDL_BUILD_TESTS / EDL_FUZZ.
for (const part of ['platform', 'binding', 'recordio', 'tfrecord', 'prefetch', 'third_party']) {
  cpSync(join(repoRoot, 'native', part), join(sourceDir, 'native', part), { recursive: true });
}
const bundled = bundle(sourceDir, Object.keys(sourceTemplate.dependencies));
const sourceManifest = { ...sourceTemplate, dependencies: bundled };
writeFileSync(join(sourceDir, 'package.json'), `${JSON.stringify(sourceManifest, null, 2)}\n`);
packed.push(npmPack(sourceDir));

// ---- check and report ----
rmSync(stageDir, { recursive: true, force: true });
for (const file of packed) {
  const manifest = JSON.parse(run('tar', ['-xzOf', file, 'package/package.json'], outDir));
  if (manifest.version !== version) fail(`${file} has version ${manifest.version}, not ${version}`);
  const size = statSync(join(outDir, file)).size;
  console.log(`pack:all: ${manifest.name}@${manifest.version}  ${file}  ${(size / 1024).toFixed(0)} KiB`);
}
console.log(`pack:all: ${packed.length} tarballs in ${relative(process.cwd(), outDir) || '.'}`);
