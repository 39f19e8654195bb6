import { TaskType } from '../../packages/proto/dist/index.js';

/**
 * A master that hands out records `[0, total)` of `path` as training tasks of `taskRecords`,
 * `epochs` times over, then says the job is over.
 */
export function scriptedMaster(path, total, taskRecords, epochs = 1) {
  let epoch = 0;
  let next = 0;
  let id = 0;
  return {
    async getTask() {
      if (next >= total) {
        epoch += 1;
        next = 0;
      }
      if (epoch >= epochs || total === 0) return { jobFinished: true, jobError: '' };
      const start = next;
      next = Math.min(total, next + taskRecords);
      id += 1;
      const task = {
        id,
        type: TaskType.TRAINING,
        shardName: path,
        start,
        end: next,
        modelVersion: 0,
        epoch,
        leaseMs: 0,
        extendedConfig: {},
      };
      return { jobFinished: false, jobError: '', task };
    },
  };
}
