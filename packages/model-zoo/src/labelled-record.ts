/**
 * One image record of the zoo's data sets: the label byte, then the pixels. Checks the label
 * against `classes` and the pixel count against `pixelBytes`.
 */
export function encodeLabelledRecord(
  label: number,
  pixels: Uint8Array,
  classes: number,
  pixelBytes: number,
): Uint8Array {
  if (!Number.isInteger(label) || label < 0 || label >= classes) {
    throw new RangeError(`Expected a label in [0, ${classes}) for label but received ${label}`);
  }
  if (pixels.length !== pixelBytes) {
    throw new RangeError(`Expected ${pixelBytes} bytes for pixels but received ${pixels.length}`);
  }
  const record = new Uint8Array(1 + pixelBytes);
  record[0] = label;
  record.set(pixels, 1);
  return record;
}
