// The gateway's one error path. A step that refuses a request calls next(err) (steps.ts) and the
// answer is written here: an ApiError as the error table words it, a database out of reach 503,
// anything else 500, logged. A refusal the gateway makes itself for a caller it knows from memory
// waits for that key's check first (known-keys.ts), so a key revoked or disabled through any
// process is refused as such on its very next call; the failure of an endpoint's own work, which
// carried that check, needs no further check. A key's refusal, however it came, waits for the
// refusal floor.
import type { Response } from 'restify';
import { ApiError, errors, isDatabaseUnavailable } from '../domain/errors.ts';
import { KeyRefusal } from '../domain/key-check.ts';
import { errorFields, type Logger } from '../lib/log.ts';
import { sendError } from './envelope.ts';
import type { KnownKeys } from './known-keys.ts';
import type { GatewayRequest } from './types.ts';
import { waitUntil } from './wait-until.ts';

export interface Refusals {
  /** A step's refusal, answered after the caller's key check when the key is known but unchecked; then `done`. */
  refuse(req: GatewayRequest, res: Response, err: unknown, done: () => void): void;
  /**
   * A failure answered without a further check: the endpoint's work failed, or the process sheds
   * load. Resolves once it is answered: a key's refusal waits for the floor.
   */
  fail(req: GatewayRequest, res: Response, err: unknown): Promise<void>;
}

/**
 * Without `known` (the plain-HTTP listener, which authenticates nobody) every refusal is answered
 * at once. A key's refusal (KeyRefusal) is answered `keyRefusalFloorMs` after its request arrived,
 * no sooner and as close to it as the event loop allows (wait-until.ts): an unknown key is refused
 * after one lookup, a key this process knew after its check has ridden to a pool thread and back,
 * and the time would tell the two apart.
 */
export function createRefusals(log: Logger, known?: KnownKeys, keyRefusalFloorMs = 0): Refusals {
  async function fail(req: GatewayRequest, res: Response, err: unknown): Promise<void> {
    if (err instanceof KeyRefusal) {
      // A refused key is forgotten: its next call is looked up.
      known?.forget(req);
      if (keyRefusalFloorMs > 0) await waitUntil(req.arrivedMs + keyRefusalFloorMs);
    }
    answer(req, res, err);
  }
  function answer(req: GatewayRequest, res: Response, err: unknown): void {
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
      const unchecked = known !== undefined && req.caller !== undefined && !req.callerChecked;
      if (!unchecked && !(err instanceof KeyRefusal)) {
        answer(req, res, err);
        done();
        return;
      }
      (unchecked ? known.check(req) : Promise.resolve())
        .then(() => fail(req, res, err), (checkErr: unknown) => fail(req, res, checkErr)).finally(done);
    },
  };
}
