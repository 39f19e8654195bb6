import { mulberry32 } from '@edl/common';

/** Deterministic PRNG (mulberry32) so failing round trips can be replayed from their seed. */
export { mulberry32 };

/**
 * Random records with the shapes that break codecs: empty records, one-byte records, compressible
 * text, incompressible noise, and records over 64 KiB (more than one snappy frame).
 */
export function randomRecords(seed: number, count: number): Uint8Array[] {
  const rand = mulberry32(seed);
  const records: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const kind = rand();
    let len: number;
    if (kind < 0.1) len = 0;
    else if (kind < 0.2) len = 1;
    else if (kind < 0.9) len = Math.floor(rand() * 4000);
    else len = 65536 + Math.floor(rand() * 200_000);
    const record = new Uint8Array(len);
    if (rand() < 0.5) {
      for (let j = 0; j < len; j++) record[j] = Math.floor(rand() * 256);
    } else {
      const word = `w${Math.floor(rand() * 50)} `;
      for (let j = 0; j < len; j++) record[j] = word.charCodeAt(j % word.length);
    }
    records.push(record);
  }
  return records;
}
