#!/usr/bin/env node
// Builds the elasticdl-ts native addon from the sources in this package, with cmake-js (bundled in
// this package, so no download), into <this package>/build/Release/edl_native.node, where
// @edl/recordio looks for it when no prebuilt @edl/native-* package is installed.
//
//   npx edl-build-native [--jobs N]
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = dirname(dirname(fileURLToPath(import.meta.url)));
const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
const output = join(packageDir, 'build', 'Release', 'edl_native.node');
const require = createRequire(import.meta.url);

function fail(message, status = 1) {
  console.error(`edl-build-native: ${message}`);
  process.exit(status);
}

/** Whether `name` is an executable on PATH (with the PATHEXT suffixes on Windows). */
function onPath(name) {
  const suffixes = process.platform === 'win32' ? (process.env.PATHEXT ?? '.EXE').split(';') : [''];
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    for (const suffix of suffixes) {
      try {
        accessSync(join(dir, name + suffix), constants.X_OK);
        return true;
      } catch {
        // not here; keep looking
      }
    }
  }
  return false;
}

function parseJobs(argv) {
  const at = argv.indexOf('--jobs');
  if (at < 0) return availableParallelism();
  const jobs = Number(argv[at + 1]);
  if (!Number.isInteger(jobs) || jobs < 1) {
    fail(`Expected a positive integer for --jobs but received ${argv[at + 1]}`, 2);
  }
  return jobs;
}

const jobs = parseJobs(process.argv.slice(2));

// Say what is missing before cmake-js does, in one message, with the fix.
const missing = [];
if (!onPath('cmake')) missing.push('cmake (3.19 or newer)');
const compilers = process.platform === 'win32' ? ['cl'] : ['c++', 'g++', 'clang++'];
if (process.env.CXX === undefined && !compilers.some(onPath))
  missing.push('a C++17 compiler (g++ 8+ or clang 7+)');
if (process.platform !== 'win32' && !onPath('make') && !onPath('ninja')) missing.push('make or ninja');
if (missing.length > 0) {
  fail(
    `cannot build the elasticdl-ts native addon ${version} from source: ${missing.join(', ')} not found on PATH. ` +
      'Install them (Debian/Ubuntu: apt-get install cmake g++ make; Alpine: apk add cmake g++ make; ' +
      'macOS: xcode-select --install and brew install cmake; Windows: Visual Studio Build Tools and CMake), ' +
      'then run npx edl-build-native again.',
  );
}

const cmakeJs = join(dirname(require.resolve('cmake-js/package.json')), 'bin', 'cmake-js');
console.log(`edl-build-native: building the elasticdl-ts native addon ${version} with ${jobs} job(s)`);
const result = spawnSync(
  process.execPath,
  [
    cmakeJs,
    'compile',
    '--directory',
    packageDir,
    '--out',
    join(packageDir, 'build'),
    '--parallel',
    String(jobs),
    '--CDCMAKE_BUILD_TYPE=Release',
    `--CDEDL_VERSION=${version}`,
  ],
  { cwd: packageDir, stdio: 'inherit' },
);
if (result.error !== undefined) fail(`cannot run cmake-js: ${result.error.message}`);
if (result.status !== 0)
  fail(`the build failed (cmake-js exit status ${result.status}); see the output above`);
if (!existsSync(output)) fail(`the build finished but ${output} is missing`);

// Load what was built, as @edl/recordio will: a binary that does not load is not a success.
let addon;
try {
  addon = require(output);
} catch (error) {
  fail(`built ${output}, but it does not load: ${error instanceof Error ? error.message : String(error)}`);
}
if (addon.version !== version)
  fail(`built ${output}, but it reports version ${addon.version}, not ${version}`);
console.log(`edl-build-native: built ${output} (N-API ${addon.napiVersion}); @edl/recordio will load it`);
