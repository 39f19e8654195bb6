#!/usr/bin/env node
// The reads of scripts/test-win32-x64.sh, run in a directory where npm installed the packed
// @edl/recordio: once by the Windows Node.js under wine (the win32-x64-gnu addon), once by this
// host's Node.js (the Linux addon, through EDL_NATIVE_PATH), and the two results must be equal.
//
//   node win32-golden-check.mjs read OUT.json SCRATCH_DIR GOLDEN_FILE...
//     For each file: every record through records() (count and the MANIFEST's stream sha256, or the
//     error code and the records before it), get() of the first and last record (the chunk cache),
//     the whole file through a Prefetcher's threads, and, for a file that reads, its records written
//     again with RecordIOWriter in each compressor into a directory of SCRATCH_DIR with a non-ASCII
//     name and read back; then the errors of opening a missing file and a directory. Writes one JSON
//     document to OUT.json: under wine, Node.js cannot open a pipe as stdout.
//   node win32-golden-check.mjs compare WINDOWS.json LINUX.json MANIFEST.txt
//     Exits 1 unless both results are equal and every good file of the MANIFEST (all but bad-* and
//     truncated-*, as in prebuilt-install.test.ts) read its listed records.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

/** sha256 of concat(u32le(len) || record): the MANIFEST's stream hash. */
function streamHash() {
  const hash = createHash('sha256');
  const prefix = Buffer.alloc(4);
  let records = 0;
  return {
    add(record) {
      prefix.writeUInt32LE(record.byteLength, 0);
      hash.update(prefix).update(record);
      records++;
    },
    result() {
      return { records, sha256: hash.digest('hex') };
    },
  };
}

/** The copies go where a path needs UTF-8 -> UTF-16 on Windows (MultiByteToWideChar, CreateFileW). */
const UNICODE_DIR = 'Grüße-データ-δεδομένα';

const errorCode = (error) => error?.code ?? String(error);

async function readAll(recordio, path, keep) {
  const hash = streamHash();
  let reader;
  try {
    reader = await recordio.RecordIOReader.open(path);
    for await (const record of reader.records()) {
      hash.add(record);
      keep?.push(Buffer.from(record));
    }
    return { ...hash.result(), reader };
  } catch (error) {
    reader?.close();
    return { ...hash.result(), error: errorCode(error) };
  }
}

async function prefetchAll(recordio, path, count) {
  const hash = streamHash();
  const prefetcher = recordio.Prefetcher.create({ threads: 2, batchSize: 1000 });
  try {
    prefetcher.enqueue({ path, start: 0, count });
    prefetcher.end();
    for await (const batch of prefetcher) {
      for (let i = 0; i < batch.length; i++) hash.add(batch.get(i));
      batch.release();
    }
    return hash.result();
  } catch (error) {
    return { ...hash.result(), error: errorCode(error) };
  } finally {
    prefetcher.close();
  }
}

/** Opening what is not a readable file: the error code and the system's words after the path. */
async function openFault(recordio, path) {
  try {
    (await recordio.RecordIOReader.open(path)).close();
    return { opened: true };
  } catch (error) {
    return {
      code: errorCode(error),
      words: /(No such file or directory|Is a directory)/.exec(error.message)?.[0],
    };
  }
}

async function checkFile(recordio, path, scratch) {
  const records = [];
  const { reader, ...read } = await readAll(recordio, path, records);
  const result = { file: basename(path), read };
  if (reader === undefined) return result;
  const sha = (bytes) => createHash('sha256').update(bytes).digest('hex');
  result.get =
    records.length === 0 ? [] : [sha(await reader.get(0)), sha(await reader.get(records.length - 1))];
  reader.close();
  result.prefetch = await prefetchAll(recordio, path, records.length);
  result.rewritten = {};
  for (const compressor of ['none', 'snappy', 'gzip']) {
    const copy = join(scratch, UNICODE_DIR, `${compressor}-${basename(path)}`);
    const writer = await recordio.RecordIOWriter.create(copy, { compressor, maxChunkBytes: 16 << 10 });
    for (const record of records) writer.write(record);
    writer.close();
    const { reader: again, ...back } = await readAll(recordio, copy);
    again?.close();
    result.rewritten[compressor] = back;
  }
  return result;
}

function compare(windowsFile, linuxFile, manifestFile) {
  const windows = JSON.parse(readFileSync(windowsFile, 'utf8'));
  const linux = JSON.parse(readFileSync(linuxFile, 'utf8'));
  const failures = [];
  const byFile = new Map(linux.files.map((f) => [f.file, f]));
  for (const w of windows.files) {
    const l = byFile.get(w.file);
    if (JSON.stringify(w) !== JSON.stringify(l))
      failures.push(`${w.file}: Windows read ${JSON.stringify(w)}, Linux ${JSON.stringify(l)}`);
  }
  if (JSON.stringify(windows.faults) !== JSON.stringify(linux.faults))
    failures.push(
      `opening a missing file and a directory: Windows ${JSON.stringify(windows.faults)}, Linux ${JSON.stringify(linux.faults)}`,
    );
  if (windows.files.length !== linux.files.length)
    failures.push(`Windows read ${windows.files.length} files, Linux ${linux.files.length}`);
  for (const line of readFileSync(manifestFile, 'utf8').split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const [file, , , , records, , sha256] = line.split('\t');
    const w = windows.files.find((f) => f.file === file);
    if (w === undefined) failures.push(`${file}: not read on Windows`);
    else if (
      !/^(bad|truncated)-/.test(file) &&
      (w.read.records !== Number(records) || w.read.sha256 !== sha256)
    )
      failures.push(
        `${file}: Windows read ${w.read.records} records (${w.read.sha256}), MANIFEST ${records} (${sha256})`,
      );
  }
  for (const f of windows.files) {
    const how =
      f.read.error === undefined
        ? `${f.read.records} records`
        : `${f.read.error} after ${f.read.records} records`;
    console.log(
      `  ${f.file}: ${how} ${f.read.sha256.slice(0, 12)}${f.prefetch ? ', prefetch, get, rewritten x3' : ''}`,
    );
  }
  console.log(`  a missing file and a directory: ${JSON.stringify(windows.faults)}`);
  console.log(`  on ${windows.runtime}; compared with ${linux.runtime}`);
  if (failures.length > 0) {
    for (const failure of failures) console.error(`win32-golden-check: ${failure}`);
    process.exit(1);
  }
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'read') {
  const [out, scratch, ...paths] = args;
  mkdirSync(join(scratch, UNICODE_DIR), { recursive: true });
  const recordio = await import('@edl/recordio');
  const files = [];
  for (const path of paths) files.push(await checkFile(recordio, path, scratch));
  const faults = {
    missing: await openFault(recordio, join(scratch, UNICODE_DIR, 'no-such-file.rio')),
    directory: await openFault(recordio, join(scratch, UNICODE_DIR)),
  };
  const runtime = `${process.platform}-${process.arch} Node.js ${process.version}`;
  writeFileSync(out, `${JSON.stringify({ runtime, files, faults }, null, 1)}\n`);
} else if (mode === 'compare') {
  compare(...args);
} else {
  console.error(
    'usage: win32-golden-check.mjs read OUT.json SCRATCH_DIR FILE... | compare WIN.json LINUX.json MANIFEST.txt',
  );
  process.exit(2);
}
