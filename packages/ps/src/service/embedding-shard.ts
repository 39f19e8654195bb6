import {
  checkInteger,
  checkNonEmptyString,
  checkObject,
  checkOptions,
  checkSafeInteger,
  type OptimizerConfig,
  resolveOptimizerConfig,
} from '@edl/common';
import { ParameterStoreError } from '../errors.js';
import { EmbeddingTable } from '../sparse/embedding-table.js';
import { shardOfId } from '../sparse/placement.js';
import { RowInitializer, type RowInitializerConfig } from '../sparse/row-initializer.js';
import { DenseShard } from './dense-shard.js';

/** One embedding table a parameter-server shard serves (its rows of this shard only). */
export interface EmbeddingTableSpec {
  /** The table's name: what pulls and pushes name, and a salt of its initializer. */
  readonly name: string;
  /** Floats per row. */
  readonly dim: number;
  /** The optimizer whose sparse kernel applies the pushed gradients. */
  readonly optimizer: OptimizerConfig;
  /** Default `{ type: 'uniform', scale: 0.05 }`. */
  readonly initializer?: RowInitializerConfig;
  /** The job's seed: with the table's name and a row's id it fixes the row's initial value. */
  readonly seed: number;
}

/**
 * A table as a worker declares it (DeclareEmbeddingTables): what its model's layers say. The
 * optimizer and the seed are the job's, given to the shard when it starts.
 */
export interface EmbeddingTableDeclaration {
  readonly name: string;
  readonly dim: number;
  /** Default `{ type: 'uniform', scale: 0.05 }`. */
  readonly initializer?: RowInitializerConfig;
}

/** The job-wide settings of the tables workers declare: `edl ps --optimizer JSON --seed N`. */
export interface JobTableSettings {
  /** The job's optimizer config, the one the master applies to dense variables. */
  readonly optimizer: OptimizerConfig;
  /** The job's seed. */
  readonly seed: number;
}

/** A table's size and accounting on one shard. */
export interface ShardTableInfo {
  readonly name: string;
  readonly dim: number;
  readonly rows: number;
  readonly bytes: number;
  readonly optimizer: OptimizerConfig['type'];
  /** Pushes applied to the table on this shard. */
  readonly pushes: number;
  /** The highest model version a push named (0 before any push). */
  readonly maxModelVersion: number;
}

/**
 * Checks table specs as given on a command line or in a config (`--tables` of `edl ps`): an array
 * of objects with `name`, `dim`, `optimizer`, `seed` and an optional `initializer`, names unique.
 * The optimizer and initializer are checked when the table is made.
 */
export function checkTableSpecs(value: unknown, name = 'tables'): EmbeddingTableSpec[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new TypeError(`Expected a non-empty array of embedding table specs for ${name}`);
  }
  const seen = new Set<string>();
  return value.map((entry, i) => {
    const where = `${name}[${i}]`;
    const spec = checkOptions(checkObject(entry, where), where, [
      'name',
      'dim',
      'optimizer',
      'initializer',
      'seed',
    ]);
    const tableName = checkNonEmptyString(spec.name, `${where}.name`);
    if (seen.has(tableName)) throw new RangeError(`Embedding table '${tableName}' is named twice in ${name}`);
    seen.add(tableName);
    return {
      name: tableName,
      dim: checkInteger(spec.dim, `${where}.dim`, 1, 1 << 16),
      optimizer: checkObject(spec.optimizer, `${where}.optimizer`) as unknown as OptimizerConfig,
      ...(spec.initializer === undefined
        ? {}
        : {
            initializer: checkObject(
              spec.initializer,
              `${where}.initializer`,
            ) as unknown as RowInitializerConfig,
          }),
      seed: checkSafeInteger(spec.seed, `${where}.seed`),
    };
  });
}

/**
 * The last step of one worker whose rows push a shard applied (any part of): its model version, the
 * pushes the step sends to this shard, and those applied so far.
 */
export interface WorkerLastPush {
  readonly modelVersion: number;
  readonly due: number;
  readonly applied: number;
}

/** Workers whose last push a shard remembers: past this, the one heard from longest ago is forgotten. */
export const LAST_PUSHES_KEPT = 4096;

interface TableEntry {
  readonly table: EmbeddingTable;
  readonly optimizerType: OptimizerConfig['type'];
  pushes: number;
  maxModelVersion: number;
}

/**
 * The embedding tables of one parameter-server shard, `shardIndex` of `numShards`: each table holds
 * only the rows with `shardOfId(id, numShards) === shardIndex`, and every pull or push with any
 * other id is refused whole (WRONG_SHARD), before any row changes: a client that placed ids with
 * another hash or shard count would otherwise scatter copies of a row over several shards.
 */
