#!/usr/bin/env node
// Generates npm/<target>/{package.json,README.md} for every target in npm/targets.json, so that the
// per-platform prebuilt packages have one source of truth. The .node binary is never kept in npm/:
// pack:all copies it into a staging directory next to these two files.
//
//   node scripts/platform-packages.mjs          write the directories
//   node scripts/platform-packages.mjs --check  fail if they are not what the target list gives
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = dirname(dirname(fileURLToPath(import.meta.url)));
export const npmDir = join(repoRoot, 'npm');
/** File name of the addon inside a platform package (its `main`). */
export const ADDON_FILE = 'edl_native.node';
/** The licenses of the vendored code compiled into the addon, shipped beside it. */
export const THIRD_PARTY_FILE = 'THIRD_PARTY_LICENSES';

/** Vendored libraries linked into edl_native.node (see native/third_party/README.md). */
const THIRD_PARTY = [
  {
    name: 'snappy',
    version: '1.1.9',
    license: 'BSD-3-Clause',
    dir: 'snappy',
    url: 'https://github.com/google/snappy',
  },
  {
    name: 'libdeflate',
    version: '1.14',
    license: 'MIT',
    dir: 'libdeflate',
    url: 'https://github.com/ebiggers/libdeflate',
  },
];

const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'));

/** The @edl/recordio manifest: its version is the version of every package we ship. */
export function recordioManifest() {
  return readJson(join(repoRoot, 'packages', 'recordio', 'package.json'));
}

/** The target list, e.g. `{ target: 'linux-x64-gnu', os: 'linux', cpu: 'x64', libc: 'glibc' }`. */
export function readTargets() {
  return readJson(join(npmDir, 'targets.json')).targets;
}

/** `@edl/native-linux-x64-gnu` for target `linux-x64-gnu`. */
export function platformPackageName(target) {
  return `@edl/native-${target.target}`;
}

const OS_NAMES = { linux: 'Linux', darwin: 'macOS', win32: 'Windows' };

function describe(target) {
  const libc = target.libc === undefined ? '' : ` (${target.libc})`;
  return `${OS_NAMES[target.os] ?? target.os} ${target.cpu}${libc}`;
}

/** package.json of one platform package: only the binary, the platform fields and the version. */
export function platformManifest(target, recordio = recordioManifest()) {
  const manifest = {
    name: platformPackageName(target),
    version: recordio.version,
    description: `Prebuilt elasticdl-ts native addon (N-API) for ${describe(target)}; installed by @edl/recordio`,
    license: recordio.license,
    repository: { ...recordio.repository, directory: `npm/${target.target}` },
    homepage: recordio.homepage,
    bugs: recordio.bugs,
    os: [target.os],
    cpu: [target.cpu],
  };
  if (target.libc !== undefined) manifest.libc = [target.libc];
  Object.assign(manifest, {
    engines: recordio.engines,
    main: ADDON_FILE,
    files: [ADDON_FILE, 'LICENSE', THIRD_PARTY_FILE],
    preferUnplugged: true,
  });
  return manifest;
}

export function platformReadme(target, recordio = recordioManifest()) {
  const name = platformPackageName(target);
  return `# ${name}

The native addon of [@edl/recordio](${recordio.homepage}) prebuilt for
${describe(target)}. Do not install it directly: @edl/recordio lists it as an optional dependency
(same version, ${recordio.version}) and npm or pnpm installs the one matching your platform, using
its \`os\`, \`cpu\`${target.libc === undefined ? '' : ' and `libc`'} fields. It holds only
\`${ADDON_FILE}\` (its \`main\`) and runs no install script.

Built on: ${target.buildOn}. Generated from \`npm/targets.json\` by \`scripts/platform-packages.mjs\`.
`;
}

/**
 * THIRD_PARTY_LICENSES of the platform packages and @edl/native-source: the license of each
 * vendored library compiled into the addon, verbatim from native/third_party/<lib>/COPYING.
 */
export function thirdPartyLicenses() {
  const parts = THIRD_PARTY.map(({ name, version, license, dir, url }) => {
    const text = readFileSync(join(repoRoot, 'native', 'third_party', dir, 'COPYING'), 'utf8').trimEnd();
    return `${'-'.repeat(100)}\n${name} ${version} (${license}), ${url}\n\n${text}\n`;
  });
  return `The elasticdl-ts native addon (edl_native.node, Apache-2.0, see LICENSE) contains code of these
libraries, compiled from the sources in native/third_party/ of the elasticdl-ts repository:
${THIRD_PARTY.map((t) => `  ${t.name} ${t.version} (${t.license})`).join('\n')}

${parts.join('\n')}`;
}

/** Writes (or with check: compares) npm/<target>/ for every target; returns the stale files. */
export function generate({ check = false } = {}) {
  const recordio = recordioManifest();
  const stale = [];
  for (const target of readTargets()) {
    const dir = join(npmDir, target.target);
    const files = {
      'package.json': `${JSON.stringify(platformManifest(target, recordio), null, 2)}\n`,
      'README.md': platformReadme(target, recordio),
    };
    for (const [file, text] of Object.entries(files)) {
      const path = join(dir, file);
      let current;
      try {
        current = readFileSync(path, 'utf8');
      } catch {
        current = undefined;
      }
      if (current === text) continue;
      stale.push(path);
      if (!check) {
        mkdirSync(dir, { recursive: true });
        writeFileSync(path, text);
      }
    }
  }
  return stale;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  const stale = generate({ check });
  if (check && stale.length > 0) {
    console.error(`out of date (run node scripts/platform-packages.mjs): ${stale.join(', ')}`);
    process.exit(1);
  }
  console.log(check ? 'npm/ is up to date' : `wrote ${stale.length} file(s) under npm/`);
}
