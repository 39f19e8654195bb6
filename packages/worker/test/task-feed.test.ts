import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DataReader, type IterDataset, RecordIODataReader, TFRecordDataReader } from '@edl/data';
import { type GetTaskResult, TaskType } from '@edl/proto';
import {
  type RecordBatch,
  RecordIOError,
  RecordIOReader,
  RecordIOWriter,
  TFRecordWriter,
} from '@edl/recordio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../storage/test/support/s3rver-process.js';
import { minibatches } from '../src/batch-records.js';
import type { MasterConnection } from '../src/master-connection.js';
import { TASK_ORIGIN_KEY, TaskFeed } from '../src/task-feed.js';
import { Timers } from '../src/timers.js';

let dir: string;
const files: string[] = [];
let corrupt: string;

function record(file: number, i: number): Uint8Array {
  const size = i % 9 === 0 ? 0 : 16 + ((i * 41 + file * 7) % 500);
  return Uint8Array.from({ length: size }, (_, b) => (file * 13 + i * 5 + b) & 0xff);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edl-task-feed-'));
  for (let f = 0; f < 4; f++) {
    const path = join(dir, `part-${f}.rio`);
    const writer = await RecordIOWriter.create(path, { compressor: 'gzip', maxChunkBytes: 4000 });
    for (let i = 0; i < 600; i++) writer.write(record(f, i));
    writer.close();
    files.push(path);
  }
  corrupt = files[3] as string;
  const reader = await RecordIOReader.open(corrupt);
  const chunk = reader.chunks[1];
  reader.close();
  if (chunk === undefined) throw new Error('part-3.rio needs two chunks');
  const handle = await open(corrupt, 'r+');
  await handle.write(new Uint8Array([1, 2, 3, 4]), 0, 4, chunk.offset + 24);
  await handle.close();
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

type Step =
  | {
      kind: 'training' | 'evaluation' | 'wait';
      file: number;
      start: number;
      end: number;
      /** A re-issued task's first record as created (sent as the master does). */
      origin?: number;
    }
  | 'finished';

/** How a scripted master names a step's shard and answers: test files, at once (see {@link scriptedMaster}). */
interface ScriptOptions {
  /** The shard of step file `file` (default: the local test file). */
  readonly shardOf?: (file: number) => string;
  /** Waited on before each answer (default: a microtask). */
  readonly roundTrip?: () => Promise<void>;
}

/**
 * The master's get_task side, scripted: each call takes the next answer. `log` records, per call,
 * how many records the test had consumed by then, to see when the feed asks.
 */
function scriptedMaster(steps: Step[], consumed: () => number, script: ScriptOptions = {}) {
  const shardOf = script.shardOf ?? ((file: number) => files[file] as string);
  const roundTrip = script.roundTrip ?? (() => Promise.resolve());
  const log: number[] = [];
  let id = 0;
  const types = { training: TaskType.TRAINING, evaluation: TaskType.EVALUATION, wait: TaskType.WAIT };
  const getTask = async (): Promise<GetTaskResult> => {
    log.push(consumed());
    // Answered at once by default (a real master answers in well under a task's reading time).
    await roundTrip();
    const step = steps.shift() ?? 'finished';
    if (step === 'finished') return { jobFinished: true, jobError: '' };
    id += 1;
    return {
      jobFinished: false,
      jobError: '',
      task: {
        id,
        type: types[step.kind],
        shardName: step.kind === 'wait' ? '' : shardOf(step.file),
        start: step.start,
        end: step.end,
        modelVersion: 0,
        epoch: 0,
        leaseMs: 0,
        extendedConfig: step.origin === undefined ? {} : { [TASK_ORIGIN_KEY]: String(step.origin) },
      },
    };
  };
  const unused = () => Promise.reject(new Error('not used by TaskFeed'));
  const master = {
    getTask,
    reportTaskResult: unused,
    getModel: unused,
    reportVariables: unused,
    reportGradient: unused,
    reportEvaluationMetrics: unused,
    heartbeat: unused,
  } as unknown as MasterConnection;
  return { master, log };
}

interface Run {
  /** Records per task id, as read. */
  readonly tasks: Map<number, Uint8Array[]>;
  /** Task ids per segment. */
  readonly segments: number[][];
  readonly errors: string[];
  readonly log: number[];
  /** The reader's ranges queued on its prefetcher when each task's last record was consumed. */
  readonly queuedAtTaskEnd: (number | undefined)[];
}

/** Runs every segment to the end of the job, as the worker loop does (failed segments drained). */
async function runFeed(
  steps: Step[],
  reader: DataReader<Uint8Array> & Partial<Pick<RecordIODataReader, 'prefetchStats'>>,
  readAhead: boolean,
  script: ScriptOptions & {
    readonly maxTasksAhead?: number;
    /** Waited on after each record consumed (a model's step). */
    readonly step?: () => Promise<void>;
  } = {},
): Promise<Run> {
  let consumed = 0;
  const { master, log } = scriptedMaster([...steps], () => consumed, script);
  const feed = new TaskFeed<Uint8Array>({
    master,
    workerId: 'w',
    readerFor: () => reader,
    timers: new Timers(),
    readAhead,
    ...(script.maxTasksAhead === undefined ? {} : { maxTasksAhead: script.maxTasksAhead }),
    waitMs: 1,
  });
  const tasks = new Map<number, Uint8Array[]>();
  const segments: number[][] = [];
  const errors: string[] = [];
  const queuedAtTaskEnd: (number | undefined)[] = [];
  for (;;) {
    const head = await feed.nextHead();
    if (head === undefined) break;
    const seen = new Set<number>();
    try {
      for await (const value of feed.records(head)) {
        consumed++;
        const slice = feed.take(1)[0];
        if (slice === undefined) throw new Error('a record with no task');
        seen.add(slice.task.id);
        const list = tasks.get(slice.task.id) ?? [];
        list.push(value.slice());
        tasks.set(slice.task.id, list);
        if (slice.completesTask) queuedAtTaskEnd.push(reader.prefetchStats?.rangesEnqueued);
        if (slice.completesTask) await new Promise((resolve) => setImmediate(resolve));
        await script.step?.();
      }
    } catch (error) {
      expect(error).toBeInstanceOf(RecordIOError);
      errors.push((error as RecordIOError).code);
    }
    for (const pending of feed.drain()) seen.add(pending.task.id);
    segments.push([...seen]);
  }
  return { tasks, segments, errors, log, queuedAtTaskEnd };
}

const training = (file: number, start: number, end: number): Step => ({ kind: 'training', file, start, end });

describe('TaskFeed read-ahead', () => {
  const steps: Step[] = [
    training(0, 0, 250),
    training(1, 100, 600),
    training(0, 250, 600),
    training(2, 0, 0),
    { kind: 'evaluation', file: 2, start: 10, end: 310 },
    { kind: 'evaluation', file: 1, start: 0, end: 100 },
    training(2, 300, 600),
    training(0, 0, 250),
  ];

  it('reads the same tasks, records and segments as one task at a time, asking for each next task early', async () => {
    const plain = await RecordIODataReader.open({ files, prefetch: false });
    const base = await runFeed(steps, plain, false);
    for (const threads of [0, 1, 2]) {
      const reader = await RecordIODataReader.open({ files, prefetch: { threads, batchSize: 32 } });
      const run = await runFeed(steps, reader, true);
      expect(run.errors).toEqual([]);
      expect(run.segments).toEqual(base.segments);
      expect([...run.tasks.keys()]).toEqual([...base.tasks.keys()]);
      for (const [id, records] of base.tasks) {
        const got = run.tasks.get(id) as Uint8Array[];
        expect(got.length).toBe(records.length);
        expect(got.every((r, i) => Buffer.compare(r, records[i] as Uint8Array) === 0)).toBe(true);
      }
      // Every task with records was announced before it was read: one range each, none read twice.
      expect(reader.prefetchStats?.rangesEnqueued).toBe(7);
      // The second get_task went out while the first task (250 records) was being read, and its
      // range was queued on the prefetcher before the first task's last record was consumed.
      expect(run.log[1]).toBeLessThan(250);
      expect(run.queuedAtTaskEnd[0]).toBe(2);
      await reader.close();
    }
    // Without read-ahead the next task is asked for once the current one is read; a reader that
    // cannot read ahead (no `prefetch`) keeps that order even with readAhead on.
    expect(base.log[1]).toBe(250);
    const plainAhead = await runFeed(steps, plain, true);
    expect(plainAhead.log).toEqual(base.log);
    expect(plainAhead.segments).toEqual(base.segments);
    const onDemand = await RecordIODataReader.open({ files, prefetch: { threads: 2 } });
    const serial = await runFeed(steps, onDemand, false);
    expect(serial.log[1]).toBe(250);
    expect(serial.queuedAtTaskEnd[0]).toBe(1);
    expect(serial.segments).toEqual(base.segments);
    await onDemand.close();
    await plain.close();
  }, 60_000);

  it('keeps a task fetched ahead when the task before it fails, and reads it next', async () => {
    const failing: Step[] = [
      training(0, 0, 100),
      training(3, 0, 600),
      training(1, 0, 300),
      training(2, 0, 50),
    ];
    const plain = await RecordIODataReader.open({ files, prefetch: false });
    const base = await runFeed(failing, plain, false);
    expect(base.errors).toEqual(['CHECKSUM']);
    const reader = await RecordIODataReader.open({ files, prefetch: { threads: 2, batchSize: 16 } });
    const run = await runFeed(failing, reader, true);
    expect(run.errors).toEqual(['CHECKSUM']);
    // The failed segment drains tasks 1 and 2; task 3 (fetched ahead) opens the next segment.
    expect(run.segments).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(base.segments).toEqual([
      [1, 2],
      [3, 4],
    ]);
    for (const id of [1, 3, 4]) {
      const got = run.tasks.get(id) as Uint8Array[];
      const want = base.tasks.get(id) as Uint8Array[];
      expect(got.length).toBe(want.length);
      expect(got.every((r, i) => Buffer.compare(r, want[i] as Uint8Array) === 0)).toBe(true);
    }
    expect(run.tasks.get(2)?.length).toBe(base.tasks.get(2)?.length);
    await reader.close();
    await plain.close();
  }, 30_000);

  it('asks again after a WAIT answered ahead, and loses no task', async () => {
    const waiting: Step[] = [
      training(0, 0, 200),
      { kind: 'wait', file: 0, start: 0, end: 0 },
      { kind: 'wait', file: 0, start: 0, end: 0 },
      training(1, 0, 200),
      training(2, 0, 200),
    ];
    const reader = await RecordIODataReader.open({ files, prefetch: { threads: 1 } });
    const run = await runFeed(waiting, reader, true);
    // Task ids count answers: 1, then the WAITs (2, 3), then 4 and 5, each read whole and in order.
    expect([...run.tasks.keys()]).toEqual([1, 4, 5]);
    expect(run.tasks.get(4)?.every((r, i) => Buffer.compare(r, record(1, i)) === 0)).toBe(true);
    expect(run.tasks.get(5)?.map((r) => r.length)).toEqual(
      Array.from({ length: 200 }, (_, i) => record(2, i).length),
    );
    expect(run.segments.flat()).toEqual([1, 4, 5]);
    await reader.close();
  }, 30_000);
});

describe('TaskFeed batches', () => {
  const steps: Step[] = [
    training(0, 0, 250),
    training(1, 100, 600),
    training(2, 0, 0),
    training(0, 250, 600),
  ];

  /** Every segment read through feed.batches(), records counted from batch lengths. */
  async function runBatches(reader: DataReader<Uint8Array>) {
    const { master } = scriptedMaster([...steps], () => 0);
    const feed = new TaskFeed<Uint8Array>({
      master,
      workerId: 'w',
      readerFor: () => reader,
      timers: new Timers(),
      waitMs: 1,
    });
    const perTask = new Map<number, Buffer[]>();
    let batches = 0;
    const completed: number[] = [];
    for (;;) {
      const head = await feed.nextHead();
      if (head === undefined) break;
      for await (const batch of feed.batches(head)) {
        batches++;
        let offset = 0;
        for (const slice of feed.take(batch.length)) {
          const list = perTask.get(slice.task.id) ?? [];
          for (let i = 0; i < slice.count; i++) list.push(Buffer.from(batch.get(offset + i)));
          perTask.set(slice.task.id, list);
          offset += slice.count;
          if (slice.completesTask) completed.push(slice.task.id);
        }
        batch.release();
      }
    }
    return { perTask, batches, completed };
  }

  it('yields the decoded batches of readers that have readBatches, and records one by one otherwise', async () => {
    const recordio = await RecordIODataReader.open({ files, prefetch: { threads: 1, batchSize: 64 } });
    const batched = await runBatches(recordio);
    // A reader without the capability: only readRecords (the same records, one per batch).
    const plain = await RecordIODataReader.open({ files, prefetch: false });
    const recordsOnly: DataReader<Uint8Array> = {
      metadata: plain.metadata,
      createShards: () => plain.createShards(),
      readRecords: (range) => plain.readRecords(range),
      describe: () => plain.describe(),
    };
    const single = await runBatches(recordsOnly);
    expect(batched.completed).toEqual([1, 2, 3, 4]);
    expect(single.completed).toEqual([1, 2, 3, 4]);
    expect(single.batches).toBe(250 + 500 + 350);
    expect(batched.batches).toBeLessThan(single.batches / 10);
    for (const [id, want] of single.perTask) {
      const got = batched.perTask.get(id) as Buffer[];
      expect(got.length).toBe(want.length);
      expect(got.every((r, i) => r.equals(want[i] as Buffer))).toBe(true);
    }
    for (let i = 0; i < 250; i++) {
      expect((single.perTask.get(1) as Buffer[])[i]?.equals(Buffer.from(record(0, i)))).toBe(true);
    }
    await recordio.close();
    await plain.close();
  }, 60_000);
});

/** `reader`, with each batch it hands out (and its length then) pushed to `seen`. */
function watchedReader(
  reader: DataReader<Uint8Array>,
  seen: { batch: RecordBatch; length: number }[],
): DataReader<Uint8Array> {
  return {
    metadata: reader.metadata,
    createShards: () => reader.createShards(),
    readRecords: (range) => reader.readRecords(range),
    prefetch: (range) => reader.prefetch?.(range),
    async *readBatches(range) {
      for await (const batch of reader.readBatches?.(range) ?? []) {
        seen.push({ batch: batch as RecordBatch, length: batch.length });
        yield batch;
      }
    },
    describe: () => reader.describe(),
  };
}

describe('TaskFeed dataset (what datasetFn receives)', () => {
  it('serves the records a batch at a time, and (reuseBatches) releases each batch once take() has consumed it', async () => {
    const steps: Step[] = [training(0, 0, 250), training(1, 100, 600), training(0, 250, 260)];
    const { master } = scriptedMaster([...steps], () => 0);
    const reader = await RecordIODataReader.open({ files, prefetch: { threads: 1, batchSize: 64 } });
    // The reader's batches, as the feed received them.
    const seen: { batch: RecordBatch; length: number }[] = [];
    const watched = watchedReader(reader, seen);
    const feed = new TaskFeed<Uint8Array>({
      master,
      workerId: 'w',
      readerFor: () => watched,
      timers: new Timers(),
      reuseBatches: true,
    });
    const head = await feed.nextHead();
    if (head === undefined) throw new Error('expected a task');
    const records = feed.dataset(head, 'TaskFeed(training)');
    expect(String(records)).toBe('TaskFeed(training)');
    const iterator = records.iterator();
    const expectedRecords = [
      ...Array.from({ length: 250 }, (_, i) => record(0, i)),
      ...Array.from({ length: 500 }, (_, i) => record(1, 100 + i)),
      ...Array.from({ length: 10 }, (_, i) => record(0, 250 + i)),
    ];
    const MINIBATCH = 30;
    let consumed = 0;
    /** Records of the minibatches before the previous one. */
    let settled = 0;
    const completed: number[] = [];
    for (;;) {
      // A minibatch: records taken from the dataset (each checked while its batch is held)...
      let n = 0;
      let done = false;
      while (n < MINIBATCH) {
        const next = await iterator.next();
        if (next.done) {
          done = true;
          break;
        }
        expect(Buffer.from(next.value).equals(Buffer.from(expectedRecords[consumed + n] as Uint8Array))).toBe(
          true,
        );
        n++;
      }
      // ...then attributed to tasks. The batches finished by the minibatch before the previous one
      // are released now (the previous one's records may be in use until its step is settled).
      for (const slice of feed.take(n)) if (slice.completesTask) completed.push(slice.task.id);
      let end = 0;
      for (const { batch, length } of seen) {
        end += length;
        expect(batch.released).toBe(end <= settled);
      }
      settled = consumed;
      consumed += n;
      if (done) break;
    }
    expect(consumed).toBe(760);
    expect(completed).toEqual([1, 2, 3]);
    expect(seen.length).toBeGreaterThan(3);
    // The last minibatches' batches are released by the next takes (of the next segment).
    feed.take(0);
    feed.take(0);
    expect(seen.every(({ batch }) => batch.released)).toBe(true);
    // One pass only: the records come from the master's tasks.
    expect(() => records.iterator()).toThrow('datasetFn iterated the shared records dataset twice');
    expect(() => iterator.setState({ consumed: 0 })).toThrow('cannot be restored');
    expect(iterator.getState()).toEqual({ consumed: 760 });
    await reader.close();
  }, 60_000);

  it('never hands a batch back by default: records kept across minibatches stay intact', async () => {
    const { master } = scriptedMaster([training(0, 0, 250), training(1, 100, 600)], () => 0);
    const reader = await RecordIODataReader.open({ files, prefetch: { threads: 1, batchSize: 64 } });
    const seen: { batch: RecordBatch; length: number }[] = [];
    const watched = watchedReader(reader, seen);
    const feed = new TaskFeed<Uint8Array>({
      master,
      workerId: 'w',
      readerFor: () => watched,
      timers: new Timers(),
    });
    const head = await feed.nextHead();
    if (head === undefined) throw new Error('expected a task');
    // A shuffle buffer's worth: every record kept, minibatches of 30 taken meanwhile.
    const kept: Uint8Array[] = [];
    const iterator = feed.dataset(head, 'TaskFeed(training)').iterator();
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      kept.push(next.value);
      if (kept.length % 30 === 0) feed.take(30);
    }
    feed.take(kept.length % 30);
    feed.take(0);
    feed.take(0);
    expect(seen.length).toBeGreaterThan(3);
    expect(seen.some(({ batch }) => batch.released)).toBe(false);
    const expected = [
      ...Array.from({ length: 250 }, (_, i) => record(0, i)),
      ...Array.from({ length: 500 }, (_, i) => record(1, 100 + i)),
    ];
    expect(kept.length).toBe(expected.length);
    const intact = kept.filter((r, i) => Buffer.from(r).equals(Buffer.from(expected[i] as Uint8Array)));
    expect(intact.length).toBe(expected.length);
    await reader.close();
  }, 60_000);
});