export class EmbeddingShard {
  readonly shardIndex: number;
  readonly numShards: number;
  readonly #tables = new Map<string, TableEntry>();
  /** Per worker, in the order last heard from (oldest first): bounded by LAST_PUSHES_KEPT. */
  readonly #lastPushes = new Map<string, WorkerLastPush>();
  readonly #job: JobTableSettings | undefined;
  /**
   * The dense variables placed on this shard (a job with dense variables on the shards), updated
   * with the job's optimizer; undefined for a shard started without it.
   */
  readonly dense: DenseShard | undefined;

  /**
   * @param tables - tables to serve from the start (`--tables`); may be empty when workers
   *   declare them.
   * @param job - the optimizer and seed of the tables workers declare; without it a declaration
   *   is refused (NO_JOB_OPTIMIZER).
   */
  constructor(
    shardIndex: number,
    numShards: number,
    tables: readonly EmbeddingTableSpec[],
    job?: JobTableSettings,
  ) {
    this.numShards = checkInteger(numShards, 'numShards', 1);
    this.shardIndex = checkInteger(shardIndex, 'shardIndex', 0, this.numShards - 1);
    if (job !== undefined) {
      // Checked now, not at the first declaration: a bad --optimizer fails `edl ps` at start.
      resolveOptimizerConfig(checkObject(job.optimizer, 'job.optimizer') as unknown as OptimizerConfig);
      checkSafeInteger(job.seed, 'job.seed');
      this.#job = job;
    }
    this.dense = job === undefined ? undefined : new DenseShard(job.optimizer);
    for (const spec of tables.length === 0 ? [] : checkTableSpecs(tables)) this.#add(spec);
  }

  /**
   * Creates the declared tables this shard lacks, with the job's optimizer and seed, and returns
   * their names. Idempotent: a table declared before with the same dim and initializer is left
   * as it is (rows and optimizer state kept). Every declaration is checked before any table is
   * made: a table known with another dim or initializer is TABLE_CONFLICT, naming both.
   */
  declare(declarations: readonly EmbeddingTableDeclaration[]): string[] {
    const fresh = new Map<string, EmbeddingTableSpec>();
    declarations.forEach((d, i) => {
      const name = checkNonEmptyString(d?.name, `tables[${i}].name`);
      const dim = checkInteger(d.dim, `tables[${i}].dim`, 1, 1 << 16);
      // Resolved (defaults filled in), so that an absent initializer equals the default one.
      const initializer = new RowInitializer(0, name, d.initializer).config;
      const table = this.#tables.get(name)?.table;
      const known =
        table === undefined ? fresh.get(name) : { dim: table.dim, initializer: table.initializer.config };
      if (known !== undefined) {
        const conflict =
          known.dim !== dim
            ? `dim ${known.dim} and now with dim ${dim}`
            : JSON.stringify(known.initializer) !== JSON.stringify(initializer)
              ? `initializer ${JSON.stringify(known.initializer)} and now with ${JSON.stringify(initializer)}`
              : undefined;
        if (conflict !== undefined)
          throw new ParameterStoreError(
            'TABLE_CONFLICT',
            `Embedding table '${name}' was declared with ${conflict}: layers that share a table must agree`,
          );
        return;
      }
      const job = this.#job;
      if (job === undefined)
        throw new ParameterStoreError(
          'NO_JOB_OPTIMIZER',
          `Parameter-server shard ${this.shardIndex} cannot create embedding table '${name}': it was started without the job's optimizer and seed (edl ps --optimizer JSON --seed N)`,
        );
      fresh.set(name, { name, dim, initializer, optimizer: job.optimizer, seed: job.seed });
    });
    for (const spec of fresh.values()) this.#add(spec);
    return [...fresh.keys()];
  }

