import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TFRecordReader } from '@edl/recordio';
import { afterAll, describe, expect, it } from 'vitest';
import { JobStatusTracker } from '../src/job-status.js';
import { silentLogger } from '../src/logger.js';
import { Master } from '../src/master.js';
import { encodeFileVersionEvent, encodeScalarEvent, TensorBoardWriter } from '../src/tensorboard.js';

const dir = mkdtempSync(join(tmpdir(), 'edl-tb-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

describe('TensorBoard events', () => {
  it('encodes Event protos as TensorFlow does', () => {
    // Event { wall_time: 1.0, step: 2, summary { value { tag: "loss", simple_value: 0.5 } } }
    expect(hex(encodeScalarEvent(1, 2, 'loss', 0.5))).toBe(
      `09${'000000000000f03f'}1002${'2a0d'}${'0a0b'}${'0a046c6f7373'}${'150000003f'}`,
    );
    // Event { wall_time: 1.0, file_version: "brain.Event:2" }
    expect(hex(encodeFileVersionEvent(1))).toBe(
      `09000000000000f03f1a0d${Buffer.from('brain.Event:2').toString('hex')}`,
    );
  });

  it('writes a TFRecord events file with the loss and evaluation scalars of a job', async () => {
    const master = await Master.create({
      jobType: 'training',
      trainingShards: [{ name: 's', start: 0, count: 10 }],
      logger: silentLogger,
    });
    const tracker = new JobStatusTracker(master, { jobId: 't' });
    const writer = new TensorBoardWriter(join(dir, 'tb'), master, tracker);
    const stats = { backend: 'cpu', steps: 3, records: { training: 30, evaluation: 0, prediction: 0 } };
    master.heartbeat('worker-0', {
      ...stats,
      meanLoss: 0.75,
      lossSteps: 3,
      elapsedSeconds: 1,
      timerSeconds: {},
    });
    master.heartbeat('worker-0', { ...stats, lossSteps: 0, elapsedSeconds: 2, timerSeconds: {} });
    writer.onEvaluation({ round: 1, modelVersion: 4, records: 10, metrics: { accuracy: 0.875 }, time: '' });
    await writer.close();
    tracker.close();
    expect(readdirSync(join(dir, 'tb'))).toEqual([writer.path.split('/').at(-1)]);
    expect(writer.path).toMatch(/events\.out\.tfevents\.\d+\./);
    const reader = await TFRecordReader.open(writer.path);
    const records: string[] = [];
    for await (const record of reader.records()) records.push(hex(record).slice(18)); // after wall_time
    reader.close();
    expect(records).toEqual([
      `1a0d${Buffer.from('brain.Event:2').toString('hex')}`,
      // step 0 (the version before any gradient) is left out, as protobuf leaves out zeros
      `2a0d0a0b0a046c6f737315${'0000403f'}`,
      `1004${'2a16'}${'0a14'}${'0a0d'}${Buffer.from('eval/accuracy').toString('hex')}15${'0000603f'}`,
    ]);
  });
});
