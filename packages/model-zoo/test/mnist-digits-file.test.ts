import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without declarations
import { digitsOfMnistPackage } from '../scripts/mnist-digits.mjs';
import { loadMnistDigits, MNIST_DIGITS_FILE, readMnistDigitsFile } from '../src/mnist/digits.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'edl-mnist-file-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the digits file in data/', () => {
  it('holds every image and label of the mnist package, in its order', () => {
    const shipped = loadMnistDigits();
    const fromPackage = digitsOfMnistPackage() as { count: number; labels: Uint8Array; pixels: Uint8Array };
    expect(fromPackage.count).toBe(10_000);
    expect(shipped.count).toBe(fromPackage.count);
    expect(Buffer.from(shipped.labels).equals(Buffer.from(fromPackage.labels))).toBe(true);
    for (let image = 0; image < fromPackage.count; image++) {
      const range = [image * 784, (image + 1) * 784] as const;
      if (
        !Buffer.from(shipped.pixels.subarray(...range)).equals(
          Buffer.from(fromPackage.pixels.subarray(...range)),
        )
      ) {
        expect.fail(`image ${image} differs from the mnist package`);
      }
    }
  });

  it('fails naming the file when a byte changed, or when the file is not gzip', () => {
    const bytes = gunzipSync(readFileSync(MNIST_DIGITS_FILE));
    bytes[20_000] = (bytes[20_000] as number) ^ 1;
    const damaged = path.join(scratch, 'damaged.u8.gz');
    writeFileSync(damaged, gzipSync(bytes));
    expect(() => readMnistDigitsFile(damaged)).toThrow(
      `The MNIST digits file ${damaged} is damaged: 7850000 bytes with sha256`,
    );
    const truncated = path.join(scratch, 'truncated.u8.gz');
    writeFileSync(truncated, gzipSync(bytes.subarray(0, 1000)));
    expect(() => readMnistDigitsFile(truncated)).toThrow('is damaged: 1000 bytes');
    const notGzip = path.join(scratch, 'plain.u8.gz');
    writeFileSync(notGzip, bytes);
    expect(() => readMnistDigitsFile(notGzip)).toThrow(`Cannot read the MNIST digits file ${notGzip}`);
    const copy = path.join(scratch, 'copy.u8.gz');
    copyFileSync(MNIST_DIGITS_FILE, copy);
    expect(readMnistDigitsFile(copy).labels[0]).toBe(0);
  });
});
