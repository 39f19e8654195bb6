// An npm registry on 127.0.0.1 for install tests: it serves the tarballs of `pack:all` and, for
// everything they depend on, the very package versions this checkout has installed, each packed
// the way the registry ships it (a tarball of `package/...`). npm resolves, fetches, checks
// integrity, extracts and runs install scripts as it does for a user; nothing leaves the machine.
// A platform-specific optional dependency that this host does not have (another target's
// @edl/native-*, @esbuild/*, fsevents) answers 404, which npm skips as it would skip the package
// for another os or cpu.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly dependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  readonly bundleDependencies?: readonly string[];
  readonly [field: string]: unknown;
}

interface Served {
  readonly manifest: Manifest;
  readonly file: string;
}

/** What the registry serves, what was asked of it, and how to stop it. */
export interface LocalRegistry {
  /** The registry URL for npm's `registry` setting. */
  readonly url: string;
  /** `name@version` of every package it serves. */
  readonly packages: readonly string[];
  /**
   * Optional dependencies not installed here (other platforms) and optional peers that nothing
   * installs: they answer 404.
   */
  readonly skippedOptional: ReadonlySet<string>;
  /** Every request path, in order. */
  readonly requests: readonly string[];
  /** `name@version` of every tarball fetched, in order. */
  readonly fetched: readonly string[];
  /** Package names that were asked for and answered 404. */
  readonly notFound: readonly string[];
  close(): Promise<void>;
}

/** Options of {@link startLocalRegistry}. */
export interface LocalRegistryOptions {
  /** The directory `pack:all` wrote: each of its tarballs is served as is. */
  readonly packDir: string;
  /**
   * The packages the user installs (`npm install <names>`): the registry serves them and all they
   * need. Names that pack:all did not pack are resolved from the repository root.
   */
  readonly install: readonly string[];
  /** Where packed third-party tarballs are kept between runs, by name@version. */
  readonly cacheDir: string;
  readonly log?: (line: string) => void;
}

