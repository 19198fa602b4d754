// The gateway's one error path. A step that refuses a request calls next(err) (steps.ts) and the
// answer is written here: an ApiError as the error table words it, a database out of reach 503,
// anything else 500, logged. A refusal the gateway makes itself for a caller it knows from memory
// waits for that key's check first (known-keys.ts), so a key revoked or disabled through any
// process is refused as such on its very next call; the failure of an endpoint's own work, which
// carried that check, is answered at once.
import type { Response } from 'restify';
import { ApiError, errors, isDatabaseUnavailable } from '../domain/errors.ts';
import { KeyRefusal } from '../domain/key-check.ts';
import { errorFields, type Logger } from '../lib/log.ts';
import { sendError } from './envelope.ts';
import type { KnownKeys } from './known-keys.ts';
import type { GatewayRequest } from './types.ts';

export interface Refusals {
  /** A step's refusal, answered after the caller's key check when the key is known but unchecked. */
  refuse(req: GatewayRequest, res: Response, err: unknown, done: () => void): void;
  /** A failure answered at once: the endpoint's work failed, or the process sheds load. */
  fail(req: GatewayRequest, res: Response, err: unknown): void;
}

/** Without `known` (the plain-HTTP listener, which authenticates nobody) every refusal is answered at once. */
export function createRefusals(log: Logger, known?: KnownKeys): Refusals {
  function fail(req: GatewayRequest, res: Response, err: unknown): void {
    // A refused key is forgotten: its next call is looked up.
    if (err instanceof KeyRefusal) known?.forget(req);
    if (err instanceof ApiError) {
      sendError(res, err);
    } else if (isDatabaseUnavailable(err)) {
      sendError(res, errors.unavailable());
    } else {
      log.error({ requestId: req.requestId, err: errorFields(err) }, 'gateway request failed');
      sendError(res, errors.internal());
    }
  }
  return {
    fail,
    refuse(req, res, err, done) {
      if (!known || !req.caller || req.callerChecked) {
        fail(req, res, err);
        done();
        return;
      }
      known.check(req).then(() => fail(req, res, err), (checkErr: unknown) => fail(req, res, checkErr)).finally(done);
    },
  };
}
