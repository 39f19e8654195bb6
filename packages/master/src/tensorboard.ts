import { mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import type { WorkerStatsReport } from '@edl/proto';
import { getAddon, TFRecordWriter } from '@edl/recordio';
import { putObject, schemeOf } from '@edl/storage';
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

/** Where the encoded events go: a local events file, or rolled objects in object storage. */
interface EventsSink {
  /** The events file, or (object storage) the name its parts share, `<name>.000001` and on. */
  readonly path: string;
  write(event: Uint8Array): void;
  /** Hands what is buffered on: to the file, or (object storage) as a new part when one is due. */
  flush(): void;
  close(): Promise<void>;
}

/** A local events file, flushed as it goes so that a running TensorBoard follows the job. */
class LocalEventsFile implements EventsSink {
  readonly path: string;
  readonly #writer: TFRecordWriter;

  constructor(dir: string, name: string) {
    mkdirSync(dir, { recursive: true });
    this.path = path.join(dir, name);
    this.#writer = TFRecordWriter.create(this.path);
    this.#writer.write(encodeFileVersionEvent(Date.now() / 1000));
  }

  write(event: Uint8Array): void {
    this.#writer.write(event);
  }

  flush(): void {
    this.#writer.flush();
  }

  close(): Promise<void> {
    return this.#writer.close();
  }
}

/** One event framed as a TFRecord (the native encoder the writers use). */
function framed(event: Uint8Array): Uint8Array {
  return getAddon().tfrecordEncode(event, Uint32Array.of(0, event.length));
}

/**
 * Events in object storage, which has no append: the events are buffered and rolled into a new
 * object, `<name>.000001`, `<name>.000002`, ..., every `rollMs` and at close. Each part is a whole
 * events file that starts with its own file-version event; TensorBoard reads every `*tfevents*`
 * object of the folder in name order, so it follows the job one part behind. Memory: the events of
 * one roll period.
 */
class RolledEventObjects implements EventsSink {
  readonly path: string;
  readonly #rollMs: number;
  /** Framed events not uploaded yet. */
  #buffered: Uint8Array[] = [];
  #bufferedSince = Date.now();
  #parts = 0;
  /** Uploads run one after another, so that parts appear in order. */
  #uploads: Promise<void> = Promise.resolve();
  #failure: unknown;

  constructor(dir: string, name: string, rollMs: number) {
    this.path = `${dir.replace(/\/+$/, '')}/${name}`;
    this.#rollMs = rollMs;
  }

  write(event: Uint8Array): void {
    if (this.#buffered.length === 0) this.#bufferedSince = Date.now();
    this.#buffered.push(framed(event));
  }

  flush(): void {
    if (this.#buffered.length > 0 && Date.now() - this.#bufferedSince >= this.#rollMs) this.#roll();
  }

  /** Uploads the last part; rejects, naming the object, when a part could not be written. */
  async close(): Promise<void> {
    if (this.#buffered.length > 0) this.#roll();
    await this.#uploads;
    if (this.#failure !== undefined) throw this.#failure;
  }

  #roll(): void {
    const part = Buffer.concat([framed(encodeFileVersionEvent(Date.now() / 1000)), ...this.#buffered]);
    this.#buffered = [];
    this.#parts++;
    const location = `${this.path}.${String(this.#parts).padStart(6, '0')}`;
    this.#uploads = this.#uploads.then(() =>
      putObject(location, part).catch((error: unknown) => {
        // The first failure is kept for close; the job goes on (the scalars are a report of it).
        this.#failure ??= new Error(
          `could not write the TensorBoard events object ${location}: ${String(error)}`,
        );
      }),
    );
  }
}

/**
 * Writes the job's scalars for TensorBoard into `dir` (ElasticDL's `--tensorboard-dir`): the
 * training loss (mean per heartbeat window) and throughput against the model version, and every
 * evaluation metric per round (`eval/<name>`). A local folder gets one events file, flushed every
 * `flushMs` and at close, so a running TensorBoard follows the job; an `s3://bucket/prefix/` gets
 * rolled events objects (S3 has no append), one every `rollMs` and one at close.
 */
export class TensorBoardWriter implements MasterObserver {
  readonly #sink: EventsSink;
  readonly #master: Master;
  readonly #tracker: JobStatusTracker;
  readonly #timer: NodeJS.Timeout;
  readonly #unobserve: () => void;
  #lastThroughputAt = -1;

  /**
   * @param flushMs how often buffered events are handed on
   * @param rollMs object storage: how often a new events object is rolled
   */
  constructor(dir: string, master: Master, tracker: JobStatusTracker, flushMs = 5000, rollMs = 60_000) {
    const name = `events.out.tfevents.${Math.floor(Date.now() / 1000)}.${hostname()}.${process.pid}`;
    const scheme = schemeOf(dir);
    this.#sink =
      scheme === undefined || scheme === 'file'
        ? new LocalEventsFile(dir, name)
        : new RolledEventObjects(dir, name, rollMs);
    this.#master = master;
    this.#tracker = tracker;
    this.#unobserve = master.observe(this);
    this.#timer = setInterval(() => this.flush(), flushMs);
    this.#timer.unref();
  }

  /** The events file; in object storage, the name its parts share (`<path>.000001`, ...). */
  get path(): string {
    return this.#sink.path;
  }

  onHeartbeat(_workerId: string, stats: WorkerStatsReport | undefined): void {
    if (stats?.meanLoss === undefined || stats.lossSteps === 0) return;
    this.#scalar('loss', stats.meanLoss);
  }

  onEvaluation(result: EvaluationResult): void {
    for (const [name, value] of Object.entries(result.metrics)) {
      this.#sink.write(encodeScalarEvent(Date.now() / 1000, result.modelVersion, `eval/${name}`, value));
    }
  }

  /** Writes the latest throughput sample and hands everything buffered on. */
  flush(): void {
    const last = this.#tracker.latestThroughput;
    if (last !== undefined && last[0] !== this.#lastThroughputAt) {
      this.#lastThroughputAt = last[0];
      this.#scalar('records_per_second', last[1]);
    }
    this.#sink.flush();
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#unobserve();
    this.flush();
    await this.#sink.close();
  }

  #scalar(tag: string, value: number): void {
    this.#sink.write(encodeScalarEvent(Date.now() / 1000, this.#master.store.version, tag, value));
  }
}
