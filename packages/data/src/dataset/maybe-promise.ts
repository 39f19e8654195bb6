/** A value or a promise of it: sources may be synchronous, and sync pipelines should stay sync. */
export type MaybePromise<T> = T | Promise<T>;

/** True when `value` is a thenable. */
export function isPromiseLike<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** Applies `fn` to a value or a promise of it, without a microtask when the value is synchronous. */
export function thenMaybe<T, U>(value: MaybePromise<T>, fn: (value: T) => MaybePromise<U>): MaybePromise<U> {
  return isPromiseLike(value) ? value.then(fn) : fn(value);
}

/** `Promise.all` that stays synchronous when every value is. */
export function allMaybe<T>(values: MaybePromise<T>[]): MaybePromise<T[]> {
  for (const value of values) if (isPromiseLike(value)) return Promise.all(values);
  return values as T[];
}
