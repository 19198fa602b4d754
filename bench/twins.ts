// The benchmark's twins (issue: each endpoint against its own bare twin): for every endpoint the
// bench measures, a route that runs exactly that endpoint's handler (the same SQL files, the same
// parameters, the same view, so the same bytes) for the bench's key, with no authentication,
// scope check, pool thread, request log or audit hand-off. A read reaches the database as the
// gateway's do (its small reads on lanes, lib/lanes.ts), so that `x twin` holds the gateway's own
// work, not its transport. A write's change runs in its transaction without its audit_outbox row
// (that statement is taken out of its COMMIT's message, or, for a change made by one statement,
// the statement's hand-off writes nothing) and without the job requested after its commit (the
// job producer here sends nothing). Built from the same restify, pg and certificate as the
// service. Usage: node bench/twins.ts <port> <database-url> <key secret>
import { readFileSync } from 'node:fs';
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import restify from 'restify';
import { OUTBOX_INSERT } from '../domain/audit.ts';
import { declaresNoBody } from '../gateway/body-limit.ts';
import { sendSerializedEnvelope } from '../gateway/envelope.ts';
import { KeyCheckedDatabase } from '../domain/key-check.ts';
import { responseJson, type CallerKey, type DomainRequest } from '../domain/requests.ts';
import { hashSecret, secretProject } from '../domain/secrets.ts';
import { readConfig } from '../lib/config.ts';
import { openLanedDatabase } from '../lib/lanes.ts';
import { queryFile, STATEMENT_SEPARATOR } from '../lib/pool.ts';
import { createLogger } from '../lib/log.ts';
import { ENDPOINTS } from '../gateway/endpoints/registry.ts';

const [portArg, databaseUrl, secret] = process.argv.slice(2);
const log = createLogger('warn', 'twins', 2);
const reads = openLanedDatabase(readConfig({ DB_POOL_SIZE: '8' }), log, databaseUrl!);
const { pool } = reads;
/** Sends no job and writes no outbox row: a twin is the change without its audit hand-off. */
const boss = { send: async () => null } as unknown as PgBoss;
/**
 * A COMMIT's message without the statements that hand events over: each matched whole, from the
 * message's start or a separator, literal by literal as pg's escapeLiteral writes them (quotes
 * always doubled inside, with or without the E prefix), so a quote or a separator inside a value
 * does not end the match early.
 */
const HAND_OFF_VALUE = String.raw`(?:E?'(?:[^']|'')*'|NULL|-?\d+)`;
const HAND_OFF = new RegExp(String.raw`(?<=^|${STATEMENT_SEPARATOR})EXECUTE ${OUTBOX_INSERT}\(\s*${HAND_OFF_VALUE}(?:\s*,\s*${HAND_OFF_VALUE})*\s*\)\s*${STATEMENT_SEPARATOR}`, 'g');
const withoutHandOff = (text: string) => text.replace(HAND_OFF, '');
/**
 * A change made by one statement hands its event over inside it (sql/migrations/0017): the twin's
 * copy of the statement calls, in hand_over_event's place, a function of the same parameters
 * that writes nothing (made here, in the bench's own database).
 */
const withoutStatementHandOff = (config: pg.QueryConfig): pg.QueryConfig => (config.text.includes('hand_over_event(')
  ? { ...config, name: config.name && `${config.name}+twin`, text: config.text.replaceAll('hand_over_event(', 'pms_twin_no_hand_over(') }
  : config);
// Before the first query: a connection made before the hook would hand events over.
pool.on('connect', (client) => {
  const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
  client.query = ((first: unknown, ...rest: unknown[]) => query(
    typeof first === 'string' ? withoutHandOff(first) : first && typeof first === 'object' && 'text' in first ? withoutStatementHandOff(first as pg.QueryConfig) : first,
    ...rest,
  )) as typeof client.query;
});
await pool.query(`CREATE OR REPLACE FUNCTION pms_twin_no_hand_over(text, text, text, text, text, text, text, text, jsonb, bigint)
  RETURNS void LANGUAGE sql AS 'SELECT NULL::void'`);
const services = { pool, db: pool, boss, log, config: readConfig({}) };
const tls = { cert: readFileSync(process.env.TLS_CERT_FILE!), key: readFileSync(process.env.TLS_KEY_FILE!) };
const server = restify.createServer({ name: '', httpsServerOptions: tls, handleUncaughtExceptions: false });

const [caller] = await queryFile<CallerKey>(pool, 'key_authenticate', [hashSecret(secret!), secretProject(secret!)]);
if (!caller) throw new Error('the bench key does not authenticate');

/** The body as text; one the request does not declare is not read, as the service's body step does not read it. */
function withBody(req: restify.Request, then: (text: string) => void): void {
  if (declaresNoBody(req)) return then('');
  let text = '';
  req.on('data', (chunk: Buffer) => { text += chunk; });
  req.on('end', () => then(text));
}

function requestOf(req: restify.Request, body: Record<string, unknown>): DomainRequest {
  return { params: { ...(req.params as Record<string, string>) }, query: {}, body, caller: caller!, keyChecked: false, ip: '127.0.0.1', requestId: 'twin' };
}

for (const endpoint of Object.values(ENDPOINTS)) {
  if (endpoint.runs !== 'pool' && endpoint.runs !== 'inline') continue;
  const register = { GET: server.get, POST: server.post, PATCH: server.patch, DELETE: server.del }[endpoint.method];
  register.call(server, `/twin${endpoint.path.replace(/\{(\w+)\}/g, ':$1')}`, function twin(req: restify.Request, res: restify.Response, next: restify.Next) {
    withBody(req, (text) => {
      const request = requestOf(req, text ? JSON.parse(text) : {});
      // As for a key the service knows from memory: the endpoint's own statements, without the
      // key check (GET /v1/key/current's read of the key is that check: the twin makes it too).
      const result = endpoint === ENDPOINTS.keyCurrent
        ? endpoint.handler(new KeyCheckedDatabase(reads, caller!.id, caller!.project_id), request)
        : endpoint.runs === 'inline' ? endpoint.handler(reads, request) : endpoint.handler(services, request);
      // The service's own envelope writer: the same bytes, the same two headers.
      result.then((done) => sendSerializedEnvelope(res, done.status, responseJson(done)), () => sendSerializedEnvelope(res, 503, '"twin failed"'))
        .finally(() => next(false));
    });
  });
}

server.listen(Number(portArg), '127.0.0.1', () => process.send?.('ready'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
// The bench gone (crashed, or killed) closes this channel: a reference server never outlives it.
process.on('disconnect', () => process.exit(0));
