// A fleet, not a process (test/fleet): hosts in network namespaces behind HAProxy, PostgreSQL on a
// host of its own, failures silent. Under key creations through the balancer (Idempotency-Key,
// retried): a web host, a worker host and the database host cut off; PostgreSQL connections
// counted; X-Forwarded-For behind the balancer; the fleet run through PgBouncer. The bounds are
// docs/deploy.md's. As root only: elsewhere, or without the Debian packages, one line says why.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { readConfig } from '../../lib/config.ts';
import { WORST_RECOVERY_SECONDS } from '../../lib/jobs.ts';
import { recordFigure } from '../support/figures.ts';
import { SECRET_SHAPED } from '../support/ids.ts';
import { ChangeStream, checkCreations, sleep, type CountCheck } from '../fleet/changes.ts';
import { connectionFormula, peakConnections } from '../fleet/connections.ts';
import { DATABASE, ROLES } from '../fleet/database.ts';
import { Fleet } from '../fleet/fleet.ts';
import { HOSTS } from '../fleet/hosts.ts';
import { fleetSkipReason } from '../fleet/packages.ts';
import { probePooling } from '../fleet/pooling.ts';
import { CHANGE_QUEUES, describePending, waitJobsDrained } from './helpers.ts';

const SUITE = 'fleet';
const WRITERS = 6;
const WARM_MS = 3000;

/** (a) HAProxy: checks every 1 s (500 ms while changing state), out after 2 failures of 1 s each. */
const OUT_OF_ROTATION_MS = 5000;
/** (a) Back in rotation after 2 passing checks. */
const BACK_IN_ROTATION_MS = 8000;
/**
 * (a) PostgreSQL ends a silent client's sessions after 5 s idle and 3 probes 2 s apart (11 s), letting
 * go of their locks; the last failure ends by then, with a statement timeout's grace.
 */
const SESSIONS_ENDED_MS = 11_000 + 2000;
/** (a) How long the web host stays cut off: past PostgreSQL's keepalives (11 s) and the pools' (15 s). */
const WEB_CUT_MS = 16_000;
/** (b) How long the database host stays cut off. */
const DB_CUT_MS = 30_000;
/**
 * (b) Every request answered within this of the cut (or of its own start, if later): a web host's
 * watch finds its database silent within DB_SILENCE_MS (1 s) and a quarter of it, then cuts what
 * is in flight and refuses the rest at once (lib/database-watch.ts).
 */
const SERVICE_ANSWER_MS = 2000;
/** (b) Both web hosts out of rotation (each /readyz fails at once once its watch knows) within this. */
const BOTH_OUT_MS = 5000;
/** (b) A creation through the balancer succeeds again within this of the database's return. */
const RECOVERY_MS = 5000;
/** (b) Every job settled within this of the return: a lost claim waits out its expiry (lib/jobs.ts). */
const JOBS_SETTLED_MS = WORST_RECOVERY_SECONDS * 1000;
/**
 * (c) A job of the cut worker expires, the supervisor hands it back and the other worker claims it
 * (lib/jobs.ts's worst case), once one of its two drain places is free (a drain stays up to 10 s).
 */
const TAKEN_OVER_MS = (WORST_RECOVERY_SECONDS + 10) * 1000;
/** (c) The drain lock a cut worker's session held is let go when PostgreSQL's keepalives end it (11 s). */
const EVENTS_HELD_MS = 20_000;
const SETTLE_MS = 60_000;
/** (e) An address of TEST-NET-1 (RFC 5737): only ever written in a header, never sent to. */
const SPOOFED = '192.0.2.7';

const skip = await fleetSkipReason();
if (skip) {
  test('the fleet: hosts, balancer, pooler, silent failures', { skip }, () => {});
} else {
  fleetTests();
}

