/** Classifies node-postgres failures and spaces out retries. */

/** SQLSTATEs after which the same query on a new connection may succeed. */
const RETRYABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown: pg_terminate_backend, server stop
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: the server is starting
  '53300', // too_many_connections
]);

/** Socket errors of a dropped or refused connection. */
const RETRYABLE_SOCKET_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
]);

/**
 * Whether `error` means the connection was lost (or could not be made) rather than that the query is
 * wrong: SQLSTATE class 08 and the codes above, socket errors, and node-postgres's own messages for
 * a connection that ended under it.
 */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code))
    return code.startsWith('08') || RETRYABLE_SQLSTATES.has(code);
  if (typeof code === 'string' && RETRYABLE_SOCKET_CODES.has(code)) return true;
  return /connection terminated|not queryable|connection error|client was closed|timeout exceeded when trying to connect/i.test(
    error.message,
  );
}

/** Delay before retry `attempt` (0-based): `baseMs * 2^attempt`, at most 5 s. */
export function backoffMs(attempt: number, baseMs: number): number {
  return Math.min(5000, baseMs * 2 ** attempt);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolveSleep) => setTimeout(resolveSleep, ms));
}

/** `error`'s SQLSTATE or socket code, for messages. */
export function errorCodeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'no code';
}