describe('TaskFeed minibatches (the batch path) and attribution', () => {
  const steps: Step[] = [training(0, 0, 250), training(1, 100, 600), training(0, 250, 260)];
  const taskRecords = [
    Array.from({ length: 250 }, (_, i) => record(0, i)),
    Array.from({ length: 500 }, (_, i) => record(1, 100 + i)),
    Array.from({ length: 10 }, (_, i) => record(0, 250 + i)),
  ];
  const hex = (r: Uint8Array) => Buffer.from(r).toString('hex');

  /** The minibatches of one segment over all steps, each attributed by take() as the worker does. */
  /** The records dataset of the first segment of `script`, over a fresh reader. */
  async function openRecords(script: Step[], prefetch: false | { threads: number; batchSize: number }) {
    const reader = await RecordIODataReader.open({ files, prefetch });
    const feed = new TaskFeed<Uint8Array>({
      master: scriptedMaster([...script], () => 0).master,
      workerId: 'w',
      readerFor: () => reader,
      timers: new Timers(),
    });
    const head = await feed.nextHead();
    if (head === undefined) throw new Error('expected a task');
    return { feed, reader, records: feed.dataset(head, 'TaskFeed(training)') };
  }

  async function run(shuffle?: { bufferSize: number; seed: number }) {
    const { feed, reader, records } = await openRecords(steps, { threads: 1, batchSize: 64 });
    const batches = minibatches(records, 30, shuffle === undefined ? {} : { shuffle });
    const out: Uint8Array[][] = [];
    const completedAt: number[] = [];
    let consumed = 0;
    for await (const batch of batches) {
      out.push(batch.map((r) => r.slice()));
      consumed += batch.length;
      for (const slice of feed.take(batch.length)) if (slice.completesTask) completedAt.push(consumed);
    }
    expect(() => records.iterator()).toThrow('datasetFn iterated the shared records dataset twice');
    await reader.close();
    return { out, completedAt, name: String(batches) };
  }

  it('cuts minibatches straight from the reader batches: the records, in order, attributed to their tasks', async () => {
    const { out, completedAt, name } = await run();
    expect(name).toBe('TaskFeed(training) -> Minibatches(30)');
    expect(out.map((b) => b.length)).toEqual([...Array.from({ length: 25 }, () => 30), 10]);
    expect(out.flat().map(hex)).toEqual(taskRecords.flat().map(hex));
    expect(completedAt).toEqual([270, 750, 760]);
  }, 60_000);

  it('shuffles within windows of one task: each task keeps exactly its records and completes at the same count', async () => {
    const shuffle = { bufferSize: 64, seed: 5 };
    const { out, completedAt, name } = await run(shuffle);
    expect(name).toBe('TaskFeed(training) -> Minibatches(30, shuffle bufferSize=64)');
    const flat = out.flat().map(hex);
    expect(flat).not.toEqual(taskRecords.flat().map(hex));
    let at = 0;
    for (const recordsOfTask of taskRecords) {
      const part = flat.slice(at, at + recordsOfTask.length);
      expect([...part].sort()).toEqual(recordsOfTask.map(hex).sort());
      // Windows of 64 from the task's start: a record never moves out of its window.
      const expected = recordsOfTask.map(hex);
      for (let w = 0; w < expected.length; w += 64) {
        expect(part.slice(w, w + 64).sort()).toEqual(expected.slice(w, w + 64).sort());
      }
      at += recordsOfTask.length;
    }
    expect(completedAt).toEqual([270, 750, 760]);
    // The same seed, the same order.
    expect((await run(shuffle)).out.flat().map(hex)).toEqual(flat);
  }, 60_000);

  /**
   * A worker consumes the first `resumeAt` outputs of task [100, 600) of part-1 and dies; the master
   * re-issues [100 + resumeAt, 600) with its first record as created. The outputs of the first
   * issue up to `resumeAt` and of the re-issue together are the outputs of one uninterrupted run:
   * every record once, in the same order.
   */
  async function runReissued(
    resumeAt: number,
    read: (records: IterDataset<Uint8Array>) => IterDataset<Uint8Array[]>,
  ) {
    const whole = { kind: 'training', file: 1, start: 100, end: 600 } as const;
    const outputs = async (step: Step) => {
      const { feed, reader, records } = await openRecords([step], { threads: 1, batchSize: 64 });
      const out: string[] = [];
      const ranges: [number, number][] = [];
      for await (const batch of read(records)) {
        out.push(...batch.map(hex));
        for (const slice of feed.take(batch.length)) ranges.push([slice.rangeStart, slice.rangeEnd]);
      }
      await reader.close();
      return { out, ranges };
    };
    const first = await outputs(whole);
    const rest = await outputs({ ...whole, start: 100 + resumeAt, origin: 100 });
    return { first, rest };
  }

  const shuffle = { bufferSize: 64, seed: 9 };
  for (const [path, read] of [
    ['minibatches', (records: IterDataset<Uint8Array>) => minibatches(records, 30, { shuffle })],
    ['records.shuffle().batch()', (records: IterDataset<Uint8Array>) => records.shuffle(shuffle).batch(30)],
  ] as const) {
    it(`${path}: a task re-issued mid-window replays the window and yields exactly the outputs not yet consumed`, async () => {
      for (const resumeAt of [100, 128, 37]) {
        const { first, rest } = await runReissued(resumeAt, read);
        expect([...first.out].sort()).toEqual(taskRecords[1]?.map(hex).sort());
        expect(first.out).not.toEqual(taskRecords[1]?.map(hex));
        // The re-issue's outputs are the first issue's from resumeAt on: nothing twice, nothing lost.
        expect(rest.out).toEqual(first.out.slice(resumeAt));
        // Its progress counts output positions from where it resumed, contiguously to the end.
        expect(rest.ranges[0]?.[0]).toBe(100 + resumeAt);
        expect(rest.ranges.at(-1)?.[1]).toBe(600);
        for (let i = 1; i < rest.ranges.length; i++)
          expect(rest.ranges[i]?.[0]).toBe(rest.ranges[i - 1]?.[1]);
      }
    }, 60_000);
  }

  it('refuses, when datasetFn starts reading, a transform that would break the counting, naming it', async () => {
    const { reader, records } = await openRecords([training(0, 0, 50)], false);
    await expect(records.filter((r) => r.length > 0).toArray()).rejects.toMatchObject({
      code: 'ERR_ATTRIBUTION',
      message: expect.stringMatching(/^Filter over TaskFeed\(training\) would drop records/),
    });
    await reader.close();
  });
});

