import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RecordIOError } from '../errors.js';
import type { NativeAddon } from './addon-types.js';

/** Environment variable naming an `edl_native.node` to load instead of any other. */
export const NATIVE_PATH_ENV = 'EDL_NATIVE_PATH';

/** The package with the C++ sources and `edl-build-native`, for platforms without a prebuilt. */
export const SOURCE_PACKAGE = '@edl/native-source';

/** Where a build puts the addon, relative to the repository root or to {@link SOURCE_PACKAGE}. */
const LOCAL_BUILD = join('build', 'Release', 'edl_native.node');

/** One place the loader looked, and what happened there. */
export interface LoadAttempt {
  /** What was tried, e.g. `EDL_NATIVE_PATH=/x.node` or `@edl/native-linux-x64-gnu`. */
  readonly source: string;
  /** Why it was not used. */
  readonly reason: string;
}

/** Inputs of {@link loadNativeAddon}; the defaults are those of this process and this package. */
export interface LoadAddonOptions {
  /** Environment to read {@link NATIVE_PATH_ENV} from. */
  readonly env?: NodeJS.ProcessEnv;
  /** Directory to start the walk up for a local `build/Release/edl_native.node`. */
  readonly startDir?: string;
  /** The N-API version of this Node.js (`process.versions.napi`). */
  readonly nodeNapiVersion?: number;
  /** Directory the platform and source packages are resolved from (default: this module's). */
  readonly resolveFrom?: string;
  /** The prebuilt package to try (default: {@link platformPackageName} of this process). */
  readonly platformPackage?: string;
  /**
   * The prebuilt packages published with this version: the `optionalDependencies` of @edl/recordio,
   * which `pack:all` fills in. Undefined (as in a repository checkout) when not known.
   */
  readonly publishedPackages?: readonly string[];
}

/**
 * The name of the prebuilt addon package for this platform, e.g. `@edl/native-linux-x64-gnu`,
 * `@edl/native-darwin-arm64`, `@edl/native-win32-x64-gnu`. The third part is the C library on Linux
 * (a glibc build does not load on musl) and the toolchain on Windows (`gnu`: mingw-w64, whose runtime
 * is linked into the addon, so it loads in any Node.js for Windows); pass `null` for none.
 */
export function platformPackageName(
  platform: string = process.platform,
  arch: string = process.arch,
  abi: string | null = defaultAbi(platform),
): string {
  return abi === null ? `@edl/native-${platform}-${arch}` : `@edl/native-${platform}-${arch}-${abi}`;
}

function defaultAbi(platform: string): string | null {
  if (platform === 'win32') return 'gnu';
  return platform === process.platform ? (detectLibc() ?? null) : null;
}

