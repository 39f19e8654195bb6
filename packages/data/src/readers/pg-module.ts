import type pg from 'pg';
import { DataReaderError } from './errors.js';

/** The `pg` versions @edl/data and @edl/model-zoo are tested with: their optional peer dependency. */
export const PG_VERSION_RANGE = '^8.16.0';

let loading: Promise<typeof pg> | undefined;

/**
 * `pg` (node-postgres), imported on first use, once per process. It is an optional peer dependency
 * of @edl/data, so an install that reads no table carries none of its packages; every master and
 * worker loads @edl/data, and most read no table, so they do not pay pg's loading either.
 *
 * @param purpose - what needs PostgreSQL (e.g. `reading the catalog for census`), named in the error.
 * @throws DataReaderError `MISSING_DEPENDENCY` when pg is not installed, naming the package and the
 *   command that installs it; any other failure to load pg as it is.
 */
export function loadPg(purpose: string): Promise<typeof pg> {
  loading ??= import('pg').then((module) => module.default);
  return loading.catch((error: unknown) => {
    loading = undefined;
    if (!isMissingPg(error)) throw error;
    throw new DataReaderError(
      'MISSING_DEPENDENCY',
      `${purpose} needs the npm package pg, an optional dependency of @edl/data that is not installed. ` +
        `Install it next to @edl/cli: npm install pg@${PG_VERSION_RANGE}`,
      error,
    );
  });
}

function isMissingPg(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 'ERR_MODULE_NOT_FOUND' && typeof message === 'string' && message.includes("'pg'");
}
