import type { DataReader } from './protocols.js';

/**
 * Ranges a consumer holds announced beyond the one it reads, at most, when its reader has a
 * read-ahead budget: enough to hide a round trip per small remote file (64 files of 1 MiB), few
 * enough that one worker does not hoard the tail of an epoch that others could train.
 */
export const DEFAULT_MAX_RANGES_AHEAD = 16;

/**
 * The read-ahead policy of a consumer that announces the ranges it will read, in order, to
 * `reader.prefetch` (the worker's TaskFeed, one range per task): whether to announce one more
 * while it holds `held` ranges announced and not started.
 *
 * - A reader with a read-ahead budget (`readAheadBudget`, remote data): while the announced,
 *   unread bytes are below the budget and fewer than `maxAhead` ranges are held.
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
  return held < Math.max(1, maxAhead) && budget.announcedBytes < budget.budgetBytes;
}
