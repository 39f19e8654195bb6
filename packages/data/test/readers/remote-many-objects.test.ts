import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeSidecarIndex, TFRecordWriter } from '@edl/recordio';
import {
  type ByteSource,
  type ObjectStat,
  type ReadRangeOptions,
  registerByteSource,
  S3ByteSource,
} from '@edl/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../../../storage/test/support/fault-proxy.js';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../../storage/test/support/s3rver-process.js';
import type { RecordRange, Shard } from '../../src/protocols.js';
import {
  DEFAULT_MAX_RANGES_AHEAD,
  RANGES_AHEAD_UNMEASURED,
  wantsAnotherRangeAhead,
} from '../../src/read-ahead.js';
import { buildSidecarIndex, createDataReader, TFRecordDataReader } from '../../src/readers/index.js';

// A worker's reader of a directory of many small TFRecord objects (one task each) behind a proxy
// that delays every request: the files of announced tasks are opened (their sidecars fetched) at
// once, not one after another, so several GETs are in flight together; the records are those of
// the local read.

const BUCKET = 'many-objects';
const FILES = 24;
const LATENCY_MS = 50;
const MAX_IN_FLIGHT = 8;
/** How long the first object's sidecar GET is held: far longer than the other files' opens and GETs. */
const SLOW_INDEX_MS = 1000;

/** A ranged read's start or end, as the source saw it. */
interface ReadEvent {
  readonly kind: 'start' | 'end';
  readonly location: string;
}

/**
 * The S3 source, counting its ranged reads in flight (sidecar and data GETs alike) and logging
 * when each starts and ends; the reads of `slowLocation` are held `slowMs` before they go out.
 */
class CountingSource implements ByteSource {
  readonly scheme = 's3';
  inFlight = 0;
  mostInFlight = 0;
  reads = 0;
  readonly events: ReadEvent[] = [];
  slowLocation: string | undefined;
  slowMs = 0;

  constructor(private readonly s3: S3ByteSource) {}

  list(location: string, options?: { readonly signal?: AbortSignal }): Promise<ObjectStat[]> {
    return this.s3.list(location, options);
  }

  stat(location: string, options?: { readonly signal?: AbortSignal }): Promise<ObjectStat> {
    return this.s3.stat(location, options);
  }

  async readRange(
    object: ObjectStat,
    offset: number,
    length: number,
    options?: ReadRangeOptions,
  ): Promise<Uint8Array> {
    this.reads++;
    this.inFlight++;
    this.mostInFlight = Math.max(this.mostInFlight, this.inFlight);
    this.events.push({ kind: 'start', location: object.location });
    try {
      if (object.location === this.slowLocation) await new Promise((wake) => setTimeout(wake, this.slowMs));
      return await this.s3.readRange(object, offset, length, options);
    } finally {
      this.inFlight--;
      this.events.push({ kind: 'end', location: object.location });
    }
  }

  localPath(): undefined {
    return undefined;
  }
}

let s3: S3rverProcess;
let proxy: FaultProxy;
let s3Source: S3ByteSource;
let scratch: string;
let localDir: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'edl-remote-many-'));
  localDir = join(scratch, 'data');
  await mkdir(localDir);
  s3 = await startS3rver();
  await s3.createBucket(BUCKET);
  for (let file = 0; file < FILES; file++) {
    const name = `part-${String(file).padStart(3, '0')}.tfrecord`;
    const path = join(localDir, name);
    const writer = TFRecordWriter.create(path);
    for (let i = 0; i < 40 + file; i++) writer.write(Buffer.alloc(100 + ((i * 37 + file) % 300), i + file));
    await writer.close();
    await s3.put(BUCKET, `dir/${name}`, await readFile(path));
    const { index } = await buildSidecarIndex(path, 'tfrecord');
    await s3.put(BUCKET, `dir/${name}.idx`, encodeSidecarIndex(index));
  }
  proxy = await FaultProxy.start(Number(new URL(s3.endpoint).port));
  proxy.latencyMs = LATENCY_MS;
  s3Source = new S3ByteSource({ endpoint: proxy.endpoint, credentials: S3RVER_CREDENTIALS });
}, 60_000);

afterAll(async () => {
  registerByteSource('s3', () => new S3ByteSource());
  await s3Source?.close();
  await proxy?.close();
  await s3?.stop();
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});

/** The records of each task, copied out. */
async function readTaskRecords(
  reader: { readBatches(range: RecordRange): AsyncIterable<Iterable<Uint8Array>> },
  tasks: readonly RecordRange[],
): Promise<Buffer[][]> {
  const records: Buffer[][] = [];
  for (const task of tasks) {
    const taskRecords: Buffer[] = [];
    for await (const batch of reader.readBatches(task)) {
      for (const record of batch) taskRecords.push(Buffer.from(record));
    }
    records.push(taskRecords);
  }
  return records;
}

