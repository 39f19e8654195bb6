import { registerByteSource } from '../byte-sources.js';
import type { S3ByteSourceOptions } from './s3-byte-source.js';

/**
 * How this process reaches S3 by default: what `--s3-endpoint` and `--s3-anonymous` set, for the
 * reads of `s3://` locations and the writes alike. Every field is optional; what is left out comes
 * from the AWS SDK's own configuration (environment, shared config files, instance metadata).
 */
export type S3ClientSettings = Pick<
  S3ByteSourceOptions,
  'endpoint' | 'region' | 'forcePathStyle' | 'anonymous' | 'profile' | 'credentials'
>;

let defaults: S3ClientSettings = {};

/**
 * Sets the S3 settings of every `s3://` read ({@link byteSourceFor}) and write (`openWriter`,
 * `putObject`, `deleteObject`) made afterwards in this process without settings of their own. It
 * replaces earlier settings; `configureS3({})` returns to the SDK's defaults.
 */
export function configureS3(settings: S3ClientSettings): void {
  defaults = { ...settings };
  const current = defaults;
  registerByteSource('s3', async () => new (await import('./s3-byte-source.js')).S3ByteSource(current));
}

/** The settings {@link configureS3} set last (none: the SDK's defaults). */
export function s3Defaults(): S3ClientSettings {
  return defaults;
}
