import type { DatasetIterator } from '../protocols.js';
import { DatasetError } from './errors.js';
import { hashIntegers } from './hash.js';

/**
 * Attribution of elements to the units they were read from: the tasks of an ElasticDL worker, whose
 * records are counted to their tasks in the order a `datasetFn` consumes them. Grain and tf.data have
 * no such units, so a transform over an attributed source is checked when its iterator is made: one
 * that would silently change which unit the n-th record belongs to (drop, duplicate, split, merge
 * out of order, or reorder across units) throws `DatasetError` `ERR_ATTRIBUTION` naming it.
 */
export interface Attribution {
  /** The attributed source, for errors, e.g. "TaskFeed(training)". */
  readonly source: string;
  /** The unit (task) of the element the source returned last; -1 before the first. */
  lastUnit(): number;
  /**
   * True while every transform since the source returns one element per source element, in
   * order, without reading ahead: `lastUnit()` is then the unit of the element just received.
   */
  readonly inStep: boolean;
  /** What an element holds: one record, or a group of consecutive records (after a batch). */
  readonly elements: 'records' | 'groups';
  /**
   * True when records must keep their order even within a unit (a worker's prediction outputs
   * are matched to records by position): no shuffle at all.
   */
  readonly ordered: boolean;
  /**
   * Present where a unit can come back re-issued from a position inside it (a worker's tasks after a
   * SIGKILL): a window shuffle over the source keeps its windows where they were, so that the
   * re-issued rest holds exactly the outputs not yet consumed (see {@link UnitWindows}).
   */
  readonly windows?: UnitWindows;
}

/** Where a record of a re-issuable unit sits: what keys its window and where the window starts. */
export interface UnitPlace {
  /** The unit (task); -1 before the first record. */
  readonly unit: number;
  /** The same for every issue of the unit (its shard and epoch): keys its windows' permutations. */
  readonly key: number;
  /** The unit's first record as created: its windows start every `bufferSize` records from here. */
  readonly origin: number;
  /**
   * True for records read only to rebuild the window a re-issued unit resumes in (Grain's replay):
   * the outputs of the window up to where the unit resumes are dropped.
   */
  readonly replay: boolean;
}

/**
 * A source whose units can be re-issued from a position counted in a window shuffle's output order:
 * the shuffle aligns the source's reads to its windows, and the source says where each record sits.
 */
export interface UnitWindows {
  /**
   * Called by a window shuffle of `bufferSize` before it reads: a unit re-issued from position `k`
   * is then read from the start of `k`'s window, the records before `k` marked `replay`.
   */
  align(bufferSize: number): void;
  /** The place of the record returned last. */
  lastPlace(): UnitPlace;
  /** The absolute position (record index in its shard) of the record returned last. */
  lastPosition(): number;
}

/** A `UnitPlace.key` for the records of shard `shardName` in epoch `epoch`. */
export function unitKeyOf(shardName: string, epoch: number): number {
  const words = [epoch];
  for (let i = 0; i < shardName.length; i++) words.push(shardName.charCodeAt(i));
  return hashIntegers(words)[0];
}

/**
 * What a transform does to attribution:
 * - `keeps`: one element per parent element, in order, nothing read ahead (map, cache);
 * - `reads-ahead`: the same order and count, read ahead (prefetch, mapParallel);
 * - `groups`: consecutive elements into one, order kept (batch, paddedBatch);
 * - `regroups`: groups split or regrouped in order (unbatch, rebatch): only over groups;
 * - `reorders-in-unit`: a window shuffle, whose windows then end at unit boundaries: only right over
 *   the records (every transform before it `keeps`);
 * - anything else (a string saying what it would do) is refused.
 */
export type AttributionEffect =
  | 'keeps'
  | 'reads-ahead'
  | 'groups'
  | 'regroups'
  | 'reorders-in-unit'
  | { readonly refused: string };

/**
 * In the global symbol registry, so that a second copy of @edl/data in the process (a model file
 * that imports the packages by a path of its own) still sees, and keeps checking, the attribution
 * that the worker's copy put on its records.
 */
const ATTRIBUTION: unique symbol = Symbol.for('edl.attribution/1');

interface Attributed {
  [ATTRIBUTION]?: Attribution;
}

/** The attribution of `iterator`'s elements; undefined for an iterator of an unattributed source. */
export function attributionOf(iterator: DatasetIterator<unknown>): Attribution | undefined {
  return (iterator as Attributed)[ATTRIBUTION];
}

/** Marks `iterator` as yielding elements attributed as `attribution` says; returns it. */
export function attribute<I extends DatasetIterator<unknown>>(iterator: I, attribution: Attribution): I {
  Object.defineProperty(iterator, ATTRIBUTION, { value: attribution, enumerable: false });
  return iterator;
}

/**
 * The attribution of `step`'s output over a parent attributed as `parent` (undefined: not
 * attributed); throws `ERR_ATTRIBUTION` naming `step` where it would break the counting.
 */
export function attributionAfter(
  parent: Attribution | undefined,
  step: string,
  effect: AttributionEffect,
): Attribution | undefined {
  if (parent === undefined) return undefined;
  const refuse = (why: string): never => {
    throw new DatasetError(
      'ERR_ATTRIBUTION',
      `${step} over ${parent.source} ${why}: the records of ${parent.source} are counted to their tasks in the order they are consumed (see "Records stay attributed to their tasks" in docs/worker.md)`,
    );
  };
  switch (effect) {
    case 'keeps':
      return parent;
    case 'reads-ahead':
      return { ...parent, inStep: false };
    case 'groups':
      return { ...parent, inStep: false, elements: 'groups' };
    case 'regroups':
      if (parent.elements !== 'groups') refuse('would split records, not batches of them');
      return { ...parent, inStep: false };
    case 'reorders-in-unit':
      if (parent.ordered) refuse('would reorder records whose outputs are matched to them by position');
      if (parent.elements !== 'records' || !parent.inStep) {
        refuse(
          'must come right after the records (or a map of them): after a batch, prefetch or mapParallel it cannot tell where a task ends',
        );
      }
      return { ...parent, inStep: false };
    default:
      return refuse(effect.refused);
  }
}

/** Throws `ERR_ATTRIBUTION` naming `step` when one of `parents` is attributed (zip, mix, interleave). */
export function refuseAttributed(
  parents: readonly DatasetIterator<unknown>[],
  step: string,
  why: string,
): void {
  for (const parent of parents) attributionAfter(attributionOf(parent), step, { refused: why });
}
