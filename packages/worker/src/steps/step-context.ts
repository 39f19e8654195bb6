import type { WorkerLogger } from '../logger.js';
import type { MasterConnection } from '../master-connection.js';
import type { ModelRunner } from '../model-runner.js';
import type { Timers } from '../timers.js';
import type { StepEmbeddings } from './embedding-rows.js';
import type { MirroredModel } from './mirrored-model.js';
import type { TaskAccounting } from './task-accounting.js';

/** What every step strategy of one worker shares. */
export interface StepContext {
  readonly master: MasterConnection;
  readonly workerId: string;
  readonly runner: ModelRunner;
  readonly timers: Timers;
  readonly logger: WorkerLogger;
  readonly model: MirroredModel;
  readonly tasks: TaskAccounting;
  /** The parameter-server shards, for a model with distributed embedding layers. */
  readonly embeddings?: StepEmbeddings;
}
