// Autotuning of `'auto'` buffer sizes and thread counts (tf.data's AUTOTUNE): the M/M/1/K model,
// the hill climb, the process's budgets and the tuner the stages register with.
export { type ClimbBudget, type ClimbStage, hillClimb } from './hill-climb.js';
export { bufferWaitMs, type StageRates, type StageSettings } from './model.js';
export {
  type BudgetShare,
  cgroupMemoryLimit,
  DEFAULT_RAM_SHARE,
  defaultCpuBudget,
  defaultDataRamBudget,
  hostMemoryBytes,
  parseByteSize,
} from './ram-budget.js';
export {
  type AutotuneOptions,
  type AutotuneSnapshot,
  autotuneBudgets,
  autotuneSnapshot,
  configureAutotune,
  reserveDataBudget,
  type TunedStage,
  type TunedStageSnapshot,
  tuneNow,
} from './tuner.js';