function wholeShardTasks(shards: readonly Shard[]): RecordRange[] {
  return shards.map((shard) => ({
    shardName: shard.name,
    start: shard.start,
    end: shard.start + shard.count,
  }));
}

/**
 * The local read's records per file, and the tasks (one per file) a master's reader of the
 * directory cuts through `source` with its index cache in `indexCacheDir`.
 */
async function localRecordsAndMasterTasks(
  source: ByteSource,
  indexCacheDir: string,
): Promise<{ expected: Buffer[][]; tasks: RecordRange[] }> {
  const local = await TFRecordDataReader.open({ dataDir: localDir });
  const expected = await readTaskRecords(local, wholeShardTasks(await local.createShards()));
  await local.close();
  registerByteSource('s3', () => source);
  const master = await createDataReader(`s3://${BUCKET}/dir/`, {
    type: 'tfrecord',
    remote: { indexCacheDir },
  });
  const tasks = wholeShardTasks(await master.createShards());
  await master.close?.();
  expect(tasks).toHaveLength(FILES);
  return { expected, tasks };
}

/** What a worker-like reader read of every task, announced ahead, with the local read's records. */
interface WorkerRead {
  readonly tasks: readonly RecordRange[];
  readonly expected: Buffer[][];
  readonly records: Buffer[][];
  readonly stats: TFRecordDataReader['remoteStats'];
}

/**
 * Reads the directory as a worker does, through `counting`: the master's reader cuts the shards;
 * the worker's reader, with an index cache of its own, is given tasks by name and must open each
 * file itself (one sidecar GET each). With `slowFirstIndex`, the first task's sidecar GET is held
 * `SLOW_INDEX_MS`; `read` reads the announced tasks (in order, by default).
 */
async function readAsWorker(
  counting: CountingSource,
  slowFirstIndex: boolean,
  read: (worker: TFRecordDataReader, tasks: readonly RecordRange[]) => Promise<Buffer[][]> = readTaskRecords,
): Promise<WorkerRead> {
  const { expected, tasks } = await localRecordsAndMasterTasks(
    counting,
    await mkdtemp(join(scratch, 'master-cache-')),
  );

  const worker = (await createDataReader(`s3://${BUCKET}/dir/`, {
    type: 'tfrecord',
    remote: { indexCacheDir: await mkdtemp(join(scratch, 'worker-cache-')), maxInFlight: MAX_IN_FLIGHT },
  })) as TFRecordDataReader;
  // A reader of remote files announces the tasks it is given ahead.
  const announce = worker.prefetch;
  expect(announce).toBeDefined();
  counting.mostInFlight = 0;
  counting.reads = 0;
  counting.events.length = 0;
  if (slowFirstIndex) {
    counting.slowLocation = `${tasks[0]?.shardName}.idx`;
    counting.slowMs = SLOW_INDEX_MS;
  }
  for (const task of tasks) announce?.(task);
  const records = await read(worker, tasks);
  const stats = worker.remoteStats;
  await worker.close();
  return { tasks, expected, records, stats };
}

