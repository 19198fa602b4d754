// GET /.well-known/audit-keys.json: every key that has signed a checkpoint, as is (not in the
// envelope), so an auditor's tool reads it without a key of the service.
import { signingKeys } from '../domain/checkpoints.ts';
import { errors, isDatabaseUnavailable } from '../domain/errors.ts';
import type { Database } from '../lib/pool.ts';
import type { Logger } from '../lib/log.ts';
import { errorFields } from '../lib/log.ts';
import { sendError } from './envelope.ts';
import type { Handler } from './types.ts';
import { sendRaw } from './large-answers.ts';

export const AUDIT_KEYS_PATH = '/.well-known/audit-keys.json';

export function serveAuditKeys(db: Database, log: Logger): Handler {
  return function auditKeys(req, res, next) {
    signingKeys(db).then((keys) => {
      const text = JSON.stringify(keys);
      sendRaw(res, 200, text, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(Buffer.byteLength(text)) });
    }, (err: unknown) => {
      if (!isDatabaseUnavailable(err)) log.error({ requestId: req.id(), err: errorFields(err) }, 'audit keys failed');
      sendError(res, isDatabaseUnavailable(err) ? errors.unavailable() : errors.internal());
    }).finally(() => next(false));
  };
}
