import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ByteSource,
  byteSourceFor,
  LocalFileSource,
  localFiles,
  type ObjectStat,
  registerByteSource,
  StorageError,
} from '../src/index.js';

let dir: string;
const source = new LocalFileSource();
const bytes = (n: number, seed = 0): Uint8Array =>
  Uint8Array.from({ length: n }, (_, i) => (i * 7 + seed) & 0xff);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edl-storage-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('LocalFileSource.list', () => {
  it('lists a directory in code-unit order, without hidden files, sidecars and subdirectories', async () => {
    const data = join(dir, 'list');
    await mkdir(join(data, 'sub'), { recursive: true });
    for (const name of ['b.rio', 'B.rio', 'a.rio', 'é.rio', '.hidden.rio', 'a.rio.idx', 'sub/inner.rio']) {
      await writeFile(join(data, name), name);
    }
    await symlink(join(data, 'a.rio'), join(data, 'link.rio'));
    const listed = await source.list(data);
    expect(listed.map((o) => o.location)).toEqual(
      ['B.rio', 'a.rio', 'b.rio', 'link.rio', 'é.rio'].map((n) => join(data, n)),
    );
    expect(listed.map((o) => o.size)).toEqual([5, 5, 5, 5, 6]);
    expect(listed[1]?.version).toBeTypeOf('string');
    // A link reads as the file it points to, pinned to that file's version.
    expect(listed[3]?.version).toBe(listed[1]?.version);
  });

  it('lists a file as itself, resolves relative paths and file: URLs, and names a missing location', async () => {
    const file = join(dir, 'one.bin');
    await writeFile(file, bytes(10));
    const [viaPath] = await source.list(relative(process.cwd(), file));
    expect(viaPath).toEqual(await source.stat(file));
    expect(await source.list(pathToFileURL(file).href)).toEqual([viaPath]);
    const missing = join(dir, 'nothing-here');
    const error = await source.list(missing).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ code: 'IO', location: missing });
    expect((error as Error).message).toMatch(/^IO: .*nothing-here: cannot stat: ENOENT/);
  });
});

describe('LocalFileSource.stat and readRange', () => {
  it('stats a file and reads ranges, into a caller buffer too', async () => {
    const file = join(dir, 'range.bin');
    const content = bytes(100_000, 3);
    await writeFile(file, content);
    const object = await source.stat(file);
    expect(object).toMatchObject({ location: file, size: 100_000 });
    expect(await source.readRange(object, 0, 100_000)).toEqual(content);
    expect(await source.readRange(object, 99_990, 10)).toEqual(content.subarray(99_990));
    expect(await source.readRange(object, 100_000, 0)).toEqual(new Uint8Array(0));
    const into = new Uint8Array(64).fill(0xee);
    const got = await source.readRange(object, 1000, 32, { into });
    expect(got.buffer).toBe(into.buffer);
    expect(got).toEqual(content.subarray(1000, 1032));
    expect(into.subarray(32)).toEqual(new Uint8Array(32).fill(0xee));
    await expect(source.readRange(object, 0, 65, { into })).rejects.toThrow(
      'Expected a Uint8Array of at least 65 bytes for options.into but received a Uint8Array of 64 bytes',
    );
    expect(source.localPath(object)).toBe(file);
  });

  it('refuses a range past the end, naming the file', async () => {
    const file = join(dir, 'short.bin');
    await writeFile(file, bytes(16));
    const object = await source.stat(file);
    const error = await source.readRange(object, 10, 7).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'OUT_OF_RANGE', location: file });
    expect((error as Error).message).toBe(
      `OUT_OF_RANGE: ${file}: bytes [10, 17) lie past the end of its 16 bytes`,
    );
  });

  it('refuses to read a file replaced or rewritten after it was stat-ed, naming the file', async () => {
    const file = join(dir, 'replaced.bin');
    await writeFile(file, bytes(64));
    const before = await source.stat(file);
    // Same size, same content, renamed over: only the inode tells.
    const next = join(dir, 'replaced.next');
    await writeFile(next, bytes(64));
    await rename(next, file);
    const replaced = await source.readRange(before, 0, 8).catch((e: unknown) => e);
    expect(replaced).toBeInstanceOf(StorageError);
    expect(replaced).toMatchObject({ code: 'CHANGED', location: file });
    expect((replaced as Error).message).toContain(`CHANGED: ${file}: the file changed since it was opened`);
    const now = await source.stat(file);
    expect(now.version).not.toBe(before.version);
    expect(await source.readRange(now, 0, 8)).toEqual(bytes(8));
    await writeFile(file, bytes(32));
    await expect(source.readRange(now, 0, 8)).rejects.toMatchObject({ code: 'CHANGED', location: file });
  });

  it('stops when aborted and refuses a directory or a missing file', async () => {
    const file = join(dir, 'abort.bin');
    await writeFile(file, bytes(8));
    const object = await source.stat(file);
    const controller = new AbortController();
    controller.abort(new Error('stop now'));
    await expect(source.readRange(object, 0, 8, { signal: controller.signal })).rejects.toThrow('stop now');
    await expect(source.stat(dir)).rejects.toMatchObject({
      code: 'IO',
      message: `IO: ${dir}: not a regular file`,
    });
    await rm(file);
    await expect(source.readRange(object, 0, 8)).rejects.toMatchObject({ code: 'IO', location: file });
  });
});

describe('byteSourceFor', () => {
  it('gives local files for plain paths and file: URLs', async () => {
    expect(await byteSourceFor('/data/x.rio')).toBe(localFiles);
    expect(await byteSourceFor('relative/x.rio')).toBe(localFiles);
    expect(await byteSourceFor('file:///data/x.rio')).toBe(localFiles);
    expect(await byteSourceFor('C:\\data\\x.rio')).toBe(localFiles);
  });

  it('names an unsupported scheme, and never the credentials of a URL', async () => {
    await expect(byteSourceFor('gs://bucket/x.rio')).rejects.toThrow(
      /^UNSUPPORTED_SCHEME: gs:\/\/bucket\/x\.rio: the URL scheme gs: is not supported/,
    );
    const error = (await byteSourceFor('ftp://user:secret@host/x').catch((e: unknown) => e)) as StorageError;
    expect(error.code).toBe('UNSUPPORTED_SCHEME');
    expect(error.message).not.toContain('secret');
    expect(() => registerByteSource('file', () => localFiles)).toThrow(TypeError);
    expect(() => registerByteSource('x', () => localFiles)).toThrow(TypeError);
  });

  it('loads a registered source once, on first use, and retries a failed load', async () => {
    let loads = 0;
    let fail = true;
    const memory: ByteSource = {
      scheme: 'mem',
      list: async () => [],
      stat: async (location) => ({ location, size: 0, version: undefined }),
      readRange: async () => new Uint8Array(0),
      localPath: (_object: ObjectStat) => undefined,
    };
    registerByteSource('mem', async () => {
      loads += 1;
      if (fail) throw new Error('client library missing');
      return memory;
    });
    expect(loads).toBe(0);
    await expect(byteSourceFor('mem://a')).rejects.toThrow('client library missing');
    fail = false;
    expect(await byteSourceFor('MEM://a')).toBe(memory);
    expect(await byteSourceFor('mem://b')).toBe(memory);
    expect(loads).toBe(2);
  });
});
