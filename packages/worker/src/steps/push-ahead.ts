import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { GradientStatus } from '@edl/proto';
import { tf } from '../../hooks/tfjs-commonjs.mjs';
import { minibatchTensors } from '../minibatch-slice.js';
import type { Minibatch } from '../model-definition.js';
import type { RecordSlice } from '../task-feed.js';
import type { SentGradient } from './mirrored-model.js';
import type { PlainSteps } from './plain-step.js';
import { isApplied } from './reports.js';
import type { StepContext } from './step-context.js';

/** A training step's gradient sent ahead, with what it takes to count or redo it. */
interface InFlightPush extends SentGradient {
  /** The step's minibatch, kept until the answer: a STALE one is computed again. */
  readonly batch: Minibatch;
  readonly slice: RecordSlice;
  readonly loss: number;
  /** The model version the gradient was computed on. */
  readonly modelVersion: number;
  /** The slice ends its task: report the task once the gradient is applied. */
  finishesTask: boolean;
}

/**
 * The push-ahead strategy (see `WorkerOptions.pushAhead`): step n's gradient goes out unanswered
 * and step n+1 is computed while the master applies it. With a confirmed replica (the mirrored
 * strategy) the same overlap costs nothing in accuracy, and this strategy runs it too.
 */
export class PushAhead {
  readonly #c: StepContext;
  readonly #plain: PlainSteps;
  /** Pushes ahead until the first STALE pushed-ahead gradient ('auto'), or always (true). */
  readonly #option: boolean | 'auto';
  /** Whether training steps push ahead; 'auto' turns false at the first STALE pushed-ahead gradient. */
  #pushAhead: boolean;
  /** The gradient pushed ahead, not yet answered (at most one). */
  #inFlight: InFlightPush | undefined;

  constructor(context: StepContext, plain: PlainSteps, option: boolean | 'auto') {
    this.#c = context;
    this.#plain = plain;
    this.#option = option;
    this.#pushAhead = option === true || option === 'auto';
  }

  /** Whether the next training step runs ahead of the previous one's answer. */
  get runsAhead(): boolean {
    return this.#pushAhead || this.#c.model.replicaConfirmed;
  }

  /** Whether `batch` is the minibatch of the gradient in flight (its tensors are kept until the answer). */
  holds(batch: Minibatch): boolean {
    return this.#inFlight?.batch === batch;
  }

  /**
   * Has the task of `slice` reported once the gradient in flight, if it is `slice`'s, is applied;
   * returns false when no gradient of `slice` is in flight.
   */
  finishTaskOnAnswer(slice: RecordSlice): boolean {
    const inFlight = this.#inFlight;
    if (inFlight?.slice !== slice) return false;
    inFlight.finishesTask = true;
    return true;
  }

  /**
   * One training step pushed ahead: computed on the model held now, while the previous step's
   * gradient is still with the master; then that answer is taken (its model adopted) and this
   * step's gradient goes out unanswered. Its records count once the master accepts it. With a
   * replica the model held now already includes the previous gradient (see `mirrorUpdates`), so
   * the step is exactly the one a worker waiting for the answer would compute.
   */
  async train(batch: Minibatch, slice: RecordSlice): Promise<void> {
    const { model, tasks, timers } = this.#c;
    if (this.#inFlight === undefined && model.pullDue) await model.pull(-1, 'training');
    const modelVersion = this.#c.runner.version;
    const onReplica = this.#inFlight?.mirrored === true;
    const replicasDropped = model.replicasDropped;
    const step = await this.#plain.computeStep(batch, [slice]);
    await this.settle();
    if (tasks.isDropped(slice.task.id)) return;
    if (onReplica && model.replicasDropped !== replicasDropped) {
      // Computed on a replica the master turned out not to hold: computed again on its model.
      timers.countGradient(true);
      await this.#plain.train(batch, [slice]);
      tasks.countRecords('training', slice);
      return;
    }
    if (!this.runsAhead) {
      // The previous answer turned pushing ahead off: this step waits for its answer.
      await this.#plain.train(batch, [slice], { step, modelVersion });
      tasks.countRecords('training', slice);
      return;
    }
    // Only the sending (encoding, and the replica's update) is timed here; the wait, if any, is
    // timed when the answer is taken.
    const begin = performance.now();
    const { response, mirrored } = model.send([slice], step.gradients, modelVersion);
    timers.add('report_gradient', performance.now() - begin, slice.task.id);
    // Settled by settle(); until then a failure must not count as unhandled.
    response.catch(() => undefined);
    this.#inFlight = { batch, slice, loss: step.loss, response, mirrored, modelVersion, finishesTask: false };
    // One turn of the event loop before the next step's compute, which does not yield: gRPC hands
    // the request to HTTP/2 a few ticks after the call, and without this turn the gradient left only
    // once the next step was computed (measured: it reached the master 45 ms later, not 3 ms).
    await yieldToEventLoop();
  }

  /** Waits for the gradient pushed ahead, if any, and takes its answer as a plain step would. */
  async settle(): Promise<void> {
    const pending = this.#inFlight;
    if (pending === undefined) return;
    this.#inFlight = undefined;
    const { model, tasks, timers } = this.#c;
    const { batch, slice } = pending;
    try {
      const response = await timers.time('report_gradient', () => pending.response, slice.task.id);
      const modelTaken = model.checkMirror(pending.mirrored, pending.modelVersion, response);
      const applied = isApplied(response);
      timers.countGradient(!applied);
      if (applied) {
        this.#plain.stepDone(pending.loss, response, modelTaken);
      } else if (response.status === GradientStatus.STALE) {
        // Computed one own update too old for this master's staleness bound.
        if (this.#option !== true) this.#pushAhead = false;
        await model.refresh(response, modelTaken);
        await this.#plain.train(batch, [slice]);
      } else {
        tasks.rejected(slice, response.status, 'gradient');
      }
      if (tasks.isDropped(slice.task.id)) return;
      tasks.countRecords('training', slice);
      if (pending.finishesTask) await tasks.finishTask(slice.task, slice.task.end - slice.task.start);
    } finally {
      tf.dispose(minibatchTensors(batch));
    }
  }
}