function fleetTests(): void {
  let fleet: Fleet;
  let db: pg.Pool;
  let project: { id: string; key: string };
  const secrets = { seen: [] as string[], add(secret: string) { this.seen.push(secret); } };

  before(async () => {
    const started = Date.now();
    fleet = await Fleet.up();
    recordFigure(SUITE, 'fleet up (ms)', Date.now() - started);
    db = new pg.Pool({ ...fleet.db.adminConfig(), max: 3 });
    db.on('error', () => {});
    const made = await fleet.workspace('project', 'create', '--name', 'Fleet');
    project = { id: made.project.id, key: made.key.key };
    secrets.add(project.key);
  });

  after(async () => {
    await db?.end().catch(() => undefined);
    await fleet?.down();
  });

  const auth = () => ({ authorization: `Bearer ${project.key}` });

  /** Stops the stream, waits for its jobs, and checks every creation left one key and one event. */
  async function settle(stream: ChangeStream, what: string): Promise<CountCheck> {
    await stream.stop();
    for (const secret of stream.secrets) secrets.add(secret);
    const drained = await waitJobsDrained(db, SETTLE_MS, { queues: CHANGE_QUEUES });
    assert.ok(drained.drained, `${what}: jobs still pending ${SETTLE_MS} ms after the load stopped:\n${describePending(drained.last)}`);
    const check = await checkCreations(db, project.id, stream);
    assert.deepEqual(check.problems, [], `${what}: creations against keys and events`);
    assert.equal(check.keys, check.events, `${what}: one event per key`);
    recordFigure(SUITE, `${what}: creations answered 201 / keys / events`, `${check.answered} / ${check.keys} / ${check.events}`);
    return check;
  }

  /** The status of each server at every poll, until `done` holds or `timeoutMs` passed. */
  async function watchServers(done: (s: Record<string, { status: string }>) => boolean, timeoutMs: number): Promise<number | undefined> {
    const started = Date.now();
    while (Date.now() - started < timeoutMs) {
      if (done(await fleet.balancer.servers())) return Date.now() - started;
      await sleep(50);
    }
    return undefined;
  }

  test('(e) behind HAProxy the recorded address is the client host\'s, whatever X-Forwarded-For it sends', async () => {
    const ipOf = async (keyId: string) => (await db.query<{ ip_address: string }>(
      "SELECT ip_address FROM events e JOIN event_types t ON t.id = e.type_id WHERE t.name = 'key.created' AND e.related_id = $1", [keyId])).rows[0]?.ip_address;
    const create = async (url: string, headers: Record<string, string>) => {
      const reply = await fleet.client.request('POST', url, { headers: { ...auth(), ...headers }, body: { name: `forwarded ${Math.random()}`, scope: ['key:read'] } });
      assert.ok('status' in reply && reply.status === 201, `POST ${url}: ${JSON.stringify(reply).slice(0, 300)}`);
      const { id, key } = JSON.parse(reply.text).response as { id: string; key: string };
      secrets.add(key);
      return id;
    };
    const plain = await create('/v1/key', {});
    const spoofed = await create('/v1/key', { 'x-forwarded-for': SPOOFED, 'x-forwarded-proto': 'http' });
    const direct = await create(`https://${HOSTS.web1}:8443/v1/key`, { 'x-forwarded-for': SPOOFED });
    await waitJobsDrained(db, SETTLE_MS);
    assert.equal(await ipOf(plain), HOSTS.client, 'the client host\'s address, as HAProxy set it');
    assert.equal(await ipOf(spoofed), HOSTS.client, 'HAProxy replaced the client\'s X-Forwarded-For (and its X-Forwarded-Proto: no 301)');
    // TRUST_PROXY=true trusts whoever connects: a web host must be reachable from the balancer only.
    assert.equal(await ipOf(direct), SPOOFED, 'a client reaching a web host past the balancer names its own address');

    const redirect = await fleet.client.request('GET', `http://${HOSTS.lb}/v1/key/current`, { headers: auth() });
    assert.ok('status' in redirect && redirect.status === 301, `plain HTTP through HAProxy: ${JSON.stringify(redirect).slice(0, 200)}`);
    assert.equal(redirect.headers.location, `https://${HOSTS.lb}/v1/key/current`, 'to PUBLIC_URL, told by X-Forwarded-Proto: http');
  });

  test('(d) PostgreSQL connections of 2 web and 2 worker processes stay within the formula', async () => {
    const formula = connectionFormula(readConfig({}));
    const stream = new ChangeStream(fleet.client, project.key, { writers: 8, pauseMs: 0 });
    stream.start();
    let reading = true;
    const readers = Array.from({ length: 8 }, async () => {
      while (reading) await fleet.client.request('GET', '/v1/key?limit=20', { headers: auth() });
    });
    await sleep(2000);
    const peak = await peakConnections(db, DATABASE, ROLES.web, 6000);
    reading = false;
    await Promise.all(readers);
    await settle(stream, '(d) direct');
    const perHost = (address: string) => [...peak].filter(([key]) => key.startsWith(`${address} `)).reduce((sum, [, n]) => sum + n, 0);
    for (const host of ['web1', 'web2', 'worker1', 'worker2'] as const) {
      const limit = host.startsWith('web') ? formula.web : formula.worker;
      recordFigure(SUITE, `(d) connections of ${host}: peak / formula`, `${perHost(HOSTS[host])} / ${limit}`);
      assert.ok(perHost(HOSTS[host]) > 0 && perHost(HOSTS[host]) <= limit, `${host}: ${perHost(HOSTS[host])} connections, formula ${limit}: ${JSON.stringify([...peak])}`);
    }
    recordFigure(SUITE, '(d) connections by address and application_name (peak)', [...peak].map(([k, n]) => `${k}: ${n}`).join(', '));
    recordFigure(SUITE, '(d) formula for 2 web + 2 worker', formula.total(2, 2));
  });

  test('(a) a web host cut off silently is taken out of rotation; no change lost or doubled', async () => {
    const stream = new ChangeStream(fleet.client, project.key, { writers: WRITERS });
    stream.start();
    await sleep(WARM_MS);
    const atCut = await fleet.balancer.servers();
    const cutAt = Date.now();
    await fleet.cut('web1');
    const outMs = await watchServers((s) => s.web1!.status.startsWith('DOWN'), OUT_OF_ROTATION_MS * 3);
    const atOut = await fleet.balancer.servers();
    await sleep(Math.max(0, cutAt + WEB_CUT_MS - Date.now()));
    const idleKept = await fleet.balancer.idleConnections('web1');
    const restoreAt = Date.now();
    await fleet.restore('web1');
    const backMs = await watchServers((s) => s.web1!.status === 'UP', BACK_IN_ROTATION_MS * 3);
    await sleep(WARM_MS);
    const failures = stream.failures(cutAt, restoreAt);
    const resets = failures.filter((a) => typeof a.status === 'string');
    const afterReturn = stream.failures(restoreAt);
    // How long each creation that met a failure took from the cut to its 201.
    const hit = stream.creations.filter((c) => c.attempts.some((a) => a.at >= cutAt && a.at < restoreAt && a.status !== 201));
    const doneMs = hit.map((c) => {
      const last = c.attempts[c.attempts.length - 1]!;
      return last.status === 201 ? last.at + last.ms - cutAt : Infinity;
    });
    const lastFailureMs = Math.max(0, ...failures.map((a) => a.at + a.ms - cutAt));
    await settle(stream, '(a) web host cut');

    recordFigure(SUITE, '(a) web host out of rotation after (ms)', outMs ?? 'never');
    recordFigure(SUITE, '(a) requests sent to it meanwhile', atOut.web1!.sessions - atCut.web1!.sessions);
    recordFigure(SUITE, '(a) failed attempts while cut: resets / all', `${resets.length} / ${failures.length} ${JSON.stringify(stream.statusCounts(cutAt, restoreAt))}`);
    recordFigure(SUITE, '(a) creations that met a failure / longest from the cut to their 201 (ms)', `${hit.length} / ${Math.max(0, ...doneMs)}`);
    recordFigure(SUITE, '(a) last failure ended after the cut (ms)', lastFailureMs);
    recordFigure(SUITE, '(a) back in rotation after (ms) / idle connections HAProxy kept to it / failed attempts after',
      `${backMs ?? 'never'} / ${idleKept} / ${afterReturn.length}`);
    assert.ok(outMs !== undefined && outMs <= OUT_OF_ROTATION_MS, `out of rotation after ${outMs} ms (bound ${OUT_OF_ROTATION_MS})`);
    assert.ok(backMs !== undefined && backMs <= BACK_IN_ROTATION_MS, `back in rotation after ${backMs} ms (bound ${BACK_IN_ROTATION_MS})`);
    // Each writer has one request at a time: at most the one sent to the host before it was out is reset.
    assert.ok(resets.length <= WRITERS, `${resets.length} attempts reset while cut (bound ${WRITERS}): ${JSON.stringify(stream.statusCounts(cutAt, restoreAt))}`);
    assert.ok(stream.longestMs(cutAt) <= OUT_OF_ROTATION_MS + 1000, `an attempt took ${stream.longestMs(cutAt)} ms`);
    // A change in flight on the cut host holds its Idempotency-Key's lock (409) and its rows (503 after
    // the statement timeout) until PostgreSQL's keepalives end that host's sessions.
    assert.ok(lastFailureMs <= SESSIONS_ENDED_MS, `a failure ended ${lastFailureMs} ms after the cut (bound ${SESSIONS_ENDED_MS}): ${JSON.stringify(stream.statusCounts(cutAt, restoreAt))}`);
    assert.ok(Math.max(0, ...doneMs) <= SESSIONS_ENDED_MS + 1000, `a creation took ${Math.max(0, ...doneMs)} ms from the cut to its 201`);
    // HAProxy's idle connections to the host died while it was cut; one reused after the return is
    // closed with the client's, unanswered, as a keep-alive race is (http-reuse safe): at most one each.
    assert.ok(afterReturn.every((a) => typeof a.status === 'string') && afterReturn.length <= idleKept,
      `failed attempts after the return: ${JSON.stringify(stream.statusCounts(restoreAt))}, ${idleKept} idle connections kept`);
  });

  test('(c) a worker host cut off: the other takes its jobs, no event is lost', async () => {
    const stream = new ChangeStream(fleet.client, project.key, { writers: WRITERS });
    stream.start();
    await sleep(WARM_MS);
    // worker2 paused a moment: the drain jobs in hand at the cut are worker1's.
    fleet.worker.worker2.process!.pause(true);
    await sleep(1500);
    const cutAt = Date.now();
    await fleet.cut('worker1');
    fleet.worker.worker2.process!.pause(false);
    const cutAtSql = new Date(cutAt).toISOString();
    await sleep(3000);
    const { rows: stranded } = await db.query<{ id: string }>(
      "SELECT id FROM pgboss.job WHERE name = ANY($1) AND state = 'active' AND started_on < $2", [CHANGE_QUEUES, cutAtSql]);
    let heldMs = 0;
    let takenMs: number | undefined;
    // Taken back: completed, or claimed again after its expiry (a claim counts a retry).
    const takenBack = "state = 'completed' OR (retry_count > 0 AND state IN ('active', 'completed'))";
    while (Date.now() - cutAt < TAKEN_OVER_MS + 5000) {
      const { rows: [outbox] } = await db.query<{ age: number }>('SELECT coalesce(extract(epoch from now()) - min(created_at), 0)::float AS age FROM audit_outbox');
      heldMs = Math.max(heldMs, outbox!.age * 1000);
      const { rows: [open] } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pgboss.job WHERE id = ANY($1) AND NOT (${takenBack})`, [stranded.map((j) => j.id)]);
      if (open!.n === 0) {
        takenMs = Date.now() - cutAt;
        break;
      }
      await sleep(500);
    }
    const { rows: [retried] } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pgboss.job WHERE id = ANY($1) AND retry_count > 0', [stranded.map((j) => j.id)]);
    await fleet.restore('worker1');
    await sleep(1000);
    const failures = stream.failures(cutAt);
    await settle(stream, '(c) worker host cut');

    recordFigure(SUITE, '(c) jobs in hand at the cut / taken back on expiry', `${stranded.length} / ${retried!.n}`);
    recordFigure(SUITE, '(c) all of them completed or claimed again after (ms)', takenMs ?? 'never');
    recordFigure(SUITE, '(c) oldest event waiting for the drain (ms, 1 s steps)', Math.round(heldMs));
    assert.ok(stranded.length > 0, 'the cut worker held jobs (else the takeover proves nothing)');
    assert.ok(retried!.n > 0, 'pg-boss handed the cut worker\'s jobs to the other');
    assert.ok(takenMs !== undefined && takenMs <= TAKEN_OVER_MS, `its jobs taken back after ${takenMs} ms (bound ${TAKEN_OVER_MS})`);
    assert.ok(heldMs <= EVENTS_HELD_MS, `an event waited ${heldMs} ms for the drain (bound ${EVENTS_HELD_MS})`);
    assert.equal(failures.length, 0, `a worker's cut is no client's business: ${JSON.stringify(stream.statusCounts(cutAt))}`);
  });

  test('(b) the database host cut off silently: 503 promptly, nothing hangs, all recovers', async () => {
    const stream = new ChangeStream(fleet.client, project.key, { writers: 4 });
    const direct = (['web1', 'web2'] as const).map((host) => new ChangeStream(fleet.client, project.key, { writers: 2, origin: `https://${HOSTS[host]}:8443` }));
    for (const s of [stream, ...direct]) s.start();
    await sleep(WARM_MS);
    const cutAt = Date.now();
    await fleet.cut('db');
    const bothOutMs = await watchServers((s) => s.web1!.status.startsWith('DOWN') && s.web2!.status.startsWith('DOWN'), DB_CUT_MS);
    await sleep(Math.max(0, cutAt + DB_CUT_MS - Date.now()));
    const restoreAt = Date.now();
    await fleet.restore('db');
    const backMs = await watchServers((s) => s.web1!.status === 'UP' && s.web2!.status === 'UP', RECOVERY_MS * 3);
    await sleep(WARM_MS);
    const lbRecoveryMs = stream.firstSuccessAfter(restoreAt);
    const directRecoveryMs = Math.max(...direct.map((s) => s.firstSuccessAfter(restoreAt) ?? Infinity));
    await Promise.all([stream, ...direct].map((s) => s.stop()));
    await waitJobsDrained(db, SETTLE_MS, { queues: CHANGE_QUEUES });
    const settledMs = Date.now() - restoreAt;
    const longest = Math.max(...[stream, ...direct].map((s) => s.longestWaitAfter(cutAt)));
    const serviceAnswers = direct.flatMap((s) => s.attempts(cutAt, restoreAt)).filter((a) => a.status !== 201);
    // Those in flight when the hosts went out are cut then (shutdown-sessions): from a second on, HAProxy's own.
    const lbAnswers = stream.attempts(cutAt + (bothOutMs ?? 0) + 1000, restoreAt);
    for (const s of [stream, ...direct]) await settle(s, `(b) database host cut, ${s === stream ? 'through the balancer' : 'a web host directly'}`);

    recordFigure(SUITE, '(b) both web hosts out of rotation after (ms)', bothOutMs ?? 'never');
    recordFigure(SUITE, '(b) a web host\'s answers while cut / longest (ms)', `${JSON.stringify(direct.map((s) => s.statusCounts(cutAt, restoreAt)))} / ${Math.max(...direct.map((s) => s.longestMs(cutAt, restoreAt)))}`);
    recordFigure(SUITE, '(b) answers through the balancer while cut', JSON.stringify(stream.statusCounts(cutAt, restoreAt)));
    recordFigure(SUITE, '(b) longest wait for an answer from the cut or the attempt\'s start (ms)', longest);
    recordFigure(SUITE, '(b) after the return: hosts in rotation / first 201 balancer / direct / jobs settled (ms)',
      `${backMs ?? 'never'} / ${lbRecoveryMs ?? 'never'} / ${directRecoveryMs} / ${settledMs}`);
    assert.ok(bothOutMs !== undefined && bothOutMs <= BOTH_OUT_MS, `both web hosts out after ${bothOutMs} ms (bound ${BOTH_OUT_MS})`);
    assert.ok(longest <= SERVICE_ANSWER_MS, `an answer took ${longest} ms from the cut or its start (bound ${SERVICE_ANSWER_MS})`);
    assert.ok(serviceAnswers.length > 0 && serviceAnswers.every((a) => a.status === 503 && a.by === 'service' && a.retryAfter === '1'),
      `a web host answers 503 with Retry-After itself: ${JSON.stringify(direct.map((s) => s.statusCounts(cutAt, restoreAt)))}`);
    assert.ok(lbAnswers.length > 0 && lbAnswers.every((a) => a.status === 503 && a.retryAfter === '1'),
      `with both out, HAProxy answers the service's 503: ${JSON.stringify(stream.statusCounts(cutAt + (bothOutMs ?? 0) + 1000, restoreAt))}`);
    assert.ok(lbRecoveryMs !== undefined && lbRecoveryMs <= RECOVERY_MS, `first 201 through the balancer ${lbRecoveryMs} ms after the return (bound ${RECOVERY_MS})`);
    assert.ok(directRecoveryMs <= RECOVERY_MS, `first 201 from every web host ${directRecoveryMs} ms after the return (bound ${RECOVERY_MS})`);
    assert.ok(settledMs <= JOBS_SETTLED_MS, `jobs settled ${settledMs} ms after the return (bound ${JOBS_SETTLED_MS})`);
  });

  test('(d) through PgBouncer: session pooling serves the fleet; transaction pooling breaks what it needs', async () => {
    await fleet.db.startPgBouncer();
    fleet.via = 'pgbouncer';
    const services = [...Object.values(fleet.web), ...Object.values(fleet.worker)];
    await Promise.all(services.map(async (service) => {
      await service.stop();
      await service.start();
    }));
    await fleet.balanced();
    const stream = new ChangeStream(fleet.client, project.key, { writers: 8, pauseMs: 0 });
    stream.start();
    await sleep(2000);
    const peak = await peakConnections(db, DATABASE, ROLES.web, 4000);
    const admin = new pg.Client(fleet.db.bouncerConfig('pgbouncer', 'admin'));
    await admin.connect();
    const pools = (await admin.query<{ database: string; cl_active: number; cl_waiting: number; sv_active: number }>('SHOW POOLS')).rows.find((p) => p.database === DATABASE);
    await admin.end();
    // A replay through PgBouncer: the kept answer behind the session's advisory lock.
    const replayKey = `fleet-replay-${Date.now()}`;
    const send = () => fleet.client.request('POST', '/v1/key', { headers: { ...auth(), 'idempotency-key': replayKey }, body: { name: replayKey, scope: ['key:read'] } });
    const [first, again] = [await send(), await send()];
    assert.ok('status' in first && first.status === 201 && 'status' in again && again.status === 201, 'an idempotent creation through PgBouncer');
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(JSON.parse(again.text).response.id, JSON.parse(first.text).response.id);
    secrets.add(JSON.parse(first.text).response.key);
    // pg-boss's LISTEN connection: its last statement the LISTEN, or the heartbeat asking for it.
    const { rows: listening } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1 AND application_name = 'pgboss'
       AND (query LIKE 'LISTEN %' OR query LIKE '%pg_listening_channels()%')`, [ROLES.web]);
    const failures = stream.failures();
    await settle(stream, '(d) through PgBouncer');

    const session = await probePooling(fleet.db.bouncerConfig(DATABASE));
    const transaction = await probePooling(fleet.db.bouncerConfig('pms_tx'));
    recordFigure(SUITE, '(d) PgBouncer session pooling: clients / server connections (SHOW POOLS)', `${pools?.cl_active} (+${pools?.cl_waiting} waiting) / ${pools?.sv_active}`);
    recordFigure(SUITE, '(d) PgBouncer: server connections by application_name (peak)', [...peak].map(([k, n]) => `${k}: ${n}`).join(', '));
    recordFigure(SUITE, '(d) PgBouncer session pooling', JSON.stringify(session));
    recordFigure(SUITE, '(d) PgBouncer transaction pooling', JSON.stringify(transaction));
    assert.equal(failures.length, 0, `through PgBouncer: ${JSON.stringify(stream.statusCounts())}`);
    assert.equal(listening[0]!.n, 2, 'both workers\' pg-boss LISTEN through PgBouncer');
    assert.deepEqual(session, { preparedStatements: 'works', advisoryLock: 'works', listen: 'works', statementTimeout: '5s' });
    assert.match(transaction.preparedStatements, /^broken/);
    assert.match(transaction.advisoryLock, /^broken/);
    assert.match(transaction.listen, /^broken/);
  });

  test('no log of the fleet holds a secret', () => {
    // Thousands of secrets: their hashes are looked up among the hash-shaped words of each log.
    const hashes = new Set(secrets.seen.flatMap((secret) => {
      const hash = createHash('sha256').update(secret).digest();
      return [hash.toString('hex'), hash.toString('base64')];
    }));
    const files = fleet.logFiles();
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      const what = `log ${path.basename(file)}`;
      assert.ok(!text.includes('Bearer '), `${what} holds a Bearer value`);
      assert.doesNotMatch(text, SECRET_SHAPED, `${what} holds a secret-shaped string (every key secret is one)`);
      const words = text.match(/[0-9a-f]{64}|[A-Za-z0-9+/]{43}=/g) ?? [];
      assert.ok(!words.some((word) => hashes.has(word)), `${what} holds a secret's hash`);
    }
    recordFigure(SUITE, 'logs checked', files.length);
  });
}