describe('TaskFeed read-ahead of remote data (s3rver)', () => {
  const FILES = 10;
  const PER_FILE = 30;
  let s3: S3rverProcess;
  /** The environment as it was: the tests point the AWS SDK's variables at s3rver. */
  const saved = { ...process.env };
  /** The bytes of one object: every object holds records of the same sizes. */
  let objectBytes = 0;

  beforeAll(async () => {
    s3 = await startS3rver();
    await s3.createBucket('feed');
    for (let f = 0; f < FILES; f++) {
      const path = join(dir, `remote-${f}.tfrecord`);
      const writer = TFRecordWriter.create(path);
      for (let i = 0; i < PER_FILE; i++)
        writer.write(Uint8Array.from({ length: 200 }, (_, b) => (f + i + b) & 0xff));
      await writer.close();
      const bytes = await readFile(path);
      objectBytes = bytes.byteLength;
      await s3.put('feed', `ahead/part-${f}.tfrecord`, bytes);
    }
    // The default S3 source of `s3://` locations, as a worker process gets it (@edl/storage is not
    // a dependency of the worker): the SDK's variables, path-style for the endpoint.
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
    });
  }, 60_000);

  afterAll(async () => {
    for (const name of ['AWS_ENDPOINT_URL_S3', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION']) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
    await s3?.stop();
  });

  /** A reader of the objects, each opened (indexed) as a master's is, and one task per object. */
  async function remoteTasks(readAheadBytes: number) {
    const reader = await TFRecordDataReader.open({
      dataDir: 's3://feed/ahead/',
      remote: { readAheadBytes, indexCacheDir: await mkdtemp(join(dir, 'cache-')) },
    });
    const shards = await reader.createShards();
    const steps = shards.map((shard, i) => training(i, 0, shard.count));
    const shardOf = (file: number) => (shards[file] as { name: string }).name;
    return { reader, steps, shardOf };
  }

  /** A round trip per get_task (a turn of the event loop), as over the network: the reader plans meanwhile. */
  const roundTrip = () => new Promise<void>((resolve) => setImmediate(resolve));

  it('asks for tasks while the reader has read-ahead budget left, and reads what one task at a time reads', async () => {
    // Room for 2.5 objects: tasks are asked for while fewer than 2.5 objects are announced and
    // unread (the task being read no longer counts), so 3 are held ahead of it, the last one
    // taking the announced bytes past the budget (one task ahead without a budget).
    const { reader, steps, shardOf } = await remoteTasks(Math.floor(2.5 * objectBytes));
    const budgets: Array<{ budgetBytes: number; announcedBytes: number } | undefined> = [];
    const run = await runFeed(steps, reader, true, {
      shardOf,
      roundTrip: () => {
        budgets.push(reader.readAheadBudget?.());
        return roundTrip();
      },
      step: roundTrip,
    });
    const { reader: plain } = await remoteTasks(Math.floor(2.5 * objectBytes));
    const base = await runFeed(steps, plain, false, { shardOf, roundTrip, step: roundTrip });
    expect(run.errors).toEqual([]);
    expect([...run.tasks.keys()]).toEqual(Array.from({ length: FILES }, (_, i) => i + 1));
    expect(run.segments).toEqual(base.segments);
    for (const [id, records] of base.tasks) {
      const got = run.tasks.get(id) as Uint8Array[];
      expect(got.length).toBe(PER_FILE);
      expect(got.every((r, i) => Buffer.compare(r, records[i] as Uint8Array) === 0)).toBe(true);
    }
    // Before the first task's last record was consumed: its own get_task and three ahead.
    expect(run.log.filter((consumed) => consumed < PER_FILE)).toHaveLength(4);
    expect(base.log.filter((consumed) => consumed < PER_FILE)).toHaveLength(1);
    // Each get_task went out with room in the budget (the calls after the last task apart).
    for (const budget of budgets.slice(1, FILES)) {
      expect(budget?.budgetBytes).toBe(Math.floor(2.5 * objectBytes));
      expect(budget?.announcedBytes).toBeLessThan(Math.floor(2.5 * objectBytes));
    }
    // Every object fetched once: the ranges announced ahead were the ones read.
    expect(reader.remoteStats.files.map((file) => file.dataRequests)).toEqual(Array(FILES).fill(1));
    await reader.close();
    await plain.close();
  }, 60_000);

  it('holds at most maxTasksAhead tasks ahead, whatever the budget', async () => {
    const { reader, steps, shardOf } = await remoteTasks(64 * 2 ** 20);
    const run = await runFeed(steps, reader, true, { shardOf, roundTrip, step: roundTrip, maxTasksAhead: 4 });
    expect(run.errors).toEqual([]);
    expect([...run.tasks.keys()]).toEqual(Array.from({ length: FILES }, (_, i) => i + 1));
    // The first task and 4 ahead, then one more as each task starts.
    expect(run.log.filter((consumed) => consumed < PER_FILE)).toHaveLength(5);
    expect(run.log.filter((consumed) => consumed >= PER_FILE && consumed < 2 * PER_FILE)).toHaveLength(1);
    await reader.close();
  }, 60_000);
});
