// Request limits and fair turns against real Procfile `web` processes. Two processes serve one
// limited key hammered by four clients for 30 s: each window admits no more than the bound, a
// client that honours Retry-After is admitted when it returns, a client under the limit is never
// refused, and an unlimited key beside them is measured with and without the hammering. Then one
// project's key pipelined from 50 addresses must not take another project's turns.
import assert from 'node:assert/strict';
import https from 'node:https';
import type net from 'node:net';
import { performance } from 'node:perf_hooks';
import { after, afterEach, before, test } from 'node:test';
import { capOf } from '../../gateway/request-limits.ts';
import { assertSuccess } from '../support/assertions.ts';
import { recordFigure } from '../support/figures.ts';
import { ProcessGroup, type ServiceProcess } from '../support/processes.ts';
import { Secrets } from '../support/secrets.ts';
import { createTestDatabase, type TestProject } from '../support/service.ts';
import { sleep } from '../support/wait.ts';
import { assertLogsClean, openDb } from './helpers.ts';
import { connectTls, round1, startNormalClient, stopNormalClients, type NormalStats } from './normal-client.ts';
import type pg from 'pg';

const SUITE = 'limits';
const REQUEST_TIMEOUT_MS = 10_000;
const WARM_UP_MS = 1000;
const QUIET_MS = 3000;

// The hammered key.
const HAMMER_CLIENTS = 4;
const HAMMER_MS = 30_000;
const CALIBRATE_MS = 3000;
const WINDOW_S = 5;
/** The limit is what the hammerers send in this many seconds: each window is spent well before it ends. */
const SPENT_AFTER_S = 2;
const WEB_PROCESSES = 2;
// The client under its limit: this share of it per window, spread evenly over both processes.
const UNDER_LIMIT = 100;
const UNDER_WINDOW_S = 2;
const UNDER_SHARE = 0.8;
// The unlimited key's client beside them, as hostile.fault.ts judges its normal client.
const P99_FACTOR = 2;
const P99_SLACK_MS = 20;

// The probe: one project's key pipelined from many addresses, another project's client timed.
const PROBE_ADDRESSES = 50;
const PROBE_CONNECTIONS = 200;
const PROBE_PIPELINED = 5000;
const PROBE_WRITES = 5;
const PROBE_MS = 10_000;
const PROBE_P99_FACTOR = 2;
const PROBE_P50_FACTOR = 1.5;

let group: ProcessGroup;
let db: pg.Pool;
let project: TestProject;
const secrets = new Secrets();
const sockets = new Set<net.Socket>();

before(async () => {
  const url = await createTestDatabase();
  group = new ProcessGroup(url, 'limits');
  db = openDb(url, 2);
  await group.release();
  project = await group.createProject('Limits');
  secrets.add(project.key);
});

afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  await stopNormalClients();
});

after(async () => {
  await stopNormalClients();
  await group?.stopAll();
  await db?.end();
});

function track<T extends net.Socket>(socket: T): T {
  sockets.add(socket);
  socket.once('close', () => sockets.delete(socket));
  return socket;
}

interface Answer {
  sentMs: number;
  doneMs: number;
  status: number | string;
  retryAfter?: number;
}

/** One keep-alive connection to `web`, one GET at a time with `key`. */
function caller(web: ServiceProcess, key: string) {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: group.ca });
  return {
    get(path = '/v1/key/current'): Promise<Answer> {
      const sentMs = Date.now();
      return new Promise((resolve) => {
        const done = (status: number | string, retryAfter?: number) => resolve({ sentMs, doneMs: Date.now(), status, ...(retryAfter ? { retryAfter } : {}) });
        const req = https.request({ host: '127.0.0.1', port: web.port, path, agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
          res.resume();
          res.on('end', () => done(res.statusCode!, res.headers['retry-after'] ? Number(res.headers['retry-after']) : undefined));
          res.on('error', (err: NodeJS.ErrnoException) => done(err.code ?? 'EBODY'));
        });
        req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(Object.assign(new Error('no answer'), { code: 'ETESTTIMEOUT' })));
        req.on('error', (err: NodeJS.ErrnoException) => done(err.code ?? 'EUNKNOWN'));
        req.end();
      });
    },
    close: () => agent.destroy(),
  };
}

