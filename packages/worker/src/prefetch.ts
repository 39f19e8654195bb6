import { describeValue } from '@edl/common';

/**
 * Pulls up to `depth` elements of `source` ahead of the consumer, so that producing the next
 * minibatch (reading, parsing, `datasetFn`) overlaps whatever the consumer awaits (gradient pushes,
 * model pulls, GPU reads). Errors reach the consumer in order, after the elements before them.
 * Stopping early (`return()`) stops the source.
 */
export async function* prefetch<T>(source: AsyncIterable<T>, depth: number): AsyncGenerator<T> {
  if (!Number.isSafeInteger(depth) || depth < 0) {
    throw new RangeError(`Expected a non-negative integer for depth but received ${describeValue(depth)}`);
  }
  const iterator = source[Symbol.asyncIterator]();
  if (depth === 0) {
    try {
      for (;;) {
        const result = await iterator.next();
        if (result.done) return;
        yield result.value;
      }
    } finally {
      await iterator.return?.();
    }
  }
  const queue: Array<Promise<IteratorResult<T>>> = [];
  let ended = false;
  // next() calls are chained so the source sees them one at a time, in order.
  let tail: Promise<unknown> = Promise.resolve();
  const fill = () => {
    while (!ended && queue.length < depth) {
      const result = tail.then(() => iterator.next());
      tail = result.catch(() => undefined);
      result.then(
        (r) => {
          if (r.done) ended = true;
        },
        () => {
          ended = true;
        },
      );
      // Rejections are handled when the consumer reaches them; keep Node from reporting them early.
      result.catch(() => undefined);
      queue.push(result);
    }
  };
  try {
    for (;;) {
      fill();
      const next = queue.shift();
      if (next === undefined) return;
      const result = await next;
      if (result.done) return;
      fill();
      yield result.value;
    }
  } finally {
    ended = true;
    await tail;
    await iterator.return?.();
  }
}