/** `gnu` or `musl` on Linux, undefined elsewhere. */
export function detectLibc(): string | undefined {
  if (process.platform !== 'linux') return undefined;
  // ldd says which C library it belongs to: a small file read, where a diagnostic report (the
  // fallback) costs 15-20 ms of every process's start-up, and more on hosts with many interfaces.
  try {
    const ldd = readFileSync('/usr/bin/ldd', 'latin1');
    if (ldd.includes('musl')) return 'musl';
    if (ldd.includes('GNU C Library') || ldd.includes('GLIBC')) return 'gnu';
  } catch {
    // No ldd (a distroless image): ask the runtime.
  }
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

/** Version and prebuilt packages of the installed @edl/recordio (from its package.json). */
function ownManifest(): { version: string; published: string[] | undefined } {
  // src/native/ and dist/native/ are both two levels below the package root.
  const manifest = createRequire(import.meta.url)('../../package.json') as {
    version: string;
    optionalDependencies?: Record<string, string>;
  };
  const published =
    manifest.optionalDependencies === undefined ? undefined : Object.keys(manifest.optionalDependencies);
  return { version: manifest.version, published };
}

/**
 * Loads the native addon without caching. Tries, in order:
 * 1. `EDL_NATIVE_PATH`, when set. It is then the only candidate: an explicit choice that fails must
 *    not be silently replaced by some other binary.
 * 2. the prebuilt platform package ({@link platformPackageName}), an optional dependency of
 *    @edl/recordio; a missing package is normal;
 * 3. a build from source: `npx edl-build-native` of {@link SOURCE_PACKAGE}, when it is installed;
 * 4. a local build: the first `build/Release/edl_native.node` found walking up from this module (a
 *    repository checkout after `pnpm run build:native`).
 *
 * Each candidate must target an N-API version this Node.js provides. When none loads, throws one
 * RecordIOError (`NATIVE_LOAD`) listing every attempt and exactly what to install or run, with the
 * load errors chained as `cause`.
 */
export function loadNativeAddon(options: LoadAddonOptions = {}): NativeAddon {
  const env = options.env ?? process.env;
  const startDir = options.startDir ?? dirname(fileURLToPath(import.meta.url));
  const nodeNapi = options.nodeNapiVersion ?? Number(process.versions.napi);
  const require =
    options.resolveFrom === undefined
      ? createRequire(import.meta.url)
      : createRequire(join(options.resolveFrom, 'noop.js'));
  const attempts: LoadAttempt[] = [];
  const causes: unknown[] = [];

  const isMissing = (error: unknown, specifier: string): boolean =>
    (error as { code?: unknown }).code === 'MODULE_NOT_FOUND' &&
    String((error as Error).message).includes(specifier);

  const tryLoad = (source: string, specifier: string, missingIsNormal: boolean): NativeAddon | undefined => {
    let loaded: unknown;
    try {
      loaded = require(specifier);
    } catch (error) {
      if (missingIsNormal && isMissing(error, specifier)) {
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

  const trySourceBuild = (): NativeAddon | undefined => {
    let packageDir: string;
    try {
      packageDir = dirname(require.resolve(`${SOURCE_PACKAGE}/package.json`));
    } catch (error) {
      if (!isMissing(error, SOURCE_PACKAGE)) causes.push(error);
      attempts.push({
        source: SOURCE_PACKAGE,
        reason: isMissing(error, SOURCE_PACKAGE) ? 'not installed' : firstLine(error),
      });
      return undefined;
    }
    const built = join(packageDir, LOCAL_BUILD);
    if (!existsSync(built)) {
      attempts.push({ source: SOURCE_PACKAGE, reason: 'installed but not built: run npx edl-build-native' });
      return undefined;
    }
    return tryLoad(`${SOURCE_PACKAGE} build ${built}`, built, false);
  };

  const override = env[NATIVE_PATH_ENV];
  const overridden = override !== undefined && override !== '';
  const pkg = options.platformPackage ?? platformPackageName();
  if (overridden) {
    const path = resolve(override);
    const addon = tryLoad(`${NATIVE_PATH_ENV}=${override}`, path, false);
    if (addon !== undefined) return addon;
  } else {
    const fromPackage = tryLoad(pkg, pkg, true);
    if (fromPackage !== undefined) return fromPackage;
    const fromSource = trySourceBuild();
    if (fromSource !== undefined) return fromSource;
    const local = findLocalBuild(startDir);
    if (local === undefined) {
      attempts.push({ source: `local build (${LOCAL_BUILD} above ${startDir})`, reason: 'not found' });
    } else {
      const fromBuild = tryLoad(`local build ${local}`, local, false);
      if (fromBuild !== undefined) return fromBuild;
    }
  }
  const own = ownManifest();
  throw loadError(attempts, causes, {
    overridden,
    pkg,
    version: own.version,
    published: options.publishedPackages ?? own.published,
  });
}

/** The `engines` floor of every package (README, "Requirements"). */
const ENGINES_FLOOR = '22.12';

/**
 * npm installs no optional dependency whose `engines` the running Node.js fails, so on an older
 * Node the platform package is silently left out: say so rather than send the user hunting.
 */
function belowEnginesFloor(): boolean {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  return major < 22 || (major === 22 && minor < 12);
}

interface FixContext {
  readonly overridden: boolean;
  readonly pkg: string;
  readonly version: string;
  readonly published: readonly string[] | undefined;
}

/** One line: what was tried, then the commands that fix it, most likely first. */
function loadError(attempts: LoadAttempt[], causes: unknown[], context: FixContext): RecordIOError {
  const tried = attempts.map((a) => `${a.source} (${a.reason})`).join('; ');
  const { overridden, pkg, version, published } = context;
  const fromSource =
    `build from source: npm install ${SOURCE_PACKAGE}@${version}, then npx edl-build-native ` +
    '(needs cmake, make and a C++17 compiler)';
  const inRepo = 'in a clone of the repository: pnpm run build:native';
  let fixes: string;
  if (overridden) {
    fixes = `point ${NATIVE_PATH_ENV} at a built edl_native.node, or unset it to use the installed one`;
  } else if (published !== undefined && !published.includes(pkg)) {
    fixes = `no prebuilt package is published for this platform (${pkg.replace('@edl/native-', '')}), so ${fromSource}; ${inRepo}`;
  } else {
    fixes =
      `install the prebuilt package for this platform: npm install ${pkg}@${version} (an optional dependency ` +
      (belowEnginesFloor()
        ? `of @edl/recordio, which npm leaves out on Node.js ${process.version}, below the engines floor ${ENGINES_FLOOR}: use Node.js ${ENGINES_FLOOR} or later); `
        : 'of @edl/recordio, left out by --omit=optional or by a lockfile made on another platform); ') +
      `or ${fromSource}; ${inRepo}`;
  }
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
