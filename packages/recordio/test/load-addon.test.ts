import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadNativeAddon, nativeInfo, platformPackageName, RecordIOError } from '../src/index.js';

const scratch = mkdtempSync(join(tmpdir(), 'edl-recordio-load-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('native addon loader', () => {
  it('loads the addon and checks its N-API version', () => {
    const info = nativeInfo();
    expect(info.napiVersion).toBeLessThanOrEqual(Number(process.versions.napi));
    expect(info.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(typeof info.crc32).toBe('string');
  });

  it('names the platform package', () => {
    expect(platformPackageName('linux', 'x64', 'gnu')).toBe('@edl/native-linux-x64-gnu');
    expect(platformPackageName('darwin', 'arm64', null)).toBe('@edl/native-darwin-arm64');
  });

  it('EDL_NATIVE_PATH pointing at nothing: one error saying what was tried and how to fix it', () => {
    const missing = join(scratch, 'nothing-here.node');
    let thrown: unknown;
    try {
      loadNativeAddon({ env: { EDL_NATIVE_PATH: missing } });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(RecordIOError);
    const e = thrown as RecordIOError;
    expect(e.code).toBe('NATIVE_LOAD');
    expect(e.message).toContain(`EDL_NATIVE_PATH=${missing} (Cannot find module '${missing}'`);
    expect(e.message).toContain('point EDL_NATIVE_PATH at a built edl_native.node, or unset it');
    expect(e.message).not.toContain('\n');
    expect((e.cause as { code?: string }).code).toBe('MODULE_NOT_FOUND');
  });

  it('a file that is not an addon: the dlopen error is chained as the cause', () => {
    const fake = join(scratch, 'fake.node');
    writeFileSync(fake, 'not a shared object');
    expect(() => loadNativeAddon({ env: { EDL_NATIVE_PATH: fake } })).toThrow(/NATIVE_LOAD: .*fake\.node/);
  });

  it('no platform package and no local build: lists both and both fixes', () => {
    let message = '';
    try {
      loadNativeAddon({ env: {}, startDir: scratch });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain(`${platformPackageName()} (not installed)`);
    expect(message).toContain(`local build (build/Release/edl_native.node above ${scratch}) (not found)`);
    expect(message).toContain(`pnpm add ${platformPackageName()}`);
    expect(message).toContain('`pnpm run build:native` (needs cmake and a C++17 compiler)');
  });

  it('refuses an addon that needs a newer N-API than this Node.js', () => {
    expect(() => loadNativeAddon({ env: {}, nodeNapiVersion: 1 })).toThrow(/needs N-API \d+ but Node\.js/);
  });
});
