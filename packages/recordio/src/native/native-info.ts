import { getAddon } from './load-addon.js';

/** What the loaded addon reports about itself. */
export interface NativeInfo {
  /** Addon version (the package version). */
  readonly version: string;
  /** N-API version it targets. */
  readonly napiVersion: number;
  /** CRC-32 implementation in use, e.g. `pclmul` or `table`. */
  readonly crc32: string;
  /** CRC-32C implementation in use, e.g. `sse4.2` or `table`. */
  readonly crc32c: string;
}

/** Version and CPU features of the native addon (loads it on first call). */
export function nativeInfo(): NativeInfo {
  const addon = getAddon();
  return { version: addon.version, napiVersion: addon.napiVersion, ...addon.features };
}
