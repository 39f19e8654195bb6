import { GradientStatus } from '@edl/proto';
import type { Minibatch } from '../model-definition.js';
import type { RecordSlice } from '../task-feed.js';
import { withStepRows } from './embedding-rows.js';
import { isApplied, toRangeRef } from './reports.js';
import type { StepContext } from './step-context.js';

/**
 * One evaluation step on `batch`, whose records are `slices` (one per task, in order): the metrics'
 * partial results on the task's model version, reported to the master, which sums them per round.
 * Returns false when the master no longer holds one of several ranges: the caller then steps task
 * by task.
 */
export async function evaluateStep(
  context: StepContext,
  batch: Minibatch,
  slices: readonly RecordSlice[],
): Promise<boolean> {
  const { master, workerId, runner, timers, tasks } = context;
  const [first, ...rest] = slices as [RecordSlice, ...RecordSlice[]];
  const taskId = first.task.id;
  // Rows are looked up, not created: an id training never saw reads as the initializer's value.
  const metrics = await withStepRows(context, batch.features, false, (embeddings) =>
    timers.time('compute_loss', () => runner.computeMetrics(batch, embeddings), taskId),
  );
  const response = await timers.time(
    'report_gradient',
    () =>
      master.reportEvaluationMetrics({
        workerId,
        taskId,
        rangeStart: first.rangeStart,
        rangeEnd: first.rangeEnd,
        modelVersion: first.task.modelVersion,
        metrics,
        ...(rest.length > 0 ? { moreRanges: rest.map(toRangeRef) } : {}),
      }),
    taskId,
  );
  if (isApplied(response)) return true;
  if (response.status === GradientStatus.TASK_NOT_HELD && slices.length > 1) return false;
  tasks.rejected(first, response.status, 'evaluation metrics');
  return true;
}