  #add(spec: EmbeddingTableSpec): void {
    const table = new EmbeddingTable({
      name: spec.name,
      dim: spec.dim,
      seed: spec.seed,
      optimizer: spec.optimizer,
      ...(spec.initializer === undefined ? {} : { initializer: spec.initializer }),
    });
    this.#tables.set(spec.name, {
      table,
      optimizerType: spec.optimizer.type,
      pushes: 0,
      maxModelVersion: 0,
    });
  }

  /** The table named `name`, for checks and checkpoints; UNKNOWN_TABLE when there is none. */
  table(name: string): EmbeddingTable {
    return this.#entry(name).table;
  }

  /**
   * The rows of `ids` (`[ids.length, dim]` row-major): created when `create` is true (training),
   * else read without creating (an unknown id reads as the initializer's value).
   */
  pull(tableName: string, ids: Float64Array, create: boolean): Float32Array {
    const { table } = this.#entry(tableName);
    this.#checkOwned(table.name, ids);
    return create ? table.pull(ids) : table.lookup(ids);
  }

  /**
   * Applies the table's sparse kernel to the rows of `ids` at the rate of `modelVersion` (the
   * version the push names); counts the push for DescribeShard. With `step` (who pushed, and how
   * many pushes their step sends to this shard), the push counts towards that worker's last step
   * ({@link lastPush}) once applied.
   */
  push(
    tableName: string,
    ids: Float64Array,
    gradients: Float32Array,
    modelVersion: number,
    step?: { readonly workerId: string; readonly pushes: number },
  ): { pushes: number; rows: number } {
    const entry = this.#entry(tableName);
    checkSafeInteger(modelVersion, 'modelVersion');
    if (step !== undefined) checkInteger(step.pushes, 'stepPushes', 1);
    this.#checkOwned(entry.table.name, ids);
    // An empty push (the step has none of the table's ids here) only tells that the step got here.
    if (ids.length > 0 || gradients.length > 0) {
      entry.table.push(ids, gradients, 1, modelVersion);
      entry.pushes++;
      entry.maxModelVersion = Math.max(entry.maxModelVersion, modelVersion);
    }
    if (step !== undefined) this.countStepPush(step.workerId, modelVersion, step.pushes);
    return { pushes: entry.pushes, rows: entry.table.rowCount };
  }

  /** The last step of `workerId` whose rows push this shard applied (any part of), if it remembers one. */
  lastPush(workerId: string): WorkerLastPush | undefined {
    return this.#lastPushes.get(workerId);
  }

  /**
   * A push of the same version continues the worker's step until all its pushes arrived; after
   * that, or at another version, it begins the next step (steps of a version repeat when the
   * master aggregates several gradients per version: the master cannot tell them apart by version).
   * A dense push counts as one of the step's pushes, as a table's does.
   */
  countStepPush(workerId: string, modelVersion: number, due: number): void {
    const last = this.#lastPushes.get(workerId);
    const continues = last !== undefined && last.modelVersion === modelVersion && last.applied < last.due;
    this.#lastPushes.delete(workerId);
    this.#lastPushes.set(workerId, {
      modelVersion,
      due,
      applied: continues ? (last as WorkerLastPush).applied + 1 : 1,
    });
    if (this.#lastPushes.size > LAST_PUSHES_KEPT) {
      const oldest = this.#lastPushes.keys().next().value as string;
      this.#lastPushes.delete(oldest);
    }
  }

  /** The tables, in the order they were made: what a shard checkpoint writes. */
  tables(): EmbeddingTable[] {
    return [...this.#tables.values()].map((e) => e.table);
  }

  /**
   * Replaces every table by those given (a checkpoint's rows, or empty tables for the job's
   * initial state), keeping their optimizers' types for DescribeShard; push accounting restarts.
   * A table restored must hold only this shard's ids, which is checked before anything changes.
   */
  replaceTables(tables: readonly EmbeddingTable[]): void {
    for (const table of tables) for (const view of table.slabViews()) this.#checkOwned(table.name, view.ids);
    this.#tables.clear();
    for (const table of tables)
      this.#tables.set(table.name, {
        table,
        optimizerType: table.optimizer.config.type,
        pushes: 0,
        maxModelVersion: 0,
      });
  }

  /** Each table's size and accounting, in the order the tables were given. */
  describe(): ShardTableInfo[] {
    return [...this.#tables.values()].map((e) => ({
      name: e.table.name,
      dim: e.table.dim,
      rows: e.table.rowCount,
      bytes: e.table.allocatedBytes,
      optimizer: e.optimizerType,
      pushes: e.pushes,
      maxModelVersion: e.maxModelVersion,
    }));
  }

  /** The dense variables' holder; NO_JOB_OPTIMIZER for a shard started without the job's optimizer. */
  denseShard(): DenseShard {
    if (this.dense === undefined)
      throw new ParameterStoreError(
        'NO_JOB_OPTIMIZER',
        `Parameter-server shard ${this.shardIndex} cannot hold dense variables: it was started without the job's optimizer and seed (edl ps --optimizer JSON --seed N)`,
      );
    return this.dense;
  }

  #entry(name: string): TableEntry {
    const entry = this.#tables.get(name);
    if (entry === undefined) {
      throw new ParameterStoreError(
        'UNKNOWN_TABLE',
        `Parameter-server shard ${this.shardIndex} has no embedding table '${name}' (it has ${this.#tables.size === 0 ? 'none: workers declare their tables before their first step' : [...this.#tables.keys()].map((n) => `'${n}'`).join(', ')})`,
      );
    }
    return entry;
  }

  #checkOwned(tableName: string, ids: Float64Array): void {
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as number;
      const shard = shardOfId(id, this.numShards); // also refuses a non-integer or negative id
      if (shard !== this.shardIndex) {
        throw new ParameterStoreError(
          'WRONG_SHARD',
          `Id ${id} (index ${i}) of embedding table '${tableName}' belongs to parameter-server shard ${shard} of ${this.numShards}, not to this shard ${this.shardIndex}: place ids with shardOfId(id, ${this.numShards})`,
        );
      }
    }
  }
}
