import { encodeLabelledRecord } from '../labelled-record.js';

/** Image side in pixels. */
export const MNIST_SIDE = 28;
/** Number of classes (the digits 0 to 9). */
export const MNIST_CLASSES = 10;
/** Bytes of the pixels of one image (grey levels, 0 is background). */
export const MNIST_PIXEL_BYTES = MNIST_SIDE * MNIST_SIDE;
/** Bytes of one record: the label byte, then the pixels row by row. */
export const MNIST_RECORD_BYTES = 1 + MNIST_PIXEL_BYTES;

/** One MNIST record: the label byte, then 28x28 grey levels (0-255) row by row. */
export function encodeMnistRecord(label: number, pixels: Uint8Array): Uint8Array {
  return encodeLabelledRecord(label, pixels, MNIST_CLASSES, MNIST_PIXEL_BYTES);
}
