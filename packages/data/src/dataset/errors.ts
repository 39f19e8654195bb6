import { EdlError } from '@edl/common';

/**
 * Errors of the dataset layer that are not bad arguments. Bad arguments throw `TypeError` /
 * `RangeError`; everything else is a `DatasetError` whose `code` is stable, so callers can branch on
 * it without parsing messages.
 */
export type DatasetErrorCode =
  /** `setState()` was called while a `next()` of the same iterator was still pending. */
  | 'ERR_ITERATOR_BUSY'
  /** A state object does not have the shape this iterator writes. */
  | 'ERR_BAD_STATE'
  /** A source or description cannot be re-created or read. */
  | 'ERR_SOURCE'
  /** A `mapParallel` function threw, or its thread failed (the message names the element). */
  | 'ERR_MAP_WORKER'
  /** An element does not fit its transform (a row over a padded length, unequal feature lengths). */
  | 'ERR_BAD_ELEMENT'
  /** `cache()` would hold more than its `maxBytes`. */
  | 'ERR_CACHE_FULL'
  /** A transform would break the counting of records to the tasks of an attributed source (a worker's). */
  | 'ERR_ATTRIBUTION';

/** Base error of `@edl/data` datasets, with a stable `code`. */
export class DatasetError extends EdlError<DatasetErrorCode> {
  override readonly name: string = 'DatasetError';
}
