import { checkFunction, checkNonEmptyString, invalidArgument } from '@edl/common';
import type { ByteSource } from './byte-source.js';
import { localFiles } from './local-file-source.js';
import { schemeOf } from './locations.js';
import { StorageError } from './storage-error.js';

/**
 * Makes the byte source of a scheme, on first use: a remote source (and its client library, an
 * optional dependency) is loaded only when a location of its scheme is read.
 */
export type ByteSourceLoader = () => ByteSource | Promise<ByteSource>;

// The remote sources ship with the package and load on first use; their client libraries (the AWS
// SDK for s3:) load later still, on the first request.
const loaders = new Map<string, ByteSourceLoader>([
  ['s3', async () => new (await import('./s3/s3-byte-source.js')).S3ByteSource()],
  ['https', async () => new (await import('./http/http-byte-source.js')).HttpByteSource({ scheme: 'https' })],
  ['http', async () => new (await import('./http/http-byte-source.js')).HttpByteSource({ scheme: 'http' })],
]);
const loaded = new Map<string, Promise<ByteSource>>();

/**
 * Registers the byte source of a URL scheme (`s3`, `https`, ...), made by `loader` the first time a
 * location of that scheme is resolved. Registering a scheme again replaces its loader. Local paths
 * and `file:` URLs are always local files.
 *
 * @throws TypeError for a scheme that is not a URL scheme of two or more characters, or is `file`.
 */
export function registerByteSource(scheme: string, loader: ByteSourceLoader): void {
  const name = checkNonEmptyString(scheme, 'scheme').toLowerCase();
  if (schemeOf(`${name}:`) !== name || name === 'file') {
    invalidArgument('a URL scheme other than file', 'scheme', scheme);
  }
  checkFunction(loader, 'loader');
  loaders.set(name, loader);
  loaded.delete(name);
}

/**
 * The byte source that reads `location`: local files for plain paths and `file:` URLs, else the
 * source registered for its URL scheme.
 *
 * @throws StorageError `UNSUPPORTED_SCHEME`, naming the scheme, when none is registered for it.
 */
export function byteSourceFor(location: string): Promise<ByteSource> {
  const scheme = schemeOf(checkNonEmptyString(location, 'location'));
  if (scheme === undefined || scheme === 'file') return Promise.resolve(localFiles);
  let source = loaded.get(scheme);
  if (source === undefined) {
    const loader = loaders.get(scheme);
    if (loader === undefined) {
      const known = ['file', ...loaders.keys()].map((s) => `${s}:`).join(', ');
      return Promise.reject(
        new StorageError(
          'UNSUPPORTED_SCHEME',
          redactedScheme(location, scheme),
          `the URL scheme ${scheme}: is not supported (byte sources: plain paths, ${known})`,
        ),
      );
    }
    source = Promise.resolve().then(loader);
    loaded.set(scheme, source);
    // A failed load is not kept: the next location of the scheme tries again.
    source.catch(() => {
      if (loaded.get(scheme) === source) loaded.delete(scheme);
    });
  }
  return source;
}

/** Only the scheme of a location that no source reads: the rest may hold credentials. */
function redactedScheme(location: string, scheme: string): string {
  return location.includes('@') ? `${scheme}://...` : location;
}
