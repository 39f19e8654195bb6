import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The Go-written test vectors (copied from the project's shared golden set, with MANIFEST.txt). */
export const GOLDEN_DIR = fileURLToPath(new URL('../golden/', import.meta.url));

/** One MANIFEST.txt line. */
export interface GoldenEntry {
  readonly file: string;
  readonly path: string;
  readonly bytes: number;
  readonly set: string;
  readonly numRecords: number;
  readonly recordBytes: number;
  readonly streamSha256: string;
  readonly reference: string;
}

/** Parses MANIFEST.txt: tab-separated, `#` comments. */
export function readManifest(): GoldenEntry[] {
  return readFileSync(`${GOLDEN_DIR}MANIFEST.txt`, 'utf8')
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [file, bytes, , set, n, sum, sha, reference] = line.split('\t');
      if (file === undefined || sha === undefined) throw new Error(`bad MANIFEST line: ${line}`);
      return {
        file,
        path: `${GOLDEN_DIR}${file}`,
        bytes: Number(bytes),
        set: set ?? '',
        numRecords: Number(n),
        recordBytes: Number(sum),
        streamSha256: sha,
        reference: reference ?? '',
      };
    });
}

/** Incremental sha256 of `concat(u32le(len(r)) || r)`, the MANIFEST's stream hash. */
export class StreamHash {
  readonly #hash = createHash('sha256');
  readonly #prefix = Buffer.alloc(4);
  count = 0;
  bytes = 0;

  add(record: Uint8Array): void {
    this.#prefix.writeUInt32LE(record.byteLength, 0);
    this.#hash.update(this.#prefix);
    this.#hash.update(record);
    this.count++;
    this.bytes += record.byteLength;
  }

  digest(): string {
    return this.#hash.digest('hex');
  }
}

/** Stream hash of a list of records. */
export function streamSha256(records: Iterable<Uint8Array>): string {
  const hash = new StreamHash();
  for (const r of records) hash.add(r);
  return hash.digest();
}

/** Record i of the golden `seq` set: "record-<i>" repeated i % 23 times. */
export function seqRecord(i: number): Buffer {
  return Buffer.from(`record-${i}`.repeat(i % 23));
}
