// @ts-check
/**
 * CIFAR-10 record parsing and preprocessing, run by `IterDataset.mapParallel` on worker threads (and
 * by the serialized loop on the main thread). Plain JavaScript so that a thread can import it from
 * the sources and from the built package alike (Node 20 cannot load TypeScript in a thread).
 *
 * A record is a label byte then 32x32x3 interleaved RGB bytes (see src/cifar10/record-format.ts).
 */

const SIDE = 32;
const CHANNELS = 3;
const PIXELS = SIDE * SIDE * CHANNELS;
const RECORD_BYTES = 1 + PIXELS;
const PAD = 4;
const CLASSES = 10;
/** Per-channel mean and standard deviation of CIFAR-10's training images (the usual constants). */
export const CIFAR10_MEAN = [0.4914, 0.4822, 0.4465];
export const CIFAR10_STD = [0.247, 0.2435, 0.2616];

/**
 * The augmentation of record number `recordIndex` under `seed`: a crop offset in [-4, 4] on each
 * axis (the standard random crop of a 4-pixel zero-padded 40x40 image back to 32x32) and a
 * horizontal flip with probability 1/2. A pure function of (seed, recordIndex): the same record
 * position gets the same augmentation in any thread, process or run.
 * @param {number} seed
 * @param {number} recordIndex
 * @returns {{ dx: number, dy: number, flip: boolean }}
 */
export function augmentationOf(seed, recordIndex) {
  // splitmix32-style mixing of the two integers.
  let h =
    (Math.imul(seed | 0, 0x9e3779b9) ^ Math.imul(recordIndex | 0, 0x85ebca6b) ^ (recordIndex / 2 ** 32)) >>>
    0;
  h = Math.imul(h ^ (h >>> 16), 0x21f0aaad);
  h = Math.imul(h ^ (h >>> 15), 0x735a2d97);
  h = (h ^ (h >>> 15)) >>> 0;
  return { dx: (h % 9) - PAD, dy: (Math.floor(h / 9) % 9) - PAD, flip: ((h >>> 24) & 1) === 1 };
}

/**
 * Decodes and preprocesses one minibatch of records: labels as int32, pixels as float32 normalised
 * per channel with CIFAR-10's mean and standard deviation, and, when `args.augment` is set, each
 * image randomly cropped (4-pixel zero padding) and flipped, deterministically per record.
 *
 * @param {Uint8Array[]} records
 * @param {{ augment?: boolean, seed?: number, minibatchSize?: number }} args
 *   `minibatchSize` numbers the records: record i of minibatch k is record k * minibatchSize + i.
 * @param {{ index: number }} context the minibatch's position in the stream
 * @returns {{ pixels: Float32Array, labels: Int32Array }}
 */
export function preprocessCifar10Batch(records, args, context) {
  const count = records.length;
  const pixels = new Float32Array(count * PIXELS);
  const labels = new Int32Array(count);
  const augment = args?.augment === true;
  const seed = args?.seed ?? 0;
  const first = context.index * (args?.minibatchSize ?? count);
  const scale = CIFAR10_STD.map((s) => 1 / (255 * s));
  const shift = CIFAR10_MEAN.map((m, c) => -m / (CIFAR10_STD[c] ?? 1));
  // A padding pixel is 0 before normalisation.
  const padValue = shift;
  for (let r = 0; r < count; r++) {
    const record = /** @type {Uint8Array} */ (records[r]);
    if (record.length !== RECORD_BYTES) {
      throw new RangeError(
        `Expected ${RECORD_BYTES} bytes for CIFAR-10 record ${first + r} but received ${record.length}`,
      );
    }
    const label = /** @type {number} */ (record[0]);
    if (label >= CLASSES)
      throw new RangeError(
        `Expected a label in [0, ${CLASSES}) for record ${first + r} but received ${label}`,
      );
    labels[r] = label;
    const base = r * PIXELS;
    const { dx, dy, flip } = augment ? augmentationOf(seed, first + r) : { dx: 0, dy: 0, flip: false };
    for (let y = 0; y < SIDE; y++) {
      const sy = y + dy;
      const rowInside = sy >= 0 && sy < SIDE;
      for (let x = 0; x < SIDE; x++) {
        const sx = (flip ? SIDE - 1 - x : x) + dx;
        const out = base + (y * SIDE + x) * CHANNELS;
        if (rowInside && sx >= 0 && sx < SIDE) {
          const src = 1 + (sy * SIDE + sx) * CHANNELS;
          for (let c = 0; c < CHANNELS; c++) {
            pixels[out + c] =
              /** @type {number} */ (record[src + c]) * /** @type {number} */ (scale[c]) +
              /** @type {number} */ (shift[c]);
          }
        } else {
          for (let c = 0; c < CHANNELS; c++) pixels[out + c] = /** @type {number} */ (padValue[c]);
        }
      }
    }
  }
  return { pixels, labels };
}
