import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readManifest, streamSha256 } from './helpers/golden.js';
import { decodePlain, decodePlainRecords } from './helpers/plain-decoder.js';

// The test-side decoder checks our writer independently of the addon, so it must first prove itself
// on the files the Go reference wrote.
describe('plain-JS test decoder', () => {
  const intact = readManifest().filter((e) => !/^(bad-crc|truncated)/.test(e.file));

  it.each(intact.map((e) => [e.file, e] as const))(
    'reproduces the MANIFEST stream hash of %s',
    (_name, entry) => {
      const records = decodePlainRecords(readFileSync(entry.path));
      expect(records.length).toBe(entry.numRecords);
      expect(streamSha256(records)).toBe(entry.streamSha256);
    },
  );

  it('sees the Go writer one-frame-per-write snappy layout', () => {
    const chunks = decodePlain(readFileSync(readManifest().find((e) => e.file === 'hello-snappy.rio')!.path));
    // 3 length prefixes + 3 non-empty records = 6 frames.
    const frames = chunks[0]!.frames!;
    expect(frames.compressed + frames.stored).toBe(6);
  });

  it('rejects the damaged files', () => {
    for (const name of ['bad-crc-none-64k.rio', 'truncated-none-64k.rio', 'truncated-gzip-64k.rio']) {
      const entry = readManifest().find((e) => e.file === name)!;
      expect(() => decodePlain(readFileSync(entry.path))).toThrow();
    }
  });
});