/** `clients` callers, half on each process, each sending flat out until `ms` have passed. */
async function hammer(webs: ServiceProcess[], key: string, clients: number, ms: number): Promise<Answer[]> {
  const answers: Answer[] = [];
  const until = Date.now() + ms;
  await Promise.all(Array.from({ length: clients }, async (_, i) => {
    const c = caller(webs[i % webs.length]!, key);
    while (Date.now() < until) answers.push(await c.get());
    c.close();
  }));
  return answers;
}

async function makeKey(name: string, rateLimit: { limit: number; window_s: number } | null, web: ServiceProcess): Promise<{ id: string; key: string }> {
  const reply = await group.client(web).request('POST', '/v1/key', { key: project.key, body: { name, rate_limit: rateLimit } });
  const made = assertSuccess(reply, 201, `creating ${name}`);
  secrets.add(made.key);
  return { id: made.id, key: made.key };
}

async function measureNormal(web: ServiceProcess, key: string, ms: number): Promise<NormalStats> {
  const normal = await startNormalClient({ port: web.port, ca: group.ca, key, timeoutMs: REQUEST_TIMEOUT_MS, name: web.name });
  await sleep(ms);
  return normal.stop();
}

const statsText = (s: NormalStats) => `${round1(s.p50)} / ${round1(s.p99)} ms, ${Math.round(s.perSecond)}/s (${s.requests} requests)`;

