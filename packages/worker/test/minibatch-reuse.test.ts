import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordIODataReader } from '@edl/data';
import { type GetTaskResult, TaskType } from '@edl/proto';
import { RecordIOWriter } from '@edl/recordio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { minibatches } from '../src/batch-records.js';
import type { MasterConnection } from '../src/master-connection.js';
import { TaskFeed } from '../src/task-feed.js';
import { Timers } from '../src/timers.js';

let dir: string;
let file: string;
const RECORDS = 1800;
const TASK = 600;

/** Record `i`: its index in its first four bytes, then bytes of its own, 40 to 239 long. */
function record(i: number): Uint8Array {
  const r = Uint8Array.from({ length: 40 + ((i * 37) % 200) }, (_, b) => (i * 7 + b * 3) & 0xff);
  new DataView(r.buffer).setUint32(0, i);
  return r;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edl-minibatch-reuse-'));
  file = join(dir, 'part-0.rio');
  const writer = await RecordIOWriter.create(file, { compressor: 'gzip', maxChunkBytes: 8000 });
  for (let i = 0; i < RECORDS; i++) writer.write(record(i));
  writer.close();
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * A master that hands out the file as training tasks of TASK records, then ends the job. Its
 * answers after the first wait for `open()`: the feed asks for the next task when it starts
 * reading one, and the test decides when that task arrives (and is announced to the reader).
 */
function gatedMaster(): { master: MasterConnection; open: () => void } {
  let next = 0;
  let id = 0;
  let opened: (() => void) | undefined;
  let gate = Promise.resolve();
  const getTask = async (): Promise<GetTaskResult> => {
    if (id > 0) await gate;
    gate = new Promise((resolve) => {
      opened = resolve;
    });
    if (next >= RECORDS) return { jobFinished: true, jobError: '' };
    id += 1;
    next += TASK;
    const range = { id, shardName: file, start: next - TASK, end: next };
    const assignment = { type: TaskType.TRAINING, modelVersion: 0, epoch: 0, leaseMs: 0, extendedConfig: {} };
    return { jobFinished: false, jobError: '', task: { ...range, ...assignment } };
  };
  return { master: { getTask } as unknown as MasterConnection, open: () => opened?.() };
}

describe('minibatches over a feed that hands consumed batches back (reuseRecordMemory)', () => {
  it('keeps every record of a shuffle window intact while the window spans batches the feed released', async () => {
    // Batches of 20 records against windows of 128 cut into minibatches of 8: a window goes on
    // past the end of the batches it starts in, which the feed releases a few minibatches later.
    // The spare blocks of the prefetcher can hold every batch of a task.
    const reader = await RecordIODataReader.open({
      files: [file],
      prefetch: { threads: 1, batchSize: 20, maxBufferedBytes: 400_000 },
    });
    const { master, open } = gatedMaster();
    const feed = new TaskFeed<Uint8Array>({
      master,
      workerId: 'w',
      readerFor: () => reader,
      timers: new Timers(),
      reuseBatches: true,
    });
    const seen: number[] = [];
    const wrong: number[] = [];
    const shuffle = { bufferSize: 128, seed: 11 };
    for (;;) {
      const head = await feed.nextHead();
      if (head === undefined) break;
      for await (const rows of minibatches(feed.dataset(head, 'TaskFeed(training)'), 8, { shuffle })) {
        // What a datasetFn that decodes each minibatch as it comes sees.
        for (const row of rows) {
          const i = new DataView(row.buffer, row.byteOffset, row.byteLength).getUint32(0);
          seen.push(i);
          if (i >= RECORDS || !Buffer.from(row).equals(Buffer.from(record(i)))) wrong.push(i);
        }
        feed.take(rows.length);
        // Six minibatches into a task, its batch of records [0, 20) has been released while the
        // first window [0, 128) still holds some of them: the next task arrives now, and the
        // prefetcher's thread assembles its batches into the blocks handed back.
        if (seen.length % TASK === 6 * 8) {
          open();
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      open();
    }
    const recycled = reader.prefetchStats?.batchesRecycled;
    await reader.close();
    expect(wrong).toEqual([]);
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: RECORDS }, (_, i) => i));
    expect(seen).not.toEqual(Array.from({ length: RECORDS }, (_, i) => i));
    expect(recycled).toBeGreaterThan(0);
  }, 60_000);
});
