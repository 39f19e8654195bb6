/**
 * Checkpoints in an object store (`--checkpoint-dir s3://bucket/prefix/`), where there is no rename
 * to commit a file by. Layout under the prefix:
 *
 * - `checkpoint-<version, 12 digits>-<16 hex>.edlckpt`: the checkpoint, byte for byte what a local
 *   checkpoint file holds, under a name no other write uses (a version written again after a
 *   restart gets a new object, never a half-replaced one);
 * - `checkpoint-<version, 12 digits>.manifest.json`: written LAST, once the object above is
 *   complete: `{"format":"edl-checkpoint-manifest/1","version":…,"object":"checkpoint-…edlckpt",
 *   "size":…,"crc32":…,"createdAt":…}`.
 *
 * - `ps-<version, 12 digits>/`: in a job with parameter-server shards, each shard's table objects
 *   and marker, all written before the checkpoint object (@edl/ps's object-store-shard-checkpoint.ts).
 *
 * A checkpoint exists only through its manifest: the latest checkpoint is the newest manifest whose
 * object is there with the size and CRC-32 it names. An object without a manifest (a master killed
 * mid-write) is never taken, and is deleted with the old checkpoints by the keep-N policy, and so
 * are the shard parts of the versions it deletes.
 */
import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { isObjectStoreDir, shardPartsPrefix } from '@edl/ps';
import { byteSourceFor, deleteObject, type ObjectStat, putObject, RemoteError } from '@edl/storage';
import { CheckpointError } from './errors.js';

const MANIFEST_FORMAT = 'edl-checkpoint-manifest/1';
const MANIFEST_NAME = /^checkpoint-(\d{12})\.manifest\.json$/;
const OBJECT_NAME = /^checkpoint-(\d{12})-[0-9a-f]{16}\.edlckpt$/;

/** What a manifest says of its checkpoint object. */
interface Manifest {
  readonly format: typeof MANIFEST_FORMAT;
  readonly version: number;
  /** The checkpoint object's name, under the same prefix. */
  readonly object: string;
  readonly size: number;
  /** CRC-32 of the whole checkpoint object. */
  readonly crc32: number;
  readonly createdAt: string;
}

/**
 * Whether checkpoints at `location` go to an object store: a URL of a scheme other than `file:`
 * (the test the parameter-server shards make of the same directory).
 */
export const isObjectStoreLocation: (location: string) => boolean = isObjectStoreDir;

/** The manifest of the checkpoint of model `version` under the prefix `dir`. */
export function manifestLocation(dir: string, version: number): string {
  return `${prefixOf(dir)}checkpoint-${padded(version)}.manifest.json`;
}

/**
 * Writes the checkpoint `parts` of model `version` under `dir`: the checkpoint object, then its
 * manifest; then deletes what the newest `keep` manifests do not name. Resolves to the manifest's
 * location.
 */
export async function writeObjectStoreCheckpoint(
  dir: string,
  version: number,
  parts: readonly Uint8Array[],
  keep: number,
): Promise<string> {
  const prefix = prefixOf(dir);
  const object = `checkpoint-${padded(version)}-${randomBytes(8).toString('hex')}.edlckpt`;
  const bytes = Buffer.concat(parts);
  const manifest: Manifest = {
    format: MANIFEST_FORMAT,
    version,
    object,
    size: bytes.byteLength,
    crc32: crc32(bytes),
    createdAt: new Date().toISOString(),
  };
  const location = manifestLocation(dir, version);
  try {
    await putObject(`${prefix}${object}`, bytes);
    // Only now does the checkpoint exist: a crash before this line leaves an object no manifest names.
    await putObject(location, Buffer.from(`${JSON.stringify(manifest)}\n`, 'utf8'));
  } catch (error) {
    throw new CheckpointError(
      'WRITE_FAILED',
      `Cannot write checkpoint ${location}: ${String(error)}`,
      location,
      { cause: error },
    );
  }
  await removeOldCheckpoints(prefix, keep);
  return location;
}

/** Model versions of the committed checkpoints (those with a manifest) under `dir`, oldest first. */
export async function listObjectStoreCheckpoints(dir: string): Promise<number[]> {
  return (await listPrefix(prefixOf(dir))).manifests.map((entry) => entry.version);
}

/**
 * The bytes of a checkpoint by its manifest's location (checked against the manifest's size and
 * CRC-32), or by its checkpoint object's own location. A missing or replaced object is a
 * `READ_FAILED` CheckpointError (an older checkpoint can be taken instead); other failures of the
 * store (credentials, throttling beyond the retries) are thrown as they are, since taking an older
 * checkpoint for them would silently roll the job back.
 */
export async function readObjectStoreCheckpoint(location: string): Promise<Buffer> {
  if (!MANIFEST_NAME.test(nameOf(location))) return readWhole(location);
  const manifest = parseManifest(location, await readWhole(location));
  const objectLocation = `${location.slice(0, location.length - nameOf(location).length)}${manifest.object}`;
  const bytes = await readWhole(objectLocation);
  if (bytes.byteLength !== manifest.size || crc32(bytes) !== manifest.crc32) {
    throw new CheckpointError(
      'CORRUPT',
      `Checkpoint ${objectLocation} is corrupt: ${bytes.byteLength} bytes with CRC-32 ${crc32(bytes)}, ` +
        `but its manifest ${location} names ${manifest.size} bytes with CRC-32 ${manifest.crc32}`,
      objectLocation,
    );
  }
  return bytes;
}

