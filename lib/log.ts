import { pino, type Logger } from 'pino';

// Secrets must never reach a log line; these paths are redacted wherever a caller puts them.
const REDACT_PATHS = [
  'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization',
  'key', '*.key', 'secret', '*.secret', 'secret_hash', '*.secret_hash', 'password', '*.password',
];

export function createLogger(level: string, name: string): Logger {
  return pino({ name, level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } });
}

export type { Logger };

/**
 * What of an error may be logged: name, message, code and stack. Not the whole object: a
 * PostgreSQL error's `detail` and `where` can quote the values of a row, a hash among them.
 */
export function errorFields(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { message: String(err) };
  const code = (err as { code?: unknown }).code;
  return { name: err.name, message: err.message, ...(code === undefined ? {} : { code }), stack: err.stack };
}
