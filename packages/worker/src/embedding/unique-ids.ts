/** A minibatch's ids without repeats, and where each input id lies among them. */
export interface UniqueIds {
  /** The distinct ids, in order of first appearance. */
  readonly ids: Float64Array;
  /** For each input id, the index of its id in `ids`: what `tf.gather` takes. */
  readonly indices: Int32Array;
}

/**
 * De-duplicates a minibatch's ids (the data of an ids tensor, or ids computed beside it): only the
 * distinct ids are pulled from the parameter servers, and the lookup gathers from them with
 * `indices`. Ids must be non-negative integers up to 2^53 - 1; `what` names the ids in errors.
 */
export function uniqueIds(idsTensorData: ArrayLike<number>, what = 'ids'): UniqueIds {
  const indexOf = new Map<number, number>();
  const indices = new Int32Array(idsTensorData.length);
  for (let i = 0; i < idsTensorData.length; i++) {
    const id = idsTensorData[i] as number;
    let index = indexOf.get(id);
    if (index === undefined) {
      if (!Number.isSafeInteger(id) || id < 0)
        throw new RangeError(
          `Expected a non-negative integer up to ${Number.MAX_SAFE_INTEGER} for ${what}[${i}] but received ${id}`,
        );
      index = indexOf.size;
      indexOf.set(id, index);
    }
    indices[i] = index;
  }
  return { ids: new Float64Array(indexOf.keys()), indices };
}
