import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { checkInteger, checkNonEmptyString, SeededRandom } from '@edl/common';
import { type CompressorName, RecordIOWriter } from '@edl/recordio';
import {
  CIFAR10_CHANNELS,
  CIFAR10_CLASSES,
  CIFAR10_PIXEL_BYTES,
  CIFAR10_SIDE,
  encodeCifar10Record,
} from './record-format.js';

/** Options of {@link generateCifar10Like}. */
export interface Cifar10LikeOptions {
  /** Directory to write into (created when missing). */
  readonly dir: string;
  /** Records in all (default 10,000). */
  readonly records?: number;
  /** Files to spread them over (default 4); each file is one or more shards. */
  readonly files?: number;
  /** Seed of the generator: the same seed gives the same bytes (default 1). */
  readonly seed?: number;
  /** RecordIO compressor (default snappy). */
  readonly compressor?: CompressorName;
  /** File name prefix (default `cifar10-like`). */
  readonly prefix?: string;
  /** Called after each file with the records written so far. */
  readonly onProgress?: (written: number, total: number) => void;
}

/** The files written and their record counts. */
export interface GeneratedFiles {
  readonly files: ReadonlyArray<{ readonly path: string; readonly records: number }>;
  readonly records: number;
}

/** Ten well separated colours, one per class. */
const PALETTE: ReadonlyArray<readonly [number, number, number]> = [
  [220, 40, 40],
  [40, 200, 40],
  [40, 60, 220],
  [220, 220, 40],
  [200, 40, 200],
  [40, 200, 200],
  [240, 140, 20],
  [120, 60, 20],
  [160, 160, 160],
  [20, 20, 20],
];

/**
 * One synthetic image of class `label`: a background in the class colour, a bright square whose
 * position depends on the class, stripes whose period depends on the class, and noise. The class
 * is visible to a small CNN (colour, position and texture all carry it) but not trivially so.
 */
export function synthesizeCifar10Image(label: number, random: SeededRandom): Uint8Array {
  const pixels = new Uint8Array(CIFAR10_PIXEL_BYTES);
  const colour = PALETTE[label] as readonly [number, number, number];
  const squareX = (label % 5) * 6 + random.int(3);
  const squareY = label < 5 ? 2 + random.int(3) : 18 + random.int(3);
  const period = 2 + (label % 4);
  const brightness = 0.6 + random.next() * 0.4;
  for (let y = 0; y < CIFAR10_SIDE; y++) {
    for (let x = 0; x < CIFAR10_SIDE; x++) {
      const inSquare = x >= squareX && x < squareX + 8 && y >= squareY && y < squareY + 8;
      const stripe = Math.floor(y / period) % 2 === 0 ? 1 : 0.75;
      for (let c = 0; c < CIFAR10_CHANNELS; c++) {
        const base = inSquare
          ? 255 - (colour[c] as number) * 0.5
          : (colour[c] as number) * brightness * stripe;
        const value = base + random.normal() * 28;
        pixels[(y * CIFAR10_SIDE + x) * CIFAR10_CHANNELS + c] = Math.max(0, Math.min(255, Math.round(value)));
      }
    }
  }
  return pixels;
}

/**
 * Writes a CIFAR-10-like data set as RecordIO files: 32x32x3 uint8 images with a label byte (see
 * `encodeCifar10Record`), classes drawn uniformly at random, deterministic from `seed`. Nothing is
 * downloaded.
 */
export async function generateCifar10Like(options: Cifar10LikeOptions): Promise<GeneratedFiles> {
  const dir = checkNonEmptyString(options.dir, 'options.dir');
  const total = checkInteger(options.records ?? 10_000, 'options.records', 1);
  const fileCount = checkInteger(options.files ?? 4, 'options.files', 1);
  const seed = checkInteger(options.seed ?? 1, 'options.seed', 0);
  const prefix = options.prefix ?? 'cifar10-like';
  mkdirSync(dir, { recursive: true });
  const random = new SeededRandom(seed);
  const files: Array<{ path: string; records: number }> = [];
  let written = 0;
  for (let f = 0; f < fileCount; f++) {
    const count = Math.floor(total / fileCount) + (f < total % fileCount ? 1 : 0);
    const file = path.join(path.resolve(dir), `${prefix}-${String(f).padStart(5, '0')}.rio`);
    const writer = await RecordIOWriter.create(file, { compressor: options.compressor ?? 'snappy' });
    try {
      for (let i = 0; i < count; i++) {
        const label = random.int(CIFAR10_CLASSES);
        writer.write(encodeCifar10Record(label, synthesizeCifar10Image(label, random)));
      }
    } finally {
      writer.close();
    }
    written += count;
    files.push({ path: file, records: count });
    options.onProgress?.(written, total);
  }
  return { files, records: written };
}
