// /healthz: the process answers. /readyz: the database answers too; why it does not is logged,
// once per cause and again every READY_LOG_EVERY_MS while it lasts, not once per probe.
import type { Queryable } from '../lib/pool.ts';
import type { Logger } from '../lib/log.ts';
import { oneLine } from '../lib/startup-error.ts';
import { errors } from '../domain/errors.ts';
import { sendEnvelope, sendError } from './envelope.ts';
import type { Handler } from './types.ts';

const READY_TIMEOUT_MS = 1500;
/** While one cause lasts, its line again after this long, with the probes it answered 503 meanwhile. */
export const READY_LOG_EVERY_MS = 60_000;

class TimedOut extends Error {}

/** What /readyz last logged: a probe logs only when the cause changes or the last line is old. */
export function readinessLog() {
  let cause: string | undefined;
  let since = 0;
  let loggedAt = 0;
  let answered = 0;
  return {
    notReady(log: Logger, err: unknown) {
      const now = Date.now();
      const code = (err as { code?: unknown }).code;
      const reason = err instanceof TimedOut ? `the database did not answer within ${READY_TIMEOUT_MS} ms` : oneLine(err);
      const next = `${code ?? ''} ${reason}`;
      answered += 1;
      if (next === cause && now - loggedAt < READY_LOG_EVERY_MS) return;
      if (next !== cause) since = now;
      log.warn({ reason, ...(code === undefined ? {} : { code }), probes: answered, forMs: now - since }, '/readyz answers 503');
      cause = next;
      loggedAt = now;
      answered = 0;
    },
    ready(log: Logger) {
      if (cause === undefined) return;
      log.info({ notReadyMs: Date.now() - since }, '/readyz answers 200 again');
      cause = undefined;
      answered = 0;
    },
  };
}

export function health(db: Queryable): Record<string, Handler> {
  const readiness = readinessLog();
  return {
    '/healthz': function healthz(_req, res, next) {
      sendEnvelope(res, 200, { status: 'ok' });
      next(false);
    },
    '/readyz': function readyz(req, res, next) {
      // The gateway's own logger, which restify hands every request.
      const log = req.log as unknown as Logger;
      const timeout = new Promise((_, reject) => setTimeout(() => reject(new TimedOut()), READY_TIMEOUT_MS).unref());
      Promise.race([db.query({ text: 'SELECT 1' }), timeout]).then(
        () => {
          readiness.ready(log);
          sendEnvelope(res, 200, { status: 'ready', database: 'ok' });
        },
        (err: unknown) => {
          readiness.notReady(log, err);
          sendError(res, errors.unavailable());
        },
      ).finally(() => next(false));
    },
  };
}