describe('a worker reading many small objects behind a 50 ms proxy', () => {
  it('opens the announced files together: several GETs in flight at once, records identical to local', async () => {
    const counting = new CountingSource(s3Source);
    const { expected, records, stats } = await readAsWorker(counting, false);

    expect(records).toEqual(expected);
    // One sidecar GET and one data GET per file, none repeated.
    expect(counting.reads).toBe(2 * FILES);
    expect(stats.files.map((file) => file.index.origin)).toEqual(new Array(FILES).fill('sidecar'));
    // Opened one after another, at most a sidecar GET and a data GET would overlap.
    expect(counting.mostInFlight).toBeGreaterThanOrEqual(MAX_IN_FLIGHT / 2);
    // At most maxInFlight opens and maxInFlight data GETs at once.
    expect(counting.mostInFlight).toBeLessThanOrEqual(2 * MAX_IN_FLIGHT);
  });

  it("plans each announced range when its own file is open: a slow first index holds back no other object's GET", async () => {
    const counting = new CountingSource(s3Source);
    const { tasks, expected, records } = await readAsWorker(counting, true);
    const slowLocation = counting.slowLocation;

    expect(records).toEqual(expected);
    expect(counting.reads).toBe(2 * FILES);
    const slowEnd = counting.events.findIndex(
      (event) => event.kind === 'end' && event.location === slowLocation,
    );
    expect(slowEnd).toBeGreaterThan(0);
    // The data GETs that went out while the first object's index was still loading: with ranges
    // planned in announce order there were none (every later one waited for the first plan).
    const dataBeforeSlowIndex = counting.events
      .slice(0, slowEnd)
      .filter((event) => event.kind === 'start' && !event.location.endsWith('.idx'))
      .map((event) => event.location);
    expect(dataBeforeSlowIndex.length).toBeGreaterThanOrEqual(MAX_IN_FLIGHT);
    expect(dataBeforeSlowIndex).not.toContain(tasks[0]?.shardName);
    expect(new Set(dataBeforeSlowIndex).size).toBe(dataBeforeSlowIndex.length);
    expect(counting.mostInFlight).toBeLessThanOrEqual(2 * MAX_IN_FLIGHT);
  });

  it('gives up a slow announced range that the reader passed: fetched only when it is read, once', async () => {
    const counting = new CountingSource(s3Source);
    let dataBeforeItsRead = -1;
    let first = '';
    const { expected, records } = await readAsWorker(counting, true, async (worker, tasks) => {
      const [firstTask, ...rest] = tasks;
      if (firstTask === undefined) throw new Error('no tasks');
      first = firstTask.shardName;
      // The later tasks are read first (their plans did not wait for the first's index)...
      const later = await readTaskRecords(worker, rest);
      // ...and the first is read once its index is long loaded: passed over, it was not fetched ahead.
      const slowLocation = counting.slowLocation;
      while (!counting.events.some((event) => event.kind === 'end' && event.location === slowLocation)) {
        await new Promise((wake) => setTimeout(wake, 20));
      }
      await new Promise((wake) => setTimeout(wake, 4 * LATENCY_MS));
      dataBeforeItsRead = counting.events.filter(
        (event) => event.kind === 'start' && event.location === first,
      ).length;
      const [firstRecords = []] = await readTaskRecords(worker, [firstTask]);
      return [firstRecords, ...later];
    });

    expect(records).toEqual(expected);
    expect(dataBeforeItsRead).toBe(0);
    const firstData = counting.events.filter((event) => event.kind === 'start' && event.location === first);
    expect(firstData).toHaveLength(1);
    expect(counting.reads).toBe(2 * FILES);
  });

  /**
   * Reads every task as the worker's TaskFeed announces them (`wantsAnotherRangeAhead`, one more at
   * a time, a turn of the event loop between), spending `trainMs` on each task after reading it;
   * returns the records and, per task, the tasks held announced ahead when its read started.
   */
  async function readPaced(
    trainMs: number,
  ): Promise<{ records: Buffer[][]; expected: Buffer[][]; heldAtRead: number[] }> {
    const cacheDir = await mkdtemp(join(scratch, 'paced-cache-'));
    const { expected, tasks } = await localRecordsAndMasterTasks(s3Source, cacheDir);
    // The worker shares the master's index cache (as a worker pod is handed the indexes).
    const worker = (await createDataReader(`s3://${BUCKET}/dir/`, {
      type: 'tfrecord',
      remote: { indexCacheDir: cacheDir },
    })) as TFRecordDataReader;
    let announced = 0;
    const heldAtRead: number[] = [];
    const records: Buffer[][] = [];
    for (let i = 0; i < tasks.length; i++) {
      if (announced <= i) worker.prefetch?.(tasks[announced++] as RecordRange);
      while (announced < tasks.length && wantsAnotherRangeAhead(worker, announced - i - 1)) {
        worker.prefetch?.(tasks[announced++] as RecordRange);
        await new Promise(setImmediate);
      }
      heldAtRead.push(announced - i - 1);
      records.push(...(await readTaskRecords(worker, [tasks[i] as RecordRange])));
      if (trainMs > 0) await new Promise((wake) => setTimeout(wake, trainMs));
    }
    await worker.close();
    return { records, expected, heldAtRead };
  }

  it('holds as many tasks ahead as hide the fetch time at the pace they are read: more than 16 for a fast consumer, a few for a training one', async () => {
    expect(DEFAULT_MAX_RANGES_AHEAD).toBeGreaterThan(RANGES_AHEAD_UNMEASURED);
    const latency = proxy.latencyMs;
    // Slow fetches against a consumer that reads a small task in well under a millisecond.
    proxy.latencyMs = 200;
    try {
      const fast = await readPaced(0);
      expect(fast.records).toEqual(fast.expected);
      // Once a fetch and two reads are measured it wants every task left (the cap is 64).
      expect(Math.max(...fast.heldAtRead)).toBeGreaterThan(RANGES_AHEAD_UNMEASURED);
    } finally {
      proxy.latencyMs = latency;
    }
    // A model that trains 150 ms per task, GETs of about 50 ms: 1.5 * 50 / 150 + 1, a task or two.
    const training = await readPaced(150);
    expect(training.records).toEqual(training.expected);
    // Nothing measured before the second read starts: 16 ahead at the first two reads. Then no task
    // is announced until those are down to a few (at a fixed 16, one more at every read).
    expect(training.heldAtRead.slice(0, 2)).toEqual([RANGES_AHEAD_UNMEASURED, RANGES_AHEAD_UNMEASURED]);
    expect(training.heldAtRead.slice(2, 12)).toEqual(
      Array.from({ length: 10 }, (_, i) => RANGES_AHEAD_UNMEASURED - 1 - i),
    );
    expect(Math.max(...training.heldAtRead.slice(RANGES_AHEAD_UNMEASURED + 2))).toBeLessThanOrEqual(4);
  }, 60_000);
});