test(`one limited key hammered by ${HAMMER_CLIENTS} clients over ${WEB_PROCESSES} web processes for ${HAMMER_MS / 1000} s: each window within the bound, ` +
  'Retry-After honoured is admitted, a client under the limit never refused, an unlimited key beside it measured', async (t) => {
  const webs = [await group.startWeb('web-a'), await group.startWeb('web-b')];
  const unlimited = await makeKey('unlimited', null, webs[0]!);

  // Quiet: the unlimited key alone, after a warm-up.
  await measureNormal(webs[0]!, unlimited.key, WARM_UP_MS);
  const quiet = await measureNormal(webs[0]!, unlimited.key, QUIET_MS);

  // How fast the hammerers go on a limited key that is never spent: the limit is set from it.
  const calibration = await makeKey('calibration', { limit: 1_000_000, window_s: 86_400 }, webs[0]!);
  const calibrated = await hammer(webs, calibration.key, HAMMER_CLIENTS, CALIBRATE_MS);
  const rate = calibrated.filter((a) => a.status === 200).length / (CALIBRATE_MS / 1000);
  const limit = { limit: Math.max(100, Math.round(rate * SPENT_AFTER_S)), window_s: WINDOW_S };
  const bound = capOf(limit.limit, WEB_PROCESSES);
  recordFigure(SUITE, '1 hammered: hammerers\' rate on a limited key never spent (req/s)', Math.round(rate));
  recordFigure(SUITE, '1 hammered: the key\'s limit / bound (limit + 1% + 1 per process)', `${limit.limit} per ${limit.window_s} s / ${bound}`);
  const hammered = await makeKey('hammered', limit, webs[0]!);
  const under = await makeKey('under', { limit: UNDER_LIMIT, window_s: UNDER_WINDOW_S }, webs[0]!);

  const normal = await startNormalClient({ port: webs[0]!.port, ca: group.ca, key: unlimited.key, timeoutMs: REQUEST_TIMEOUT_MS, name: 'web-a' });
  const started = Date.now();
  const until = started + HAMMER_MS;

  // The polite client: now and then a request; refused, it waits Retry-After and asks again once.
  const returns: Array<{ waitedS: number; status: number | string }> = [];
  const polite = (async () => {
    const c = caller(webs[1]!, hammered.key);
    const answers: Answer[] = [];
    while (Date.now() < until - WINDOW_S * 1000) {
      await sleep(300 + Math.random() * 700);
      const first = await c.get();
      answers.push(first);
      if (first.status !== 429) continue;
      await sleep(first.retryAfter! * 1000);
      const again = await c.get();
      answers.push(again);
      returns.push({ waitedS: first.retryAfter!, status: again.status });
    }
    c.close();
    return answers;
  })();

  // The client under its limit: evenly spread, alternating processes, and never more than its
  // share within any stretch of a window's length (after a stall it does not catch up).
  const underAnswers: Answer[] = [];
  const underly = (async () => {
    const clients = webs.map((web) => caller(web, under.key));
    const share = UNDER_LIMIT * UNDER_SHARE;
    const gapMs = (UNDER_WINDOW_S * 1000) / share;
    const sent: number[] = [];
    for (let i = 0; Date.now() < until; i++) {
      const due = Math.max(started + i * gapMs, (sent[sent.length - share] ?? -Infinity) + UNDER_WINDOW_S * 1000);
      if (due > Date.now()) await sleep(due - Date.now());
      sent.push(Date.now());
      underAnswers.push(await clients[i % clients.length]!.get());
    }
    for (const c of clients) c.close();
  })();

  const [hammerAnswers, politeAnswers] = await Promise.all([hammer(webs, hammered.key, HAMMER_CLIENTS, HAMMER_MS), polite, underly]);
  const during = await normal.stop();

  // Windows as the database counted them. A 200 sent and answered inside a window was admitted
  // in it; one in flight across a window's start or end may belong to either side, at most one
  // per client at each end.
  const { rows: windows } = await db.query<{ window_start: string; granted: number }>(
    'SELECT window_start, granted FROM request_windows WHERE key_id = $1 ORDER BY window_start', [hammered.id]);
  const admitted = [...hammerAnswers, ...politeAnswers].filter((a) => a.status === 200);
  const perWindow = windows.map((w) => {
    const startMs = Number(w.window_start) * 1000;
    const endMs = startMs + WINDOW_S * 1000;
    const certain = admitted.filter((a) => a.sentMs >= startMs && a.doneMs < endMs).length;
    const possible = admitted.filter((a) => a.doneMs >= startMs && a.sentMs < endMs).length;
    return { start: Number(w.window_start), granted: w.granted, certain, possible };
  });
  const inFlight = HAMMER_CLIENTS + 1;
  // Whole windows only: the first and last may have been hammered for part of their length.
  const whole = perWindow.filter((w) => w.start * 1000 >= started && (w.start + WINDOW_S) * 1000 <= until);
  const statuses = new Map<string, number>();
  for (const a of hammerAnswers) statuses.set(String(a.status), (statuses.get(String(a.status)) ?? 0) + 1);
  const underRefused = underAnswers.filter((a) => a.status !== 200);

  recordFigure(SUITE, '1 hammered: hammerers\' answers by status', [...statuses].map(([s, n]) => `${s}: ${n}`).join(', '));
  recordFigure(SUITE, '1 hammered: 200s per whole window, sent and answered in it: min / max (bound)', whole.length
    ? `${Math.min(...whole.map((w) => w.certain))} / ${Math.max(...whole.map((w) => w.certain))} (${bound}) over ${whole.length} windows` : 'none');
  recordFigure(SUITE, '1 hammered: 200s per whole window, in flight across its ends included: max', Math.max(0, ...whole.map((w) => w.possible)));
  recordFigure(SUITE, '1 hammered: granted per window min / max (bound)', `${Math.min(...perWindow.map((w) => w.granted))} / ${Math.max(...perWindow.map((w) => w.granted))} (${bound})`);
  recordFigure(SUITE, '1 hammered: polite client\'s returns after Retry-After admitted', `${returns.filter((r) => r.status === 200).length}/${returns.length} (waits ${[...new Set(returns.map((r) => r.waitedS))].join(', ')} s)`);
  recordFigure(SUITE, `1 hammered: client under its limit (${UNDER_SHARE * UNDER_LIMIT} of ${UNDER_LIMIT} per ${UNDER_WINDOW_S} s) refused`, `${underRefused.length}/${underAnswers.length}`);
  recordFigure(SUITE, '1 hammered: unlimited key quiet p50 / p99, throughput', statsText(quiet));
  recordFigure(SUITE, '1 hammered: unlimited key while hammered p50 / p99, throughput', statsText(during));
  const p99Bound = P99_FACTOR * quiet.p99 + P99_SLACK_MS;
  recordFigure(SUITE, `1 hammered: unlimited key p99 target (${P99_FACTOR}x quiet + ${P99_SLACK_MS} ms = ${round1(p99Bound)} ms)`,
    during.p99 <= p99Bound ? 'met' : `MISSED (${round1(during.p99)} ms)`);

  await t.test('every window admitted at most the limit + 1% + 1 per process, and the limit was reached', () => {
    assert.ok(whole.length >= 4, `${whole.length} whole windows hammered`);
    for (const w of perWindow) {
      assert.ok(w.granted <= bound, `window ${w.start}: ${w.granted} granted, more than ${bound}`);
      assert.ok(w.certain <= bound, `window ${w.start}: ${w.certain} admitted, more than ${bound}`);
      assert.ok(w.possible <= bound + 2 * inFlight, `window ${w.start}: ${w.possible} admitted or in flight across its ends, more than ${bound} + 2 x ${inFlight}`);
    }
    // The bound was reached at all (how often depends on the machine's speed while hammered).
    assert.ok(whole.some((w) => w.possible >= limit.limit), `no whole window admitted ${limit.limit}: ${whole.map((w) => w.possible).join(', ')}`);
    assert.deepEqual([...statuses.keys()].filter((s) => s !== '200' && s !== '429'), [], 'the hammerers got 200 or 429 only');
  });
  await t.test('a client that waits Retry-After is admitted when it returns', () => {
    assert.ok(returns.length >= 1, 'no return after a 429');
    assert.deepEqual(returns.filter((r) => r.status !== 200), [], 'every return admitted');
  });
  await t.test('a client under its limit, its requests on both processes, is never refused', () => {
    assert.ok(underAnswers.length > UNDER_LIMIT, `${underAnswers.length} requests`);
    assert.deepEqual(underRefused.slice(0, 5), [], `${underRefused.length} refused`);
  });
  await t.test('the unlimited key beside it: every request answered 200', () => {
    assert.equal(quiet.ok, quiet.requests);
    assert.equal(during.ok, during.requests, `not 200: ${[...new Set(during.failures)].join(', ')}`);
  });
  for (const web of webs) await web.kill9();
});

