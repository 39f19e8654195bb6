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
  if (!Number.isInteger(label) || label < 0 || label >= MNIST_CLASSES) {
    throw new RangeError(`Expected a label in [0, ${MNIST_CLASSES}) for label but received ${label}`);
  }
  if (pixels.length !== MNIST_PIXEL_BYTES) {
    throw new RangeError(`Expected ${MNIST_PIXEL_BYTES} bytes for pixels but received ${pixels.length}`);
  }
  const record = new Uint8Array(MNIST_RECORD_BYTES);
  record[0] = label;
  record.set(pixels, 1);
  return record;
}
