import { pino, type Logger } from 'pino';

// A guard in case a caller ever logs headers or key material. No wildcards: they slow every line.
const REDACT_PATHS = [
  'authorization', 'headers.authorization', 'req.headers.authorization',
  'key', 'secret', 'secret_hash', 'password',
];

/** JSON lines on stdout, on stderr (a command whose stdout is its answer), or appended to LOG_FILE. */
export function createLogger(level: string, name: string, destination: 1 | 2 | string = 1, options: { gathered?: boolean } = {}): Logger {
  const stream = options.gathered
    ? gatheringInBytes(pino.destination({ dest: destination, sync: false, minLength: GATHERED_BYTES, periodicFlush: GATHERED_MS, contentMode: 'buffer' }))
    : pino.destination({ dest: destination, sync: false });
  return pino({ name, level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, stream);
}

/**
 * sonic-boom gathering text re-measures the whole gathered string at every line; gathering bytes
 * it just adds each line's length. So each of pino's text lines becomes bytes on its way in.
 */
function gatheringInBytes(stream: ReturnType<typeof pino.destination>): ReturnType<typeof pino.destination> {
  const writeBytes = stream.write as (data: unknown) => boolean;
  stream.write = (line: string) => writeBytes.call(stream, Buffer.from(line));
  return stream;
}

/**
 * A serving process writes its lines in batches of this size or age, not a system call per
 * request. pino's exit hook writes what is gathered; a kill -9 loses at most GATHERED_MS of lines.
 */
const GATHERED_BYTES = 4096;
const GATHERED_MS = 100;

export type { Logger };

/** What of an error may be logged: never `detail` or `where`, which can quote a row's values (hashes too). */
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
 * Flushes the log, then calls `done` (an exit). Waits first for a LOG_FILE still being opened:
 * exiting before then makes pino's exit hook throw "sonic boom is not ready yet".
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
