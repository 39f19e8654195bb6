import { mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import type { WorkerStatsReport } from '@edl/proto';
import { TFRecordWriter } from '@edl/recordio';
import type { EvaluationResult } from './evaluation-service.js';
import type { JobStatusTracker } from './job-status.js';
import type { Master } from './master.js';
import type { MasterObserver } from './master-observer.js';

/*
 * TensorBoard reads `events.out.tfevents.*` files: TFRecord-framed `tensorflow.Event` protos. Only
 * three shapes are written here, so they are encoded by hand (field numbers of TensorFlow's
 * event.proto and summary.proto): Event { double wall_time = 1; int64 step = 2; string
 * file_version = 3; Summary summary = 5; }, Summary { repeated Value value = 1; },
 * Value { string tag = 1; float simple_value = 2; }.
 */

const utf8 = new TextEncoder();

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}

function lengthDelimited(field: number, bytes: Uint8Array | number[]): number[] {
  return [(field << 3) | 2, ...varint(bytes.length), ...bytes];
}

function wallTimeField(seconds: number): number[] {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, seconds, true);
  return [(1 << 3) | 1, ...b];
}

/** The first event of every events file: `file_version: "brain.Event:2"`. */
export function encodeFileVersionEvent(wallTimeSeconds: number): Uint8Array {
  return Uint8Array.from([
    ...wallTimeField(wallTimeSeconds),
    ...lengthDelimited(3, utf8.encode('brain.Event:2')),
  ]);
}

/** One scalar: an Event with `step` and a Summary holding one `simple_value` under `tag`. */
export function encodeScalarEvent(
  wallTimeSeconds: number,
  step: number,
  tag: string,
  value: number,
): Uint8Array {
  const float = new Uint8Array(4);
  new DataView(float.buffer).setFloat32(0, value, true);
  const summaryValue = [...lengthDelimited(1, utf8.encode(tag)), (2 << 3) | 5, ...float];
  const summary = lengthDelimited(1, summaryValue);
  return Uint8Array.from([
    ...wallTimeField(wallTimeSeconds),
    ...(step > 0 ? [2 << 3, ...varint(step)] : []),
    ...lengthDelimited(5, summary),
  ]);
}

/**
 * Writes the job's scalars for TensorBoard into `dir` (ElasticDL's `--tensorboard-dir`): the
 * training loss (mean per heartbeat window) and throughput against the model version, and every
 * evaluation metric per round (`eval/<name>`). Flushed every `flushMs` and at close, so a running
 * TensorBoard follows the job.
 */
export class TensorBoardWriter implements MasterObserver {
  /** The events file. */
  readonly path: string;
  readonly #writer: TFRecordWriter;
  readonly #master: Master;
  readonly #tracker: JobStatusTracker;
  readonly #timer: NodeJS.Timeout;
  readonly #unobserve: () => void;
  #lastThroughputAt = -1;

  constructor(dir: string, master: Master, tracker: JobStatusTracker, flushMs = 5000) {
    mkdirSync(dir, { recursive: true });
    this.path = path.join(
      dir,
      `events.out.tfevents.${Math.floor(Date.now() / 1000)}.${hostname()}.${process.pid}`,
    );
    this.#writer = TFRecordWriter.create(this.path);
    this.#writer.write(encodeFileVersionEvent(Date.now() / 1000));
    this.#master = master;
    this.#tracker = tracker;
    this.#unobserve = master.observe(this);
    this.#timer = setInterval(() => this.flush(), flushMs);
    this.#timer.unref();
  }

  onHeartbeat(_workerId: string, stats: WorkerStatsReport | undefined): void {
    if (stats?.meanLoss === undefined || stats.lossSteps === 0) return;
    this.#scalar('loss', stats.meanLoss);
  }

  onEvaluation(result: EvaluationResult): void {
    for (const [name, value] of Object.entries(result.metrics)) {
      this.#writer.write(encodeScalarEvent(Date.now() / 1000, result.modelVersion, `eval/${name}`, value));
    }
  }

  /** Writes the latest throughput sample and hands everything buffered to the file. */
  flush(): void {
    const last = this.#tracker.latestThroughput;
    if (last !== undefined && last[0] !== this.#lastThroughputAt) {
      this.#lastThroughputAt = last[0];
      this.#scalar('records_per_second', last[1]);
    }
    this.#writer.flush();
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#unobserve();
    this.flush();
    await this.#writer.close();
  }

  #scalar(tag: string, value: number): void {
    this.#writer.write(encodeScalarEvent(Date.now() / 1000, this.#master.store.version, tag, value));
  }
}
