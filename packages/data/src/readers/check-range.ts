import { checkInteger, checkNonEmptyString, checkObject, invalidArgument } from '@edl/common';

/** Throws unless `range` is a record range object `{ shardName, start, end }` with `start <= end`. */
export function checkRange(range: unknown): { shardName: string; start: number; end: number } {
  const r = checkObject(range, 'range');
  const shardName = checkNonEmptyString(r.shardName, 'range.shardName');
  const start = checkInteger(r.start, 'range.start', 0);
  const end = checkInteger(r.end, 'range.end', 0);
  if (end < start) invalidArgument(`an integer >= range.start (${start})`, 'range.end', end);
  return { shardName, start, end };
}