/** Packs what is needed and listens on 127.0.0.1 (a free port). */
export async function startLocalRegistry(options: LocalRegistryOptions): Promise<LocalRegistry> {
  const log = options.log ?? (() => {});
  const own = new Map<string, Served>(); // pack:all's tarballs by package name
  for (const file of readdirSync(options.packDir).filter((f) => f.endsWith('.tgz'))) {
    const path = join(options.packDir, file);
    const manifest = tarballManifest(path);
    own.set(manifest.name, { manifest, file: path });
  }
  const started = performance.now();
  const { ownNames, dirs, skippedOptional } = closure(options.install, own);
  const served = ownNames.map((name) => own.get(name) as Served);
  let packed = 0;
  for (const dir of dirs) {
    const manifest = readJson(join(dir, 'package.json'));
    const { file, fresh } = packInstalled(dir, manifest, options.cacheDir);
    if (fresh) packed++;
    served.push({ manifest, file });
  }
  log(
    `local registry: ${served.length} packages (${dirs.length} third-party: ${packed} packed now, ` +
      `the rest from ${options.cacheDir}) in ${((performance.now() - started) / 1000).toFixed(1)}s`,
  );

  const requests: string[] = [];
  const notFound: string[] = [];
  const tarballs = new Map<string, Served>(); // by URL path
  const fetched: string[] = [];
  let packuments = new Map<string, string>();
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://127.0.0.1').pathname;
    requests.push(path);
    const tarball = tarballs.get(path);
    if (tarball !== undefined) {
      fetched.push(`${tarball.manifest.name}@${tarball.manifest.version}`);
      response.writeHead(200, { 'content-type': 'application/octet-stream' });
      response.end(readFileSync(tarball.file));
      return;
    }
    const name = decodeURIComponent(path.slice(1));
    const packument = packuments.get(name);
    if (packument === undefined) {
      notFound.push(name);
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: 'Not found' }));
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(packument);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  packuments = buildPackuments(served, url, tarballs);
  return {
    url,
    packages: served.map((s) => `${s.manifest.name}@${s.manifest.version}`),
    skippedOptional,
    requests,
    fetched,
    notFound,
    close: () => new Promise((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  };
}

/** One packument per name, as npm's registry answers `GET /<name>`; fills `tarballs`. */
function buildPackuments(served: readonly Served[], url: string, tarballs: Map<string, Served>) {
  const byName = new Map<string, Served[]>();
  for (const s of served) byName.set(s.manifest.name, [...(byName.get(s.manifest.name) ?? []), s]);
  const packuments = new Map<string, string>();
  for (const [name, versions] of byName) {
    const entries = versions.map((version) => {
      const { manifest, file } = version;
      const bytes = readFileSync(file);
      const path = `/-/tarballs/${name.replace('/', '__')}-${manifest.version}.tgz`;
      tarballs.set(path, version);
      const dist = {
        tarball: new URL(path.slice(1), url).href,
        integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
        shasum: createHash('sha1').update(bytes).digest('hex'),
      };
      return [manifest.version, { ...manifest, _id: `${name}@${manifest.version}`, dist }] as const;
    });
    const latest = entries
      .map(([v]) => v)
      .sort(compareVersions)
      .at(-1) as string;
    packuments.set(
      name,
      JSON.stringify({ name, 'dist-tags': { latest }, versions: Object.fromEntries(entries) }),
    );
  }
  return packuments;
}

/**
 * What installing `install` needs: the names of pack:all's packages among them, and the installed
 * directories of every third-party package: dependencies, optional dependencies and required
 * peers, resolved the way Node.js does from each package's real directory (pnpm's layout; for a
 * packed workspace package, its directory in this checkout). An optional dependency that is not
 * installed here, and an optional peer, are left out; a missing required dependency throws.
 */
function closure(
  install: readonly string[],
  own: ReadonlyMap<string, Served>,
): { ownNames: string[]; dirs: string[]; skippedOptional: Set<string> } {
  const queue: { name: string; from: string; optional: boolean; by: string }[] = install.map((name) => ({
    name,
    from: REPO_ROOT,
    optional: false,
    by: 'npm install',
  }));
  const enqueue = (manifest: Manifest, from: string) => {
    const by = `${manifest.name}@${manifest.version}`;
    // Bundled dependencies come inside the tarball: npm asks the registry nothing about them.
    const bundled = new Set(manifest.bundleDependencies ?? []);
    for (const name of Object.keys(manifest.dependencies ?? {}).filter((d) => !bundled.has(d)))
      queue.push({ name, from, optional: false, by });
    for (const name of Object.keys(manifest.optionalDependencies ?? {}))
      queue.push({ name, from, optional: true, by });
    for (const name of Object.keys(manifest.peerDependencies ?? {})) {
      // npm asks for an optional peer's packument too, and installs it only if something else needs it.
      if (manifest.peerDependenciesMeta?.[name]?.optional === true) optionalPeers.add(name);
      else queue.push({ name, from, optional: false, by });
    }
  };
  const optionalPeers = new Set<string>();
  const ownNames = new Set<string>();
  const dirs = new Set<string>();
  const skippedOptional = new Set<string>();
  const names = new Set<string>(); // third-party names served
  while (queue.length > 0) {
    const { name, from, optional, by } = queue.shift() as (typeof queue)[number];
    const packed = own.get(name);
    if (packed !== undefined) {
      if (ownNames.has(name)) continue;
      ownNames.add(name);
      enqueue(packed.manifest, workspaceDir(name));
      continue;
    }
    const dir = resolveInstalled(name, from) ?? (by === 'npm install' ? resolveInWorkspace(name) : undefined);
    if (dir === undefined) {
      if (optional) {
        skippedOptional.add(name);
        continue;
      }
      throw new Error(`local registry: ${name}, needed by ${by}, is not installed here: run pnpm install`);
    }
    if (dirs.has(dir)) continue;
    dirs.add(dir);
    names.add(name);
    enqueue(readJson(join(dir, 'package.json')), dir);
  }
  for (const name of optionalPeers) if (!ownNames.has(name) && !names.has(name)) skippedOptional.add(name);
  return { ownNames: [...ownNames], dirs: [...dirs], skippedOptional };
}

/** The real directory of package `name` as Node.js finds it from directory `from`. */
function resolveInstalled(name: string, from: string): string | undefined {
  for (let d = from; ; d = dirname(d)) {
    const candidate = join(d, 'node_modules', name, 'package.json');
    if (existsSync(candidate)) return realpathSync(dirname(candidate));
    if (dirname(d) === d) return undefined;
  }
}

/**
 * A package the user installs by name that the root does not have (pnpm links each package's
 * dependencies into its own node_modules only): as the first workspace package that has it finds it.
 */
function resolveInWorkspace(name: string): string | undefined {
  const packages = join(REPO_ROOT, 'packages');
  for (const entry of readdirSync(packages).sort()) {
    const candidate = join(packages, entry, 'node_modules', name, 'package.json');
    if (existsSync(candidate)) return realpathSync(dirname(candidate));
  }
  return undefined;
}

/** The checkout's directory of workspace package `name`. */
function workspaceDir(name: string): string {
  const packages = join(REPO_ROOT, 'packages');
  for (const entry of readdirSync(packages)) {
    const manifest = join(packages, entry, 'package.json');
    if (existsSync(manifest) && readJson(manifest).name === name) return join(packages, entry);
  }
  return REPO_ROOT; // a package pack:all makes (platform, source): resolve from the root
}

/** A tarball of an installed package directory (`package/...`), cached by name@version. */
function packInstalled(dir: string, manifest: Manifest, cacheDir: string): { file: string; fresh: boolean } {
  const file = join(cacheDir, `${manifest.name.replace('/', '+')}@${manifest.version}.tgz`);
  if (existsSync(file)) return { file, fresh: false };
  mkdirSync(cacheDir, { recursive: true });
  const partial = `${file}.${process.pid}.partial`;
  execFileSync(
    'tar',
    [
      '--create',
      '--gzip',
      '--file',
      partial,
      '--directory',
      dir,
      '--exclude=./node_modules',
      '--hard-dereference', // pnpm's store links files of equal content; npm extracts no hard links
      '--owner=0',
      '--group=0',
      '--transform=s,^\\.,package,',
      '.',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  renameSync(partial, file); // whole or absent, also for a run beside this one
  return { file, fresh: true };
}

function tarballManifest(file: string): Manifest {
  return JSON.parse(
    execFileSync('tar', ['--extract', '--gzip', '--to-stdout', '--file', file, 'package/package.json'], {
      encoding: 'utf8',
    }),
  ) as Manifest;
}

function readJson(path: string): Manifest {
  return JSON.parse(readFileSync(path, 'utf8')) as Manifest;
}

/** Orders x.y.z versions (a pre-release sorts with its release: enough to pick `latest` here). */
function compareVersions(a: string, b: string): number {
  const parts = (v: string) => v.split(/[.+-]/).slice(0, 3).map(Number);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}
