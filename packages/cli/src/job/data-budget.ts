import { autotuneSnapshot, hostMemoryBytes, parseByteSize } from '@edl/data/autotune';
import type { DataPipelineReport } from '@edl/proto';
import { UsageError } from '../command.js';

/**
 * `--data-ram-budget SIZE`: a byte size (`4GiB`, `512MiB`) or a share of this host's memory or
 * cgroup limit (`25%`). A bad value is a usage error naming the flag.
 */
export function dataRamBudgetValue(text: string): number {
  try {
    return parseByteSize(text, '--data-ram-budget', hostMemoryBytes());
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/**
 * What a worker reports of its data pipeline's tuner (with heartbeats, and in its stats file for
 * `--stats`): the tuner's budgets and live `'auto'` stages, or, when none is live, the last ones
 * that ended; undefined while no stage has been `'auto'`.
 */
export function dataPipelineReporter(): () => DataPipelineReport | undefined {
  return () => {
    const { rounds: _rounds, endedStages, stages, ...budgets } = autotuneSnapshot();
    // Between two tasks' iterators no stage is live: report how the last ones ran.
    const shown = stages.length > 0 ? stages : endedStages.slice(-ENDED_SHOWN);
    return shown.length === 0 ? undefined : { ...budgets, stages: shown };
  };
}

/** Ended stages a report shows at most: a pipeline's worth. */
const ENDED_SHOWN = 4;
