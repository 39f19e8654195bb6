import type { DatasetIterator } from '../../protocols.js';
import { FlatMapIterator } from './flat-map.js';

/**
 * `IterDataset.unbatch`: the items of each (iterable) parent element, one by one (tf.data's
 * `unbatch`). A `flatMap` with the identity, so its state is `{ parent, offset }` and a restore
 * re-reads the one batch being split.
 */
export function unbatchIterator<U>(parent: DatasetIterator<Iterable<U>>): FlatMapIterator<Iterable<U>, U> {
  return new FlatMapIterator(parent, (batch) => batch, 'Unbatch');
}
