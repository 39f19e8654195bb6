// Copies the live view's page (src/http/static) into dist/static and vendors the chart library
// (uPlot, MIT, from this package's npm dependency) beside it: the page needs no build step and no CDN.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const from = path.join(root, 'src', 'http', 'static');
const to = path.join(root, 'dist', 'static');
mkdirSync(path.join(to, 'vendor'), { recursive: true });
for (const name of readdirSync(from)) copyFileSync(path.join(from, name), path.join(to, name));

const require = createRequire(import.meta.url);
const uplotDir = path.dirname(require.resolve('uplot/package.json'));
const { version, license } = JSON.parse(readFileSync(path.join(uplotDir, 'package.json'), 'utf8'));
copyFileSync(path.join(uplotDir, 'dist', 'uPlot.iife.min.js'), path.join(to, 'vendor', 'uPlot.iife.min.js'));
copyFileSync(path.join(uplotDir, 'dist', 'uPlot.min.css'), path.join(to, 'vendor', 'uPlot.min.css'));
copyFileSync(path.join(uplotDir, 'LICENSE'), path.join(to, 'vendor', 'uPlot.LICENSE.txt'));
writeFileSync(
  path.join(to, 'vendor', 'VENDORED.json'),
  `${JSON.stringify({ uplot: { version, license, files: ['uPlot.iife.min.js', 'uPlot.min.css'] } }, null, 2)}\n`,
);
