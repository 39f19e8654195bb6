import type { DataReader } from './protocols.js';

/**
 * Ranges a consumer holds announced beyond the one it reads, at most, when its reader has a
 * read-ahead budget. Remote readers ask for fewer (`ReadAheadBudget.wantedRanges`): as many as hide
 * their fetch time at the pace ranges are read, so a training job holds a task or two and one
 * worker does not hoard the tail of an epoch that others could train, while a fast consumer of
 * small objects behind a slow link (64 files of 1 MiB at 50 ms) holds enough to keep its GETs
 * overlapped. This cap bounds the leases either way.
 */
export const DEFAULT_MAX_RANGES_AHEAD = 64;

/** Ranges held ahead for a reader with a budget that does not say how many it wants. */
export const RANGES_AHEAD_UNMEASURED = 16;

/**
 * The read-ahead policy of a consumer that announces the ranges it will read, in order, to
 * `reader.prefetch` (the worker's TaskFeed, one range per task): whether to announce one more
 * while it holds `held` ranges announced and not started.
 *
 * - A reader with a read-ahead budget (`readAheadBudget`, remote data): while the announced,
 *   unread bytes are below the budget and fewer ranges are held than the reader wants
 *   (`wantedRanges`, else {@link RANGES_AHEAD_UNMEASURED}) and than `maxAhead`.
 * - A reader that reads ahead without a budget (the native RecordIO prefetcher of local files):
 *   one range ahead, as before read-ahead budgets existed.
 * - A reader without `prefetch`: none.
 *
 * @param maxAhead - the cap on ranges held ahead (default {@link DEFAULT_MAX_RANGES_AHEAD}, at least 1).
 */
export function wantsAnotherRangeAhead(
  reader: Pick<DataReader<unknown>, 'prefetch' | 'readAheadBudget'>,
  held: number,
  maxAhead: number = DEFAULT_MAX_RANGES_AHEAD,
): boolean {
  if (typeof reader.prefetch !== 'function') return false;
  const budget = reader.readAheadBudget?.();
  if (budget === undefined) return held < 1;
  const cap = Math.max(1, Math.min(maxAhead, budget.wantedRanges ?? RANGES_AHEAD_UNMEASURED));
  return held < cap && budget.announcedBytes < budget.budgetBytes;
}
