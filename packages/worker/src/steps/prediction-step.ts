import type { Minibatch, PredictionOutputsProcessor } from '../model-definition.js';
import type { RecordSlice } from '../task-feed.js';
import { withStepRows } from './embedding-rows.js';
import type { StepContext } from './step-context.js';

/**
 * One prediction step on `batch`, the records of `slice`: the model's outputs handed to the
 * processor (the model's own, or the JSON-lines writer), if any, then released.
 */
export async function predictStep(
  context: StepContext,
  processor: PredictionOutputsProcessor | undefined,
  batch: Minibatch,
  slice: RecordSlice,
): Promise<void> {
  const outputs = await withStepRows(context, batch.features, false, (embeddings) =>
    context.timers.time(
      'compute_loss',
      () => context.runner.predict(batch.features, embeddings),
      slice.task.id,
    ),
  );
  try {
    await processor?.process(outputs, {
      workerId: context.workerId,
      taskId: slice.task.id,
      shardName: slice.task.shardName,
      start: slice.rangeStart,
    });
  } finally {
    outputs.dispose();
  }
}