/** The checkpoints and manifests directly under a prefix, each by model version, oldest first. */
async function listPrefix(prefix: string): Promise<{
  readonly manifests: { readonly version: number; readonly location: string }[];
  readonly objects: { readonly version: number; readonly location: string }[];
}> {
  const source = await byteSourceFor(prefix);
  const listed: ObjectStat[] = await source.list(prefix);
  const named = (pattern: RegExp) =>
    listed
      .map((stat) => ({ version: pattern.exec(nameOf(stat.location))?.[1], location: stat.location }))
      .filter((entry): entry is { version: string; location: string } => entry.version !== undefined)
      .map((entry) => ({ version: Number(entry.version), location: entry.location }))
      .sort((a, b) => a.version - b.version);
  return { manifests: named(MANIFEST_NAME), objects: named(OBJECT_NAME) };
}

/**
 * The keep-N policy: the manifests before the newest `keep` are deleted (each before its object),
 * and so is every checkpoint object that no kept manifest names, up to the newest kept version (a
 * newer unnamed object can only be a write still under way).
 */
async function removeOldCheckpoints(prefix: string, keep: number): Promise<void> {
  const { manifests, objects } = await listPrefix(prefix);
  const kept = manifests.slice(Math.max(0, manifests.length - keep));
  for (const old of manifests.slice(0, manifests.length - kept.length)) {
    await deleteObject(old.location);
    await removeShardParts(prefix, old.version);
  }
  const named = new Set<string>();
  for (const entry of kept) {
    // A corrupt manifest names nothing; any other failure stops the clean-up, deleting nothing more.
    const manifest = await readWhole(entry.location)
      .then((bytes) => parseManifest(entry.location, bytes))
      .catch((error: unknown) => {
        if (error instanceof CheckpointError && error.code === 'CORRUPT') return undefined;
        throw error;
      });
    if (manifest !== undefined) named.add(`${prefix}${manifest.object}`);
  }
  const newest = kept.at(-1)?.version ?? -1;
  for (const object of objects) {
    if (object.version > newest || named.has(object.location)) continue;
    await deleteObject(object.location);
    if (!kept.some((entry) => entry.version === object.version))
      await removeShardParts(prefix, object.version);
  }
}

/**
 * Deletes the parameter-server shard parts of `version` (its `ps-<version>/` objects), the markers
 * first, so that a part cut short by a failure here is one no marker vouches for.
 */
async function removeShardParts(prefix: string, version: number): Promise<void> {
  const partsPrefix = shardPartsPrefix(prefix, version);
  const parts = await (await byteSourceFor(partsPrefix)).list(partsPrefix);
  const markersFirst = [...parts].sort(
    (a, b) => Number(b.location.endsWith('.json')) - Number(a.location.endsWith('.json')),
  );
  for (const part of markersFirst) await deleteObject(part.location);
}

/** The whole object at `location`, read through @edl/storage's byte source of its scheme. */
async function readWhole(location: string): Promise<Buffer> {
  try {
    const source = await byteSourceFor(location);
    const stat = await source.stat(location);
    const bytes = await source.readRange(stat, 0, stat.size);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  } catch (error) {
    if (error instanceof RemoteError && (error.code === 'NOT_FOUND' || error.code === 'CHANGED')) {
      throw new CheckpointError(
        'READ_FAILED',
        `Cannot read checkpoint ${location}: ${error.message}`,
        location,
        {
          cause: error,
        },
      );
    }
    throw error;
  }
}

function parseManifest(location: string, bytes: Buffer): Manifest {
  const fail = (why: string): never => {
    throw new CheckpointError('CORRUPT', `Checkpoint manifest ${location} is corrupt: ${why}`, location);
  };
  let manifest: Partial<Manifest>;
  try {
    manifest = JSON.parse(bytes.toString('utf8')) as Partial<Manifest>;
  } catch (error) {
    return fail(`not JSON (${String(error)})`);
  }
  if (manifest.format !== MANIFEST_FORMAT) fail(`unknown format ${String(manifest.format)}`);
  const version = Number(MANIFEST_NAME.exec(nameOf(location))?.[1]);
  const object = manifest.object;
  if (typeof object !== 'string' || OBJECT_NAME.exec(object)?.[1] !== padded(version)) {
    fail(`it names ${String(object)}, not a checkpoint object of model version ${version}`);
  }
  if (!Number.isSafeInteger(manifest.size) || !Number.isSafeInteger(manifest.crc32)) {
    fail('size or crc32 missing');
  }
  return manifest as Manifest;
}

/** `dir` with one trailing slash: the key prefix checkpoints go under. */
function prefixOf(dir: string): string {
  return dir.endsWith('/') ? dir : `${dir}/`;
}

function nameOf(location: string): string {
  return location.slice(location.lastIndexOf('/') + 1);
}

function padded(version: number): string {
  return String(version).padStart(12, '0');
}
