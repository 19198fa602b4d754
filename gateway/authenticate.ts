// Step 4: the key, recognised from memory or looked up by its secret's SHA-256. Unknown, revoked and
// disabled keys get one identical 403, expired ones 401. A malformed secret gets that 403 without a
// query but spends the address's refusal budget; past it, 429.
import { AUDIT_KEYS_PATH } from './audit-keys-route.ts';
import type { Response } from 'restify';
import { errors, type ApiError } from '../domain/errors.ts';
import type { CallerKey } from '../domain/requests.ts';
import { keyRefusal } from '../domain/key-check.ts';
import { hashSecret, secretProject } from '../domain/secrets.ts';
import type { LanedDatabase } from '../lib/lanes.ts';
import { queryFile } from '../lib/pool.ts';
import { errorFields, type Logger } from '../lib/log.ts';
import type { KnownKeys } from './known-keys.ts';
import { releaseAddress } from './pipelining.ts';
import { RefusalThrottle } from './refusal-throttle.ts';
import type { GatewayRequest, Handler, Next } from './types.ts';

const BEARER = 'Bearer ';
/** Paths answered without a key, outside /v1/: the process's health and the API's description. */
export const PUBLIC_PATHS = new Set(['/healthz', '/readyz', '/openapi.json', AUDIT_KEYS_PATH]);
const LAST_USED_RESOLUTION_MS = 60_000;
/** Bounds the memory of which keys this process touched recently. */
const LAST_USED_MEMORY_KEYS = 50_000;

/** The key by its secret's hash, in the project the secret names, or else the one its route names. */
async function lookUp(db: LanedDatabase, hash: Buffer, project: string | null): Promise<CallerKey | undefined> {
  if (project === null) {
    const [route] = await queryFile<{ project_id: string }>(db, 'key_route', [hash]);
    // No route: the lookup is made all the same, in a project named by the hash, so that an unknown
    // secret is refused after the work a known one's refusal takes (the timing rule).
    project = route?.project_id ?? `proj_${hash.toString('hex', 0, 10)}`;
  }
  const [row] = await queryFile<CallerKey>(db, 'key_authenticate', [hash, project]);
  return row;
}

/** No row: unknown, revoked, or its project or consumer disabled (the query decides). */
function refusal(row: CallerKey | undefined): ApiError | undefined {
  if (!row) return keyRefusal(false);
  if (row.status === 'expired') return keyRefusal(true);
  return undefined;
}

export function authenticate(db: LanedDatabase, known: KnownKeys, log: Logger, refusalsPerMinute: number, refusalDelayMs: number): Handler {
  const touchedAtMs = new Map<string, number>();
  const throttle = new RefusalThrottle(refusalsPerMinute);

  function noteUse(key: CallerKey): void {
    const nowMs = Date.now();
    if (key.last_used_at !== null && nowMs - key.last_used_at * 1000 < LAST_USED_RESOLUTION_MS) return;
    if (nowMs - (touchedAtMs.get(key.id) ?? 0) < LAST_USED_RESOLUTION_MS) return;
    if (touchedAtMs.size >= LAST_USED_MEMORY_KEYS) touchedAtMs.clear();
    touchedAtMs.set(key.id, nowMs);
    // A write: on a connection of its own, not on a lane, where its commit would hold up reads.
    queryFile(db.pool, 'key_touch_last_used', [key.id, key.project_id]).catch((err) => {
      touchedAtMs.delete(key.id);
      log.warn({ err: errorFields(err), keyId: key.id }, 'could not record last use');
    });
  }

  /** Takes one refusal from the address's budget ahead (given back if the key is usable); past it, 429. */
  function overBudget(req: GatewayRequest, res: Response, next: Next): boolean {
    const waitSeconds = throttle.admit(req.clientIp);
    if (waitSeconds === 0) return false;
    // Held before answering, so a guesser waiting for its answer guesses that much later.
    const answer = () => next(errors.tooManyRefusals(waitSeconds));
    if (refusalDelayMs > 0) {
      // Waiting is no work: the address's other requests go on (the connection stays held).
      releaseAddress(res);
      setTimeout(answer, refusalDelayMs);
    } else {
      answer();
    }
    return true;
  }

  return function authenticateKey(req, res, next) {
    if (PUBLIC_PATHS.has(req.getPath())) return next();
    const header = req.headers.authorization;
    if (typeof header !== 'string' || !header.startsWith(BEARER)) return next(errors.noKey());
    const secret = header.slice(BEARER.length);
    const project = secretProject(secret);
    // Not a secret's shape, or its checksum fails: the unknown key's answer, without a lookup.
    if (project === undefined) {
      if (!overBudget(req, res, next)) next(keyRefusal(false));
      return;
    }
    const hash = hashSecret(secret);
    const hashKey = hash.toString('base64');
    req.callerHash = hashKey;
    const recognised = known.recall(hashKey);
    if (recognised) {
      req.caller = recognised;
      req.callerChecked = false;
      noteUse(recognised);
      return next();
    }
    if (overBudget(req, res, next)) return;
    lookUp(db, hash, project).then((row) => {
      const refused = refusal(row);
      if (refused) return next(refused);
      throttle.giveBack(req.clientIp);
      known.remember(hashKey, row!);
      req.caller = row!;
      req.callerChecked = true;
      noteUse(row!);
      next();
    }, (err: Error) => {
      throttle.giveBack(req.clientIp);
      next(err);
    });
  };
}
