/** Options of an {@link EdlError}. */
export interface EdlErrorOptions {
  /** The underlying error, if any (becomes the standard `cause`). */
  readonly cause?: unknown;
}

/**
 * Base class of every error of the elasticdl-ts packages that is not a bad argument (bad arguments
 * throw TypeError / RangeError). `code` is a stable UPPER_SNAKE string: each package names its codes
 * in a string-literal union (e.g. `RecordIOErrorCode`), so programs branch on the code, never on the
 * message, and TypeScript checks the codes they compare against.
 *
 * ```ts
 * try { await reader.read(0, 10); }
 * catch (error) { if (error instanceof EdlError && error.code === 'CHECKSUM') skip(); else throw error; }
 * ```
 */
export class EdlError<Code extends string = string> extends Error {
  override readonly name: string = 'EdlError';
  /** Stable code to branch on. */
  readonly code: Code;

  constructor(code: Code, message: string, options?: EdlErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}

/** Whether `error` is an {@link EdlError} with `code` (any of `codes` when several are given). */
export function hasErrorCode<Code extends string>(
  error: unknown,
  ...codes: readonly Code[]
): error is EdlError<Code> {
  return error instanceof EdlError && (codes as readonly string[]).includes(error.code);
}
