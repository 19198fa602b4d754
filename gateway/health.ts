// /healthz: the process answers. /readyz: the database answers too.
import type { Queryable } from '../lib/pool.ts';
import { errors } from '../domain/errors.ts';
import { sendEnvelope, sendError } from './envelope.ts';
import type { Handler } from './types.ts';

const READY_TIMEOUT_MS = 1500;

export function health(db: Queryable): Record<string, Handler> {
  return {
    '/healthz': function healthz(_req, res, next) {
      sendEnvelope(res, 200, { status: 'ok' });
      next(false);
    },
    '/readyz': function readyz(_req, res, next) {
      const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), READY_TIMEOUT_MS).unref());
      Promise.race([db.query({ text: 'SELECT 1' }), timeout]).then(
        () => sendEnvelope(res, 200, { status: 'ready', database: 'ok' }),
        () => sendError(res, errors.unavailable()),
      ).finally(() => next(false));
    },
  };
}
