import { ParameterStore } from '@edl/ps';
import type { Checkpoint } from '../src/checkpoint.js';
import { TaskManager } from '../src/task-manager.js';

/** A checkpoint after `version` momentum steps of a 2x2 variable, with one task handed out. */
export function checkpointAt(version: number): Checkpoint {
  const store = new ParameterStore({ optimizer: { type: 'momentum', learningRate: 0.1 } });
  store.initialize([{ name: 'dense/kernel', shape: [2, 2], values: new Float32Array([1, 2, 3, 4]) }]);
  for (let i = 0; i < version; i++) {
    store.applyGradient([{ name: 'dense/kernel', shape: [2, 2], values: new Float32Array([1, 0, -1, 0.5]) }]);
  }
  const tm = new TaskManager({ jobType: 'training', trainingShards: [{ name: 's', start: 0, count: 100 }] });
  tm.getTask('w');
  return { store: store.snapshot(), optimizer: store.optimizer.config, taskManager: tm.toJSON() };
}
