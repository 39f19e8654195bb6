import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  loadNativeAddon,
  nativeInfo,
  platformPackageName,
  RecordIOError,
  SOURCE_PACKAGE,
} from '../src/index.js';
import { detectLibc } from '../src/native/load-addon.js';

const scratch = mkdtempSync(join(tmpdir(), 'edl-recordio-load-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The NATIVE_LOAD error of a load that must fail. */
function loadError(options: Parameters<typeof loadNativeAddon>[0]): RecordIOError {
  try {
    loadNativeAddon(options);
  } catch (error) {
    expect(error).toBeInstanceOf(RecordIOError);
    expect((error as RecordIOError).code).toBe('NATIVE_LOAD');
    expect((error as Error).message).not.toContain('\n');
    return error as RecordIOError;
  }
  throw new Error('the addon loaded');
}

/** A directory whose node_modules holds only what `files` lists (path -> content). */
function project(name: string, files: Record<string, string>): string {
  const dir = join(scratch, name);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  mkdirSync(dir, { recursive: true });
  return dir;
}

describe('native addon loader', () => {
  it('loads the addon and checks its N-API version', () => {
    const info = nativeInfo();
    expect(info.napiVersion).toBeLessThanOrEqual(Number(process.versions.napi));
    expect(info.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(typeof info.crc32).toBe('string');
  });

  it('names the platform package', () => {
    expect(platformPackageName('linux', 'x64', 'gnu')).toBe('@edl/native-linux-x64-gnu');
    expect(platformPackageName('linux', 'arm64', 'musl')).toBe('@edl/native-linux-arm64-musl');
    expect(platformPackageName('darwin', 'arm64', null)).toBe('@edl/native-darwin-arm64');
    expect(platformPackageName('win32', 'x64')).toBe('@edl/native-win32-x64-gnu');
    if (process.platform === 'linux')
      expect(platformPackageName()).toMatch(/^@edl\/native-linux-\w+-(gnu|musl)$/);
  });

  it.runIf(process.platform === 'linux')('tells glibc from musl as the runtime report does', () => {
    const report = process.report.getReport() as { header?: { glibcVersionRuntime?: string } };
    expect(detectLibc()).toBe(report.header?.glibcVersionRuntime === undefined ? 'musl' : 'gnu');
  });

  it('EDL_NATIVE_PATH pointing at nothing: one error saying what was tried and how to fix it', () => {
    const missing = join(scratch, 'nothing-here.node');
    const e = loadError({ env: { EDL_NATIVE_PATH: missing } });
    expect(e.message).toContain(`EDL_NATIVE_PATH=${missing} (Cannot find module '${missing}'`);
    expect(e.message).toContain('point EDL_NATIVE_PATH at a built edl_native.node, or unset it');
    expect((e.cause as { code?: string }).code).toBe('MODULE_NOT_FOUND');
  });

  it('a file that is not an addon: the dlopen error is chained as the cause', () => {
    const fake = join(scratch, 'fake.node');
    writeFileSync(fake, 'not a shared object');
    const e = loadError({ env: { EDL_NATIVE_PATH: fake } });
    expect(e.message).toMatch(
      /^NATIVE_LOAD: cannot load .*fake\.node \(.*(invalid ELF header|file too short|not a mach-o)/i,
    );
    expect(e.cause).toBeInstanceOf(Error);
  });

  it('no platform package, no source build, no local build: lists each and the commands that fix it', () => {
    const e = loadError({ env: {}, startDir: scratch, resolveFrom: project('empty', {}) });
    const pkg = platformPackageName();
    expect(e.message).toContain(`Tried: ${pkg} (not installed); ${SOURCE_PACKAGE} (not installed); `);
    expect(e.message).toContain(`local build (build/Release/edl_native.node above ${scratch}) (not found)`);
    expect(e.message).toMatch(new RegExp(`npm install ${pkg}@\\d+\\.\\d+\\.\\d+ \\(an optional dependency`));
    expect(e.message).toMatch(
      /or build from source: npm install @edl\/native-source@\d+\.\d+\.\d+, then npx edl-build-native/,
    );
    expect(e.message).toContain('in a clone of the repository: pnpm run build:native');
    expect(e.cause).toBeUndefined();
  });

  it('a platform without a published prebuilt: says so and gives only the build from source', () => {
    const e = loadError({
      env: {},
      startDir: scratch,
      resolveFrom: project('riscv', {}),
      platformPackage: '@edl/native-linux-riscv64-gnu',
      publishedPackages: ['@edl/native-linux-x64-gnu', '@edl/native-darwin-arm64'],
    });
    expect(e.message).toContain(
      'Fix: no prebuilt package is published for this platform (linux-riscv64-gnu), so build',
    );
    expect(e.message).not.toContain('npm install @edl/native-linux-riscv64-gnu');
  });

  it('the source package installed but not built: says to run edl-build-native', () => {
    const dir = project('unbuilt', {
      'node_modules/@edl/native-source/package.json': JSON.stringify({
        name: SOURCE_PACKAGE,
        version: '0.0.0',
      }),
    });
    const e = loadError({ env: {}, startDir: scratch, resolveFrom: dir });
    expect(e.message).toContain(`${SOURCE_PACKAGE} (installed but not built: run npx edl-build-native)`);
  });

  it('a broken platform package: its load error is the cause, and the next candidate is tried', () => {
    const pkg = platformPackageName();
    const dir = project('broken', {
      [`node_modules/${pkg}/package.json`]: JSON.stringify({
        name: pkg,
        version: '0.0.0',
        main: 'edl_native.node',
      }),
      [`node_modules/${pkg}/edl_native.node`]: 'truncated download',
    });
    const e = loadError({ env: {}, startDir: scratch, resolveFrom: dir });
    expect(e.message).toMatch(
      new RegExp(`Tried: ${pkg} \\(.*edl_native\\.node.*\\); ${SOURCE_PACKAGE} \\(not installed\\)`),
    );
    expect(e.cause).toBeInstanceOf(Error);
    expect(String((e.cause as Error).message)).toContain(join(dir, 'node_modules', pkg, 'edl_native.node'));
  });

  it('refuses an addon that needs a newer N-API than this Node.js', () => {
    expect(() => loadNativeAddon({ env: {}, nodeNapiVersion: 1 })).toThrow(/needs N-API \d+ but Node\.js/);
  });
});
