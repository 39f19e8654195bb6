import { type StageRates, type StageSettings, stageWaitMs } from './model.js';

/** A stage as the climb sees it. */
export interface ClimbStage {
  readonly rates: StageRates;
  readonly settings: StageSettings;
  /** Which of the settings are `'auto'`; fixed ones never change. */
  readonly tuneParallelism: boolean;
  readonly tuneBuffer: boolean;
  /** Bytes the stage holds whatever its settings (a thread's own heap, a reader's ring). */
  readonly fixedBytes: number;
  /** Bytes each thread of the stage costs (a worker thread's heap). */
  readonly threadBytes: number;
  /**
   * Threads the climb may give the stage at most (default unbounded): the tuner lets a stage gain
   * one thread per measured change, and none past a change it stepped back.
   */
  readonly maxParallelism?: number;
}

/** The budgets of one process. */
export interface ClimbBudget {
  readonly ramBytes: number;
  /** Threads the tuned stages may run together. */
  readonly cpuThreads: number;
}

/** A step is taken only when it cuts the modelled wait by at least this share of the producer's time. */
const MIN_GAIN = 0.01;
/** Steps per climb at most (a climb runs on the consumer's thread, so it must stay short). */
const MAX_STEPS = 256;

/** Bytes `stage` holds under `settings`. */
export function stageBytes(stage: ClimbStage, settings: StageSettings): number {
  return (
    stage.fixedBytes +
    settings.bufferSize * stage.rates.elementBytes +
    settings.parallelism * stage.threadBytes
  );
}

/**
 * tf.data's hill climbing over measured rates: from the current settings, repeatedly take the one
 * step (+1 thread, or +1 buffer slot) that cuts the modelled total wait the most, while the step
 * stays within both budgets and gains at least 1% of that stage's producer time. When the stages
 * already hold more than the RAM budget (elements grew), tuned buffers are cut back first, largest
 * first, down to 1. Returns the new settings, in the order of `stages`.
 */
export function hillClimb(stages: readonly ClimbStage[], budget: ClimbBudget): StageSettings[] {
  const settings = stages.map((s) => ({ ...s.settings }));
  let bytes = stages.reduce((sum, stage, i) => sum + stageBytes(stage, settings[i] as StageSettings), 0);
  let threads = stages.reduce(
    (sum, stage, i) => sum + (stage.tuneParallelism ? (settings[i]?.parallelism ?? 0) : 0),
    0,
  );
  // Over budget: shrink the tuned buffers that cost the most until under it.
  while (bytes > budget.ramBytes) {
    let victim = -1;
    let victimBytes = 0;
    stages.forEach((stage, i) => {
      const s = settings[i] as StageSettings;
      const slotBytes = stage.rates.elementBytes * s.bufferSize;
      if (stage.tuneBuffer && s.bufferSize > minBuffer(stage, s) && slotBytes > victimBytes) {
        victim = i;
        victimBytes = slotBytes;
      }
    });
    if (victim < 0) break;
    const stage = stages[victim] as ClimbStage;
    const s = settings[victim] as StageSettings;
    const cut = Math.max(minBuffer(stage, s), Math.floor(s.bufferSize / 2));
    bytes -= (s.bufferSize - cut) * stage.rates.elementBytes;
    settings[victim] = { ...s, bufferSize: cut };
  }
  for (let step = 0; step < MAX_STEPS; step++) {
    let best: { index: number; next: StageSettings; gain: number; bytes: number } | undefined;
    stages.forEach((stage, i) => {
      const current = settings[i] as StageSettings;
      const now = stageWaitMs(stage.rates, current);
      const floor = MIN_GAIN * Math.max(stage.rates.inputMs, stage.rates.workMs / current.parallelism, 1e-6);
      for (const next of candidates(stage, current)) {
        const addedThreads = next.parallelism - current.parallelism;
        if (addedThreads > 0 && threads + addedThreads > budget.cpuThreads) continue;
        const addedBytes = stageBytes(stage, next) - stageBytes(stage, current);
        if (bytes + addedBytes > budget.ramBytes) continue;
        const gain = now - stageWaitMs(stage.rates, next);
        if (gain < floor) continue;
        // The largest gain wins; at equal gain, the step that costs less memory.
        if (best === undefined || gain > best.gain || (gain === best.gain && addedBytes < best.bytes))
          best = { index: i, next, gain, bytes: addedBytes };
      }
    });
    if (best === undefined) break;
    const previous = settings[best.index] as StageSettings;
    threads += best.next.parallelism - previous.parallelism;
    bytes += best.bytes;
    settings[best.index] = best.next;
  }
  return settings;
}

/**
 * Elements a stage with threads keeps in flight at least: two per thread (mapParallel's default),
 * so that a thread has its next element while its last result travels back.
 */
export const SLOTS_PER_THREAD = 2;

function minBuffer(stage: ClimbStage, settings: StageSettings): number {
  return stage.tuneParallelism || stage.settings.parallelism > 1
    ? Math.max(1, SLOTS_PER_THREAD * settings.parallelism)
    : 1;
}

function candidates(stage: ClimbStage, current: StageSettings): StageSettings[] {
  const out: StageSettings[] = [];
  if (stage.tuneBuffer) out.push({ ...current, bufferSize: current.bufferSize + 1 });
  if (stage.tuneParallelism && current.parallelism < (stage.maxParallelism ?? Number.POSITIVE_INFINITY)) {
    const parallelism = current.parallelism + 1;
    // A new thread needs elements to work on: the buffer follows when it is tuned too.
    const bufferSize = stage.tuneBuffer
      ? Math.max(current.bufferSize, SLOTS_PER_THREAD * parallelism)
      : current.bufferSize;
    out.push({ parallelism, bufferSize });
  }
  return out;
}