/** Requests the log says `web` answered for `keyId`. */
function answeredFor(web: ServiceProcess, keyId: string, fromOffset: number): number {
  return web.logText().slice(fromOffset).split('\n').filter((line) => line.includes(`"keyId":"${keyId}"`)).length;
}

/**
 * The probe: pipelined floods of one key from many addresses, read as they come; another project's
 * client timed under it, and quiet before and after (the machine's own load drifts: the two
 * quiet runs' mean is the reference).
 */
async function probe(web: ServiceProcess, label: string, attacker: TestProject, honest: TestProject): Promise<{ quiet: { p50: number; p99: number }; during: NormalStats; answered: number }> {
  await measureNormal(web, honest.key, WARM_UP_MS);
  const quietBefore = await measureNormal(web, honest.key, QUIET_MS);
  const normal = await startNormalClient({ port: web.port, ca: group.ca, key: honest.key, timeoutMs: REQUEST_TIMEOUT_MS, name: web.name });
  const logOffset = web.logText().length;
  const batch = `GET /v1/key/current HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${attacker.key}\r\n\r\n`.repeat(PROBE_PIPELINED / PROBE_WRITES);
  const started = performance.now();
  const attackers = await Promise.all(Array.from({ length: PROBE_CONNECTIONS }, async (_, i) => {
    try {
      const socket = await connectTls(web.port, `127.0.0.${10 + (i % PROBE_ADDRESSES)}`, track);
      socket.resume();
      for (let w = 0; w < PROBE_WRITES; w++) socket.write(batch);
      return socket;
    } catch {
      return undefined;
    }
  }));
  await sleep(Math.max(0, PROBE_MS - (performance.now() - started)));
  const during = await normal.stop();
  for (const socket of attackers) socket?.destroy();
  const answered = answeredFor(web, attacker.keyId, logOffset);
  await sleep(WARM_UP_MS);
  const quietAfter = await measureNormal(web, honest.key, QUIET_MS);
  const quiet = { p50: (quietBefore.p50 + quietAfter.p50) / 2, p99: (quietBefore.p99 + quietAfter.p99) / 2 };
  const quietFailures = [...quietBefore.failures, ...quietAfter.failures];
  recordFigure(SUITE, `${label}: attackers connected (of ${PROBE_CONNECTIONS}, from ${PROBE_ADDRESSES} addresses)`, attackers.filter(Boolean).length);
  recordFigure(SUITE, `${label}: attackers' requests answered in ${PROBE_MS / 1000} s`, answered);
  recordFigure(SUITE, `${label}: honest client quiet p50 / p99, before / after`, `${statsText(quietBefore)} / ${statsText(quietAfter)}`);
  recordFigure(SUITE, `${label}: honest client under the probe p50 / p99`, statsText(during));
  recordFigure(SUITE, `${label}: honest p50 / p99 ratio (probe / quiet)`, `${round1(during.p50 / quiet.p50)} / ${round1(during.p99 / quiet.p99)}`);
  assert.deepEqual(quietFailures, [], `${label}: quiet requests not answered 200`);
  return { quiet, during, answered };
}

