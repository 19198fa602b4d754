import { pino, type Logger } from 'pino';

// Nothing logs headers or key material by design; these paths are the guard if a caller ever
// puts them in. No wildcards: they make every log line (one per request) markedly slower.
const REDACT_PATHS = [
  'authorization', 'headers.authorization', 'req.headers.authorization',
  'key', 'secret', 'secret_hash', 'password',
];

/**
 * JSON lines on stdout; on stderr (fd 2) for a command whose stdout is its answer; or appended to
 * a file (LOG_FILE), which is how tests read what the service logged.
 */
export function createLogger(level: string, name: string, destination: 1 | 2 | string = 1, options: { gathered?: boolean } = {}): Logger {
  const stream = options.gathered
    ? gatheringInBytes(pino.destination({ dest: destination, sync: false, minLength: GATHERED_BYTES, periodicFlush: GATHERED_MS, contentMode: 'buffer' }))
    : pino.destination({ dest: destination, sync: false });
  return pino({ name, level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, stream);
}

/**
 * sonic-boom gathering text measures the whole of what it has gathered at every line
 * (`Buffer.byteLength` of a growing string, which flattens and copies it each time), so a
 * request's line cost more than the rest of its logging; gathering bytes, it adds each line's
 * length. Pino writes text: each line becomes bytes on its way in.
 */
function gatheringInBytes(stream: ReturnType<typeof pino.destination>): ReturnType<typeof pino.destination> {
  const writeBytes = stream.write as (data: unknown) => boolean;
  stream.write = (line: string) => writeBytes.call(stream, Buffer.from(line));
  return stream;
}

/**
 * A serving process's lines are gathered into writes of this many bytes, or whatever is there
 * after this long: one write per request line was a system call dispatched from the gateway's
 * thread for each request. An exit, a crash included, writes what is gathered (pino's exit
 * hook); a kill -9 loses at most this long of lines.
 */
const GATHERED_BYTES = 4096;
const GATHERED_MS = 100;

export type { Logger };

/**
 * What of an error may be logged: name, message, code and stack. Not the whole object: a
 * PostgreSQL error's `detail` and `where` can quote the values of a row, a hash among them.
 */
export function errorFields(err: unknown): Record<string, unknown> {
  // pg-boss emits plain objects copied from errors ({ ...error, message, stack }), not Errors.
  if (typeof err !== 'object' || err === null) return { message: String(err) };
  const { name, message, code, stack } = err as { name?: unknown; message?: unknown; code?: unknown; stack?: unknown };
  return {
    ...(name === undefined ? {} : { name }),
    message: typeof message === 'string' ? message : String(err),
    ...(code === undefined ? {} : { code }),
    ...(stack === undefined ? {} : { stack }),
  };
}

/**
 * Flushes the log, then calls `done` (an exit). A LOG_FILE still being opened, as in a process
 * that fails in its first milliseconds, is waited for first: exiting before it is open made
 * pino's exit hook throw "sonic boom is not ready yet", a stack trace after the one-line reason.
 */
export function flushLog(log: Logger, done: () => void): void {
  const stream = (log as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as
    { fd?: unknown; once?: (event: string, listener: () => void) => unknown } | undefined;
  if (typeof stream?.fd === 'number' && stream.fd < 0 && typeof stream.once === 'function') {
    stream.once('ready', () => log.flush(() => done()));
    return;
  }
  log.flush(() => done());
}
