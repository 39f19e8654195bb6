import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RecordIOError } from '../errors.js';
import type { NativeAddon } from './addon-types.js';

/** Environment variable naming an `edl_native.node` to load instead of any other. */
export const NATIVE_PATH_ENV = 'EDL_NATIVE_PATH';

/** Where a local build puts the addon, relative to the repository root. */
const LOCAL_BUILD = join('build', 'Release', 'edl_native.node');

/** One place the loader looked, and what happened there. */
export interface LoadAttempt {
  /** What was tried, e.g. `EDL_NATIVE_PATH=/x.node` or `@edl/native-linux-x64-gnu`. */
  readonly source: string;
  /** Why it was not used. */
  readonly reason: string;
}

/** Inputs of {@link loadNativeAddon}; the defaults are those of this process. */
export interface LoadAddonOptions {
  /** Environment to read {@link NATIVE_PATH_ENV} from. */
  readonly env?: NodeJS.ProcessEnv;
  /** Directory to start the walk up for a local `build/Release/edl_native.node`. */
  readonly startDir?: string;
  /** The N-API version of this Node.js (`process.versions.napi`). */
  readonly nodeNapiVersion?: number;
}

/**
 * The name of the prebuilt addon package for this platform, e.g. `@edl/native-linux-x64-gnu`.
 * On Linux the C library is part of the name, since a glibc build does not load on musl; pass
 * `libc: null` for platforms without one in the name.
 */
export function platformPackageName(
  platform: string = process.platform,
  arch: string = process.arch,
  libc: string | null = detectLibc() ?? null,
): string {
  return libc === null ? `@edl/native-${platform}-${arch}` : `@edl/native-${platform}-${arch}-${libc}`;
}

/** `gnu` or `musl` on Linux, undefined elsewhere. */
export function detectLibc(): string | undefined {
  if (process.platform !== 'linux') return undefined;
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return report?.header?.glibcVersionRuntime === undefined ? 'musl' : 'gnu';
}

/** Walks up from `startDir` to the first directory holding build/Release/edl_native.node. */
export function findLocalBuild(startDir: string): string | undefined {
  let dir = startDir;
  for (;;) {
    const candidate = join(dir, LOCAL_BUILD);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/**
 * Loads the native addon without caching. Tries, in order:
 * 1. `EDL_NATIVE_PATH`, when set. It is then the only candidate: an explicit choice that fails must
 *    not be silently replaced by some other binary.
 * 2. the prebuilt platform package ({@link platformPackageName}); a missing package is normal;
 * 3. a local build: the first `build/Release/edl_native.node` found walking up from this module.
 *
 * Each candidate must target an N-API version this Node.js provides. When none loads, throws one
 * RecordIOError (`NATIVE_LOAD`) listing every attempt and the fixes, with the load errors chained as
 * `cause`.
 */
export function loadNativeAddon(options: LoadAddonOptions = {}): NativeAddon {
  const env = options.env ?? process.env;
  const startDir = options.startDir ?? dirname(fileURLToPath(import.meta.url));
  const nodeNapi = options.nodeNapiVersion ?? Number(process.versions.napi);
  const require = createRequire(import.meta.url);
  const attempts: LoadAttempt[] = [];
  const causes: unknown[] = [];

  const tryLoad = (source: string, specifier: string, missingIsNormal: boolean): NativeAddon | undefined => {
    let loaded: unknown;
    try {
      loaded = require(specifier);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (
        missingIsNormal &&
        code === 'MODULE_NOT_FOUND' &&
        String((error as Error).message).includes(specifier)
      ) {
        attempts.push({ source, reason: 'not installed' });
      } else {
        attempts.push({ source, reason: firstLine(error) });
        causes.push(error);
      }
      return undefined;
    }
    const addon = loaded as Partial<NativeAddon>;
    if (typeof addon.napiVersion !== 'number' || typeof addon.openReader !== 'function') {
      attempts.push({ source, reason: 'not an elasticdl-ts addon (no napiVersion/openReader exports)' });
      return undefined;
    }
    if (addon.napiVersion > nodeNapi) {
      attempts.push({
        source,
        reason: `needs N-API ${addon.napiVersion} but Node.js ${process.version} provides N-API ${nodeNapi}`,
      });
      return undefined;
    }
    return addon as NativeAddon;
  };

  const override = env[NATIVE_PATH_ENV];
  if (override !== undefined && override !== '') {
    const addon = tryLoad(`${NATIVE_PATH_ENV}=${override}`, override, false);
    if (addon !== undefined) return addon;
  } else {
    const pkg = platformPackageName();
    const fromPackage = tryLoad(pkg, pkg, true);
    if (fromPackage !== undefined) return fromPackage;
    const local = findLocalBuild(startDir);
    if (local === undefined) {
      attempts.push({ source: `local build (${LOCAL_BUILD} above ${startDir})`, reason: 'not found' });
    } else {
      const fromBuild = tryLoad(`local build ${local}`, local, false);
      if (fromBuild !== undefined) return fromBuild;
    }
  }
  throw loadError(attempts, causes, override !== undefined && override !== '');
}

function loadError(attempts: LoadAttempt[], causes: unknown[], overridden: boolean): RecordIOError {
  const tried = attempts.map((a) => `${a.source} (${a.reason})`).join('; ');
  const fixes = overridden
    ? `point ${NATIVE_PATH_ENV} at a built edl_native.node, or unset it to use the installed one`
    : `install the prebuilt package for this platform (pnpm add ${platformPackageName()}), ` +
      'or build from source with `pnpm run build:native` (needs cmake and a C++17 compiler)';
  return new RecordIOError(
    'NATIVE_LOAD',
    `cannot load the elasticdl-ts native addon. Tried: ${tried}. Fix: ${fixes}`,
    {
      cause: causes.length === 0 ? undefined : causes.length === 1 ? causes[0] : new AggregateError(causes),
    },
  );
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const newline = text.indexOf('\n');
  return newline < 0 ? text : text.slice(0, newline);
}

let cached: NativeAddon | undefined;

/** The addon, loaded on first use and then shared. Loading failures are not cached: a retry may succeed. */
export function getAddon(): NativeAddon {
  cached ??= loadNativeAddon();
  return cached;
}
