// The keys this web process has seen authenticate, by the SHA-256 of their secret: a known key
// costs no lookup of its own. Whether it is still usable is checked where its request reaches
// the database anyway (domain/key-check.ts); an answer the gateway gives itself (an unknown
// path, a missing scope, a body that is not JSON) waits for that check on its own round trip,
// so a key revoked or disabled through any process is refused first, on its very next call.
// Bounded: past the bound the key remembered longest ago is forgotten (and looked up again).
import type pg from 'pg';
import type { Response } from 'restify';
import { ApiError, errors, isDatabaseUnavailable } from '../domain/errors.ts';
import { KeyCheckedDatabase, KeyRefusal } from '../domain/key-check.ts';
import type { CallerKey } from '../domain/requests.ts';
import { errorFields, type Logger } from '../lib/log.ts';
import { sendError } from './envelope.ts';
import type { GatewayRequest } from './types.ts';

export class KnownKeys {
  readonly #keys = new Map<string, CallerKey>();
  readonly #pool: pg.Pool;
  readonly #size: number;
  readonly #log: Logger;

  /** size 0: every call looks its key up. */
  constructor(pool: pg.Pool, size: number, log: Logger) {
    this.#pool = pool;
    this.#size = size;
    this.#log = log;
  }

  recall(hash: string): CallerKey | undefined {
    return this.#keys.get(hash);
  }

  remember(hash: string, key: CallerKey): void {
    if (this.#size === 0) return;
    this.#keys.delete(hash);
    if (this.#keys.size >= this.#size) this.#keys.delete(this.#keys.keys().next().value!);
    this.#keys.set(hash, key);
  }

  /** The request's key was refused by its check: the next call with it is looked up. */
  forget(req: GatewayRequest): void {
    if (req.callerHash !== undefined) this.#keys.delete(req.callerHash);
  }

  /**
   * For an answer the gateway gives itself after authentication: `answer` once the caller's key
   * is known usable, or the key's own refusal instead.
   */
  answerAfterCheck(req: GatewayRequest, res: Response, answer: () => void, done: () => void): void {
    if (!req.caller || req.callerChecked) {
      answer();
      done();
      return;
    }
    this.check(req).then(answer, (err: unknown) => this.answerFailure(req, res, err)).finally(done);
  }

  /** The caller's key checked now, unless authentication looked it up for this request. */
  async check(req: GatewayRequest): Promise<void> {
    if (req.callerChecked) return;
    await new KeyCheckedDatabase(this.#pool, req.caller!.id).confirm();
    req.callerChecked = true;
  }

  /** Answers a failure of work done on the gateway's thread: a refused key is forgotten too. */
  answerFailure(req: GatewayRequest, res: Response, err: unknown): void {
    if (err instanceof KeyRefusal) this.forget(req);
    if (err instanceof ApiError) {
      sendError(res, err);
    } else if (isDatabaseUnavailable(err)) {
      sendError(res, errors.unavailable());
    } else {
      this.#log.error({ requestId: req.requestId, err: errorFields(err) }, 'gateway request failed');
      sendError(res, errors.internal());
    }
  }
}
