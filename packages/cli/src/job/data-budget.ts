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
 * `--stats`): the tuner's budgets and live `'auto'` stages, or, once they ended, the last ones seen;
 * undefined while no stage has been `'auto'`.
 */
export function dataPipelineReporter(): () => DataPipelineReport | undefined {
  let last: DataPipelineReport | undefined;
  return () => {
    const { rounds: _rounds, ...snapshot } = autotuneSnapshot();
    if (snapshot.stages.length > 0) last = snapshot;
    return last === undefined ? undefined : { ...snapshot, stages: last.stages };
  };
}
