// A key recognised from memory is checked where the request reaches the database anyway: in its
// first statement, or its change's BEGIN. An answer no statement carried the check to waits for a
// check of its own, so a refused key is still answered first.
import type pg from 'pg';
import { queryFile, transactionWords, type Database, type Statement } from '../lib/pool.ts';
import { fillTemplate } from '../lib/sql-files.ts';
import { SQLSTATE } from '../lib/sqlstate.ts';
import { ApiError, errors } from './errors.ts';
import type { CallerKey, DomainRequest } from './requests.ts';

/** The riding statement's first columns (key_check_riding.sql): the check's outcome, then pms_row. */
const OUTCOME_COLUMN = 0;
const ROW_COLUMN = 1;
const RIDING_COLUMNS = 2;

/** What of a key can change after its creation (a key is never renamed or rescoped; a roll shortens its expiry). */
export type KeyNow = Pick<CallerKey, 'status' | 'expires_at' | 'last_used_at' | 'updated_at'>;

/** A refused key: the gateway forgets it, and the answer waits for the refusal floor. */
export class KeyRefusal extends ApiError {}

/** The refusal of a key: 401 `The API key has expired.` for an expired one, else the unknown key's 403. */
export function keyRefusal(expired: boolean): KeyRefusal {
  const { status, message } = expired ? errors.keyExpired() : errors.keyRefused();
  return new KeyRefusal(status, message);
}

/** The riding text of each named statement, by name and number of parameters. */
const ridingTexts = new Map<string, string>();

function ridingText(config: pg.QueryConfig, keyParam: number): string {
  const cacheKey = config.name === undefined ? undefined : `${config.name}/${keyParam}`;
  let text = cacheKey === undefined ? undefined : ridingTexts.get(cacheKey);
  if (text === undefined) {
    text = fillTemplate('key_check_riding', { key: `$${keyParam}`, project: `$${keyParam + 1}`, statement: config.text.trimEnd().replace(/;$/, '') });
    if (cacheKey !== undefined) ridingTexts.set(cacheKey, text);
  }
  return text;
}

/**
 * One request's view of the database: statements carry the key check until it is done; each change
 * begins with a check that locks the key and owners, so it commits before a revocation or is refused.
 */
export class KeyCheckedDatabase implements Database {
  #pending: boolean;
  readonly #pool: Database;
  readonly #keyId: string;
  /** The key's project: its checks read the key's row where the project's rows are (docs/citus.md). */
  readonly #projectId: string;

  /** `checked`: authentication looked the key up for this very request. */
  constructor(pool: Database, keyId: string, projectId: string, checked = false) {
    this.#pool = pool;
    this.#keyId = keyId;
    this.#projectId = projectId;
    this.#pending = !checked;
  }

  async query(config: Statement): Promise<pg.QueryResult> {
    if (!this.#pending) return this.#pool.query(config);
    const values = [...(config.values ?? []), this.#keyId, this.#projectId];
    // Array rows, built once into the statement's own rows: a page of rows is the thread's main work.
    const result = await this.#pool.query({
      name: config.name === undefined ? undefined : `${config.name}+key`,
      text: ridingText(config, values.length - 1),
      values,
      rowMode: 'array',
      lane: config.lane,
    });
    this.#settle(result.rows[0]?.[OUTCOME_COLUMN]);
    const fields = result.fields.slice(RIDING_COLUMNS);
    // Copies of one template share one hidden class, as pg's own rows do.
    const template: Record<string, unknown> = Object.fromEntries(fields.map(({ name }) => [name, null]));
    const rows: Record<string, unknown>[] = [];
    for (const columns of result.rows) {
      if (columns[ROW_COLUMN] === null) continue;
      const row = { ...template };
      for (let i = 0; i < fields.length; i++) row[fields[i]!.name] = columns[i + RIDING_COLUMNS];
      rows.push(row);
    }
    return { command: result.command, oid: result.oid, rows, fields, rowCount: rows.length };
  }

  connect(): Promise<pg.PoolClient> {
    return this.#pool.connect();
  }

  get nested(): boolean | undefined {
    return this.#pool.nested;
  }

  async begin(client: pg.PoolClient): Promise<void> {
    const text = fillTemplate('key_check_begin', { begin: transactionWords(this).begin, key: client.escapeLiteral(this.#keyId), project: client.escapeLiteral(this.#projectId) });
    const results = await client.query(text) as unknown as pg.QueryResult[];
    this.#settle(results[1]?.rows[0]?.key_check);
  }

  /** What of the caller's key can change, read with its check: a statement that is the check itself. */
  async callerNow(): Promise<KeyNow> {
    const [row] = await queryFile<KeyNow>(this.#pool, 'key_caller', [this.#keyId, this.#projectId]);
    this.#settle(row?.status);
    return row!;
  }

  get keyId(): string {
    return this.#keyId;
  }

  /** A change's own statement checked the key (change_key_check): its answer needs no check of its own. */
  checkedByChange(): void {
    this.#pending = false;
  }

  /** The check on its own round trip, unless a statement already carried it. */
  async confirm(): Promise<void> {
    if (!this.#pending) return;
    const [row] = await queryFile<{ key_check: string | null }>(this.#pool, 'key_check', [this.#keyId, this.#projectId]);
    this.#settle(row?.key_check);
  }

  #settle(outcome: unknown): void {
    this.#pending = false;
    if (outcome === 'activated') return;
    throw keyRefusal(outcome === 'expired');
  }
}

/** The key a change made through `db` checks in its own statement (change_key_check); null when no key makes it. */
export function changeKeyOf(db: Database): string | null {
  return db instanceof KeyCheckedDatabase ? db.keyId : null;
}

/** A change made through `db` checked its key in its own statement. */
export function checkedByChange(db: Database): void {
  if (db instanceof KeyCheckedDatabase) db.checkedByChange();
}

/** change_key_check's refusal as the key's own answer; any other error as it is. */
export function changeKeyRefusal(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === SQLSTATE.changeKeyRefused || code === SQLSTATE.changeKeyExpired) return keyRefusal(code === SQLSTATE.changeKeyExpired);
  return err;
}

/** Runs a request's work so its key is checked before any answer comes back, and in each change. */
export async function withKeyCheck<T>(pool: Database, request: DomainRequest, work: (db: Database) => Promise<T>): Promise<T> {
  if (request.keyChecked) return work(new KeyCheckedDatabase(pool, request.caller.id, request.caller.project_id, true));
  const db = new KeyCheckedDatabase(pool, request.caller.id, request.caller.project_id);
  let result: T;
  try {
    result = await work(db);
  } catch (err) {
    if (err instanceof ApiError && !(err instanceof KeyRefusal)) await db.confirm();
    throw err;
  }
  await db.confirm();
  return result;
}