test(`one project's key pipelined from ${PROBE_CONNECTIONS} connections of ${PROBE_ADDRESSES} addresses does not take another project's turns ` +
  `(targets, recorded: p99 within ${PROBE_P99_FACTOR}x quiet, p50 within ${PROBE_P50_FACTOR}x)`, async (t) => {
  const attacker = await group.createProject('Probe attacker');
  const honest = await group.createProject('Probe honest');
  secrets.add(attacker.key);
  secrets.add(honest.key);

  const fair = await group.startWeb('web-fair');
  const bounded = await probe(fair, '2 probe, default bounds', attacker, honest);
  await fair.kill9();
  const p99Met = bounded.during.p99 <= PROBE_P99_FACTOR * bounded.quiet.p99;
  const p50Met = bounded.during.p50 <= PROBE_P50_FACTOR * bounded.quiet.p50;
  recordFigure(SUITE, `2 probe, default bounds: p99 target (${PROBE_P99_FACTOR}x quiet = ${round1(PROBE_P99_FACTOR * bounded.quiet.p99)} ms)`,
    p99Met ? 'met' : `MISSED (${round1(bounded.during.p99)} ms)`);
  recordFigure(SUITE, `2 probe, default bounds: p50 target (${PROBE_P50_FACTOR}x quiet = ${round1(PROBE_P50_FACTOR * bounded.quiet.p50)} ms)`,
    p50Met ? 'met' : `MISSED (${round1(bounded.during.p50)} ms)`);

  // The same without the key's, project's and process's bounds, for comparison.
  const open = await group.startWeb('web-unbounded', {
    MAX_REQUESTS_PER_KEY: '0', MAX_REQUESTS_PER_PROJECT: '0', MAX_REQUESTS_IN_PROGRESS: '0', MAX_REQUESTS_PER_PROJECT_SHARED: '0',
  });
  const unbounded = await probe(open, '2 probe, no key or project bounds', attacker, honest);
  await open.kill9();

  recordFigure(SUITE, '2 probe, no key or project bounds: honest requests not answered 200', `${unbounded.during.requests - unbounded.during.ok} (${[...new Set(unbounded.during.failures)].join(', ') || 'none'})`);
  await t.test('with the bounds, every honest request answered 200, and the attacker was served meanwhile', () => {
    assert.equal(bounded.during.ok, bounded.during.requests, `not 200: ${[...new Set(bounded.during.failures)].join(', ')}`);
    assert.ok(bounded.answered > 0, 'the attacker\'s requests were answered too');
  });
});

test('no log holds a key secret, a hash or an Authorization value', () => {
  assertLogsClean(group, secrets);
});
