import { type DenseUpdateRef, GradientStatus } from '@edl/proto';
import { WorkerError } from '../errors.js';
import type { Minibatch } from '../model-definition.js';
import type { StepResult } from '../model-runner.js';
import type { RecordSlice } from '../task-feed.js';
import { withStepRows } from './embedding-rows.js';
import type { GradientAnswer } from './mirrored-model.js';
import { isApplied } from './reports.js';
import type { StepContext } from './step-context.js';

/** A step computed before it was handed to {@link PlainSteps.train}, and the model version it was computed on. */
export interface ComputedStep {
  readonly step: StepResult;
  readonly modelVersion: number;
}

/**
 * The plain training step, as ElasticDL's worker takes it: compute the gradient, push it, wait for
 * the answer, which brings the next step's model in the same round trip; a STALE answer has the
 * step computed again on the newer model (up to `maxStaleRetries` times).
 */
export class PlainSteps {
  readonly #c: StepContext;
  readonly #maxStaleRetries: number;

  constructor(context: StepContext, maxStaleRetries: number) {
    this.#c = context;
    this.#maxStaleRetries = maxStaleRetries;
  }

  /**
   * Computes the gradients of one step on the model held now; with distributed embedding layers,
   * on the rows of the minibatch's ids pulled from the parameter-server shards just before.
   */
  computeStep(batch: Minibatch, slices: readonly RecordSlice[]): Promise<StepResult> {
    const [first, ...rest] = slices as [RecordSlice, ...RecordSlice[]];
    return withStepRows(this.#c, batch.features, true, (embeddings) =>
      this.#c.timers.time(
        'compute_loss',
        () =>
          this.#c.runner.computeGradients(
            batch,
            {
              taskId: first.task.id,
              shardName: first.task.shardName,
              rangeStart: first.rangeStart,
              rangeEnd: (rest.at(-1) ?? first).rangeEnd,
            },
            embeddings,
          ),
        first.task.id,
      ),
    );
  }

  /**
   * One training step on `batch`, whose records are `slices` (one per task, in order). The push of
   * the gradient brings the next step's model back in the same round trip. Returns false when the
   * master no longer holds one of several ranges: the caller then steps task by task.
   */
  async train(batch: Minibatch, slices: readonly RecordSlice[], computed?: ComputedStep): Promise<boolean> {
    const { model, timers, tasks } = this.#c;
    const [first] = slices as [RecordSlice, ...RecordSlice[]];
    const taskId = first.task.id;
    if (computed === undefined && model.pullDue) await model.pull(-1, 'training');
    for (let attempt = 0; ; attempt++) {
      const given = attempt === 0 ? computed : undefined;
      const modelVersion = given?.modelVersion ?? this.#c.runner.version;
      const step = given?.step ?? (await this.computeStep(batch, slices));
      const begin = performance.now();
      let response: GradientAnswer;
      let mirrored: boolean;
      try {
        const sent = model.send(slices, step.gradients, modelVersion);
        mirrored = sent.mirrored;
        response = await sent.response;
      } finally {
        timers.add('report_gradient', performance.now() - begin, taskId);
      }
      const modelTaken = model.checkMirror(mirrored, modelVersion, response);
      const applied = isApplied(response);
      timers.countGradient(!applied);
      if (applied) {
        await this.pushRows(step, modelVersion, taskId, response.update);
        this.stepDone(step.loss, response, modelTaken);
        return true;
      }
      if (response.status === GradientStatus.STALE && attempt < this.#maxStaleRetries) {
        await model.refresh(response, modelTaken);
        continue;
      }
      if (response.status === GradientStatus.TASK_NOT_HELD && slices.length > 1) return false;
      tasks.rejected(first, response.status, 'gradient');
      return true;
    }
  }

  /**
   * Pushes a step's rows gradients, and its dense gradient where the shards hold the dense
   * variables (as part of `update`, the one the master's answer named), to the parameter-server
   * shards once the master has accepted the step (ACCEPTED, or ALREADY_APPLIED for a resent one whose first answer was lost): a
   * step the master refused (STALE, a task no longer held) is computed again or dropped, and its
   * rows gradient must not reach the shards. A worker that dies in between leaves the master to ask
   * the shards whether the push arrived, and to roll the job back to its last cut if it did not
   * (docs/master.md): no rows update is lost or applied twice.
   */
  async pushRows(
    step: StepResult,
    modelVersion: number,
    taskId: number,
    update: DenseUpdateRef | undefined,
  ): Promise<void> {
    const { embeddings, timers } = this.#c;
    if (embeddings === undefined) return;
    const rows = step.rows ?? [];
    if (embeddings.dense !== undefined && update === undefined)
      throw new WorkerError(
        'MASTER_ERROR',
        `The master accepted step of version ${modelVersion} without naming its update: the dense gradient cannot go to the parameter-server shards`,
      );
    const dense =
      embeddings.dense === undefined || update === undefined
        ? undefined
        : { gradients: step.gradients, update };
    if (rows.length === 0 && dense === undefined) return;
    await timers.time('report_gradient', () => embeddings.servers.push(rows, modelVersion, dense), taskId);
  }

  /**
   * An applied step: counted, its loss kept, the model that came back with it adopted (unless
   * the replica's check took it already, or the answer confirmed the replica).
   */
  stepDone(loss: number, response: GradientAnswer, modelTaken: boolean): void {
    this.#c.tasks.countStep(loss);
    this.#c.model.stepApplied(response, modelTaken);
  }
}
