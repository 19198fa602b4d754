// Keys this process has seen authenticate, by their secret's SHA-256, so a known key costs no lookup;
// it is checked where its request reaches the database anyway (domain/key-check.ts). LRU-bounded.
import { KeyCheckedDatabase } from '../domain/key-check.ts';
import type { CallerKey } from '../domain/requests.ts';
import type { Database } from '../lib/pool.ts';
import type { GatewayRequest } from './types.ts';

export class KnownKeys {
  readonly #keys = new Map<string, CallerKey>();
  readonly #db: Database;
  readonly #size: number;

  /** size 0: every call looks its key up. */
  constructor(db: Database, size: number) {
    this.#db = db;
    this.#size = size;
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

  /** The caller's key checked now, unless authentication looked it up for this request. */
  async check(req: GatewayRequest): Promise<void> {
    if (req.callerChecked) return;
    await new KeyCheckedDatabase(this.#db, req.caller!.id, req.caller!.project_id).confirm();
    req.callerChecked = true;
  }
}
