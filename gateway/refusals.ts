// The gateway's one error path: an ApiError as worded, an unreachable database 503, else 500.
// A refusal for a caller known from memory waits for that key's check first, so a revoked key is
// refused as such on its next call. A key's refusal always waits for the refusal floor.
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
  /** A failure answered without a further check (the work failed, or load shedding). */
  fail(req: GatewayRequest, res: Response, err: unknown): Promise<void>;
}

/**
 * A key's refusal is answered `keyRefusalFloorMs` after arrival, no sooner: otherwise its timing
 * would tell an unknown key (one lookup) from a known one refused on a pool thread.
 */
export function createRefusals(log: Logger, known?: KnownKeys, keyRefusalFloorMs = 0, counted?: { refused(req: GatewayRequest, err: unknown): void }): Refusals {
  async function fail(req: GatewayRequest, res: Response, err: unknown): Promise<void> {
    if (err instanceof KeyRefusal) {
      // A refused key is forgotten: its next call is looked up.
      known?.forget(req);
      if (keyRefusalFloorMs > 0) await waitUntil(req.arrivedMs + keyRefusalFloorMs);
    }
    answer(req, res, err);
  }
  function answer(req: GatewayRequest, res: Response, err: unknown): void {
    counted?.refused(req, err);
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
