// `npm run bench`: the service as the Procfile runs it (release, web, worker), beside two reference
// servers and each endpoint's twin, driven by autocannon on loopback, in one run. Prints the verdict on
// the targets of bench/targets.ts, writes it as JSON and Markdown, exits non-zero when one is missed.
//   BENCH_DURATION_S (10)  BENCH_WARMUP_S (2)  BENCH_TURNS (3)  BENCH_OUT (bench/results)  DATABASE_URL  BENCH_STREAMS (1000)
//   BENCH_ONLY: a regular expression; only the parts it matches run and are judged (endpoints by name, visibility, streams, webhooks,
//   scale, limited).
//   BENCH_WORKER_NODE_ARGS: node arguments added to the worker's (`--cpu-prof --cpu-prof-dir=/tmp/prof`, to profile it).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { procfileArgs, procfileEnv } from '../lib/procfile.ts';
import { Children, finished } from './children.ts';
import { agent, call } from './http.ts';
import { APP_BODY, certificateFiles, createReferenceTable } from './setup.ts';
import { startEmbedded } from '../lib/embedded-server.ts';
import { createLogger } from '../lib/log.ts';
import { StartupError } from '../lib/startup-error.ts';
import { loadScaleProject } from './scale.ts';
import { streamDelivery, type StreamBenchResult } from './streams.ts';
import { webhookDelivery, type WebhookBenchResult } from './webhooks.ts';
import { FlushProbe, STALL_MS, type FlushStalls } from './disk-flush.ts';
import { ENDPOINT_TARGETS, exitCode, judge, TARGETS, verdictTable, type Check } from './targets.ts';
import { freePort } from '../test/support/ports.ts';
import { databaseMade } from '../test/citus/databases.ts';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 2);
/**
 * An endpoint and its twin are measured in this many turns each, BENCH_DURATION_S split between
 * them, the twin first in every other turn: the machine's drift, and the database's own work after
 * the other side's writes (autovacuum, the worker's drain), fall on both alike.
 */
const TURNS = Number(process.env.BENCH_TURNS ?? 3);
const CONNECTIONS = 32;
/** The limited key's limit: far above what a run sends, so that every request is admitted and the count is all it pays. */
const BENCH_RATE_LIMIT = { limit: 1_000_000, window_s: 60 };
/** Runs of the limited key, each followed by one of the unlimited key (which also comes first). */
const LIMITED_ROUNDS = 3;
const meanRps = (runs: readonly Measured[]) => runs.reduce((sum, r) => sum + r.rps, 0) / runs.length;
const OUT = process.env.BENCH_OUT ?? path.join(import.meta.dirname, 'results');
const EVENT_CHANGES = 500;
const EVENT_RATE_PER_S = 200;
const EVENT_WARMUP_CHANGES = 200;
/** The streams part: this many streams on one web process, changes at this rate for BENCH_DURATION_S. */
const STREAMS = Number(process.env.BENCH_STREAMS ?? 1000);
const STREAM_CHANGES_PER_S = 200;
/**
 * BENCH_STREAMS_CHANGES_VIA: `same` (default) makes the changes through the web process holding the
 * streams, as one process of a deployment serves both; `other` through the bench's first web process.
 */
const CHANGES_VIA_STREAMS_WEB = process.env.BENCH_STREAMS_CHANGES_VIA !== 'other';
/** The webhooks part: endpoints of one project, changes at this rate for BENCH_DURATION_S. */
const WEBHOOK_ENDPOINTS = 10;
const WEBHOOK_CHANGES_PER_S = 200;
const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
const runs = (part: string) => !ONLY || ONLY.test(part);

const log = createLogger('warn', 'bench', 2);
const children = new Children();

async function waitHealthy(url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      if ((await call(`${url}/healthz`, 'GET', '')).status === 200) return;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) throw new Error(`${url} did not become healthy`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Load {
  name: string;
  url: string;
  method?: 'GET' | 'POST' | 'PATCH';
  key?: string;
  body?: object;
  /** Varies the request: its body, so that every write changes something, and its path. */
  vary?: (n: number) => { body: object; path?: string };
}

interface Measured {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  /** The slowest first answer on a connection: its TLS handshake and the run's start, outside the window. */
  firstAnswerMaxMs: number;
  /** The embedded database's disk flushes in the window (bench/disk-flush.ts); none with DATABASE_URL. */
  disk?: FlushStalls;
  non2xx: number;
  errors: number;
  /** The window's answer times, sorted, and its length: what turns pool. */
  latencies: number[];
  windowMs: number;
}

/** Probes the embedded database's disk while the bench runs (not a database given by DATABASE_URL). */
let flushProbe: FlushProbe | undefined;

/** The disk's flush stalls since `from` (performance.now()), for a part's line: a change's event waits for its drain's commit too. */
function diskLine(from: number): string {
  return flushProbe ? diskText(flushProbe.between(from, performance.now())) : '';
}

const diskText = (disk: FlushStalls | undefined) => (disk ? `; disk flushes over ${STALL_MS} ms: ${disk.stalls}, max ${disk.maxMs} ms` : '');

/**
 * One autocannon run of BENCH_WARMUP_S + BENCH_DURATION_S on the same 32 connections; throughput,
 * p50 and p99 are of the answers that arrive in the last BENCH_DURATION_S. Clients that keep their
 * connections open pay a TLS handshake once, not once per measured run: a run of its own after the
 * warm-up would open 32 new connections, and their first answers (each behind 32 handshakes at
 * once) would be 32 of the window's slowest.
 */
function measure(load: Load, seconds = DURATION_S): Promise<Measured> {
  let n = 0;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (load.key) headers.authorization = `Bearer ${load.key}`;
  const started = performance.now();
  const windowStart = started + WARMUP_S * 1000;
  const latencies: number[] = [];
  const firstAnswers = new Map<object, number>();
  let non2xx = 0;
  return new Promise<Measured>((resolve, reject) => {
    const instance = autocannon({
      url: load.url,
      connections: CONNECTIONS,
      duration: WARMUP_S + seconds,
      method: load.method ?? 'GET',
      headers,
      body: load.body ? JSON.stringify(load.body) : undefined,
      requests: load.vary ? [{
        setupRequest: (req: any) => {
          const { body, path: varied } = load.vary!(n++);
          return { ...req, body: JSON.stringify(body), ...(varied ? { path: varied } : {}) };
        },
      }] : undefined,
    } as autocannon.Options, (err, result) => {
      if (err) return reject(err);
      const windowEnd = performance.now();
      resolve({
        name: load.name,
        ...answerTimes(latencies.sort((a, b) => a - b), windowEnd - windowStart),
        firstAnswerMaxMs: round(Math.max(...firstAnswers.values())),
        ...(flushProbe ? { disk: flushProbe.between(windowStart, windowEnd) } : {}),
        non2xx,
        errors: result.errors + result.timeouts,
      });
    });
    instance.on('response', (client: object, status: number, _bytes: number, ms: number) => {
      if (!firstAnswers.has(client)) firstAnswers.set(client, ms);
      if (performance.now() < windowStart) return;
      latencies.push(ms);
      if (status < 200 || status > 299) non2xx++;
    });
  }).then((result) => {
    console.log(`  ${load.name.padEnd(34)} ${result.rps.toFixed(0).padStart(7)} req/s  p50 ${result.p50} ms  p99 ${result.p99} ms  (first answers on new connections: max ${result.firstAnswerMaxMs} ms${diskText(result.disk)})${result.non2xx || result.errors ? `  non2xx ${result.non2xx} errors ${result.errors}` : ''}`);
    return result;
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const round = (ms: number) => Math.round(ms * 10) / 10;
const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

/** Throughput, p50 and p99 of a window's sorted answer times, kept with them for pooling. */
function answerTimes(sorted: number[], windowMs: number): Pick<Measured, 'rps' | 'p50' | 'p99' | 'latencies' | 'windowMs'> {
  return { rps: sorted.length / (windowMs / 1000), p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), latencies: sorted, windowMs };
}

/** Turns of one load as one measurement: their answers pooled, over their windows' total time. */
function pooled(name: string, turns: Measured[]): Measured {
  const disks = turns.flatMap((t) => (t.disk ? [t.disk] : []));
  return {
    name,
    ...answerTimes(turns.flatMap((t) => t.latencies).sort((a, b) => a - b), sum(turns.map((t) => t.windowMs))),
    firstAnswerMaxMs: Math.max(...turns.map((t) => t.firstAnswerMaxMs)),
    ...(disks.length ? { disk: { flushes: sum(disks.map((d) => d.flushes)), stalls: sum(disks.map((d) => d.stalls)), maxMs: Math.max(...disks.map((d) => d.maxMs)) } } : {}),
    non2xx: sum(turns.map((t) => t.non2xx)),
    errors: sum(turns.map((t) => t.errors)),
  };
}

/** An endpoint and its twin in TURNS turns each, the twin first in the first turn, and each side's turns pooled. */
async function inTurns(endpoint: Load, twin: Load): Promise<{ result: Measured; twin: Measured }> {
  const seconds = DURATION_S / TURNS;
  const own: Measured[] = [];
  const twins: Measured[] = [];
  for (let turn = 0; turn < TURNS; turn++) {
    if (turn % 2 === 0) twins.push(await measure(twin, seconds));
    own.push(await measure(endpoint, seconds));
    if (turn % 2 === 1) twins.push(await measure(twin, seconds));
  }
  const result = { result: pooled(endpoint.name, own), twin: pooled(twin.name, twins) };
  for (const side of [result.twin, result.result]) {
    console.log(`  ${`${side.name}, ${TURNS} turns`.padEnd(34)} ${side.rps.toFixed(0).padStart(7)} req/s  p50 ${side.p50} ms  p99 ${side.p99} ms`);
  }
  return result;
}

/**
 * From a change's response to its event answering GET /v1/event/<id>, at a steady rate. A warm-up
 * stream at the same rate goes first, unmeasured: without it the first changes measured the
 * opening of database connections (SCRAM) and the first compilation of the event handlers.
 */
async function eventVisibility(base: string, key: string, db: pg.Pool): Promise<{ p50: number; p99: number; count: number }> {
  await visibilityStream(base, key, db, EVENT_WARMUP_CHANGES);
  const latencies = await visibilityStream(base, key, db, EVENT_CHANGES);
  latencies.sort((a, b) => a - b);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), count: latencies.length };
}

async function visibilityStream(base: string, key: string, db: pg.Pool, changes: number): Promise<number[]> {
  const latencies: number[] = [];
  const started = Date.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < changes; i++) {
    const due = started + (i * 1000) / EVENT_RATE_PER_S;
    await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
    pending.push((async () => {
      const created = await call(`${base}/v1/key`, 'POST', key, { name: `visibility ${i}` });
      const answeredAt = performance.now();
      // The event id the change fixed, in its outbox row or, once drained, in the event; one snapshot sees one of them.
      const { rows } = await db.query('SELECT id FROM audit_outbox WHERE related_id = $1 UNION ALL SELECT id FROM events WHERE related_id = $1', [created.body.response.id]);
      for (;;) {
        if ((await call(`${base}/v1/event/${rows[0].id}`, 'GET', key)).status === 200) break;
      }
      latencies.push(performance.now() - answeredAt);
    })());
  }
  await Promise.all(pending);
  return latencies;
}

function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

/**
 * The streams part: a web process of its own (as the Procfile runs it, its connection bounds raised
 * for STREAMS streams from one address), STREAMS streams on it following one project from its
 * current last sequence, and changes (POST /v1/key) through it at STREAM_CHANGES_PER_S: a warm-up
 * second, then BENCH_DURATION_S measured. Stopped again afterwards, so its peak RSS is the
 * streams' own.
 */
async function streamsPart(env: Record<string, string>, db: pg.Pool, projectId: string, key: string, otherBase: string): Promise<StreamBenchResult> {
  const [port, httpPort] = [await freePort(), await freePort()];
  // BENCH_STREAMS_NODE_FLAGS: extra node flags for this web process (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof).
  const flags = (process.env.BENCH_STREAMS_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const web = children.start([...flags, ...procfileArgs('web')], {
    ...env, ...procfileEnv('web'), PORT: String(port), HTTP_PORT: String(httpPort),
    MAX_CONNECTIONS_PER_ADDRESS: String(STREAMS + 100), MAX_EVENT_STREAMS: String(STREAMS + 100), MAX_EVENT_STREAMS_PER_PROJECT: String(STREAMS + 100),
  });
  const base = `https://127.0.0.1:${port}`;
  try {
    await waitHealthy(base);
    // The project's events of earlier parts written: every stream then starts from one known sequence.
    for (;;) {
      const { rows } = await db.query('SELECT EXISTS (SELECT 1 FROM audit_outbox) AS waiting');
      if (!rows[0].waiting) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const { rows } = await db.query('SELECT coalesce(max(total), 0)::int AS last FROM project_event_counts WHERE project_id = $1', [projectId]);
    const changes = Math.round(STREAM_CHANGES_PER_S * DURATION_S);
    console.log(`# event streams: ${STREAMS} streams on one web process, ${changes} changes at ${STREAM_CHANGES_PER_S}/s`);
    return await streamDelivery({
      base, key, pid: web.pid!, streams: STREAMS, ratePerS: STREAM_CHANGES_PER_S,
      warmupChanges: STREAM_CHANGES_PER_S, changes, after: rows[0].last,
      change: async (n) => {
        const created = await call(`${CHANGES_VIA_STREAMS_WEB ? base : otherBase}/v1/key`, 'POST', key, { name: `streamed ${n}`, scope: ['key:read'] });
        if (created.status !== 201) throw new Error(`POST /v1/key answered ${created.status}: ${JSON.stringify(created.body)}`);
        return created.body.response.id as string;
      },
    });
  } finally {
    web.kill('SIGTERM');
    await finished(web);
  }
}

async function main(): Promise<number> {
  const scratch = mkdtempSync(path.join(tmpdir(), 'pms-bench-'));
  let adminUrl = process.env.DATABASE_URL;
  let stopPostgres = async () => {};
  if (!adminUrl) {
    const server = await startEmbedded({
      dir: path.join(scratch, 'pg'), port: await freePort(), log, persistent: false, settings: { dir: 'TMPDIR', port: null },
    });
    adminUrl = server.url('postgres');
    stopPostgres = server.stop;
    flushProbe = new FlushProbe(scratch);
  }
  const database = `pms_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  // At a Citus coordinator the database is made on its workers too, and joined: release distributes.
  await databaseMade(admin, adminUrl, database);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const databaseUrl = url.toString();
  const db = new pg.Pool({ connectionString: databaseUrl, max: 4 });

  try {
    const certificate = await certificateFiles(scratch);
    const [port, httpPort, r1Port, r2Port, twinPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
    const env = {
      DATABASE_URL: databaseUrl, PORT: String(port), HTTP_PORT: String(httpPort), HOST: '127.0.0.1',
      ...certificate, LOG_LEVEL: 'info',
      // The webhooks part's receivers listen on loopback with the bench's certificate.
      WEBHOOK_ALLOW_PRIVATE: 'true', NODE_EXTRA_CA_CERTS: certificate.TLS_CERT_FILE,
    };

    console.log('# release, web, worker (as the Procfile runs them), R1, R2');
    if ((await finished(children.start(procfileArgs('release'), env))) !== 0) throw new Error('release failed');
    await createReferenceTable(db);
    const web = children.start(procfileArgs('web'), { ...env, ...procfileEnv('web') });
    const workerArgs = [...(process.env.BENCH_WORKER_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? []), ...procfileArgs('worker')];
    const worker = children.start(workerArgs, { ...env, ...procfileEnv('worker') });
    children.start(['bench/reference.ts', 'r1', String(r1Port)], env);
    children.start(['bench/reference.ts', 'r2', String(r2Port), databaseUrl], env);
    const base = `https://127.0.0.1:${port}`;
    await waitHealthy(base);

    const made = JSON.parse(await children.output(['bin/workspace.ts', 'project', 'create', '--name', 'bench'], env));
    await children.output(['bin/workspace.ts', 'plan', 'set', made.project.id, '--app-limit', '100000000'], env);
    const key: string = made.key.key;
    const app = await call(`${base}/v1/app/create`, 'POST', key, APP_BODY);
    const appId: string = app.body.response.id;
    // PATCH goes round as many apps as there are connections, as clients editing their apps do:
    // 32 connections on one row would measure PostgreSQL's row lock queue, not the service.
    const patchedApps: string[] = [appId];
    while (patchedApps.length < CONNECTIONS) patchedApps.push((await call(`${base}/v1/app/create`, 'POST', key, APP_BODY)).body.response.id);
    for (let i = 0; i < 30; i++) await call(`${base}/v1/key`, 'POST', key, { name: `seed ${i}`, scope: ['key:read'] });
    // Each endpoint's bare twin (bench/twins.ts), for the bench's key.
    children.start(['bench/twins.ts', String(twinPort), databaseUrl, key], env);
    const twinBase = `https://127.0.0.1:${twinPort}/twin`;
    for (const deadline = Date.now() + 30_000; ;) {
      if (await call(`${twinBase}/v1/key/current`, 'GET', '').then((r) => r.status === 200, () => false)) break;
      if (Date.now() > deadline) throw new Error('the twins did not start');
      await new Promise((r) => setTimeout(r, 100));
    }

    let visibility = { p50: NaN, p99: NaN, count: 0 };
    if (runs('visibility')) {
      console.log(`# event visibility: ${EVENT_CHANGES} changes at ${EVENT_RATE_PER_S}/s`);
      const from = performance.now();
      visibility = await eventVisibility(base, key, db);
      console.log(`  p50 ${visibility.p50.toFixed(1)} ms  p99 ${visibility.p99.toFixed(1)} ms${diskLine(from)}`);
    }

    let streams: StreamBenchResult | undefined;
    if (runs('streams')) {
      const from = performance.now();
      streams = await streamsPart(env, db, made.project.id, key, base);
      const s = streams;
      console.log(`  p50 ${s.p50.toFixed(1)} ms  p99 ${s.p99.toFixed(1)} ms  max ${s.max.toFixed(0)} ms over ${s.pairs} (change, stream) pairs; ` +
        `RSS peak ${s.rssPeakMb.toFixed(0)} MB (VmHWM ${s.rssHwmMb.toFixed(0)}); ${s.streams} streams opened in ${(s.openMs / 1000).toFixed(1)} s; ` +
        `CPU in cores: web ${s.webCpu.toFixed(2)}, load generator ${s.benchCpu.toFixed(2)}, whole machine ${s.machineCpu.toFixed(2)} ` +
        `(the bench's own processes ${s.benchTreeCpu.toFixed(2)}, others ${Math.max(0, s.machineCpu - s.benchTreeCpu).toFixed(2)}); ` +
        `RSS with the streams open ${s.rssOpenMb.toFixed(0)} MB; ${s.eventsPerRead.toFixed(1)} events per read` +
        `${s.problems.length ? `; ${s.problems.length} problem(s)` : ''}${diskLine(from)}`);
      console.log(`  to the first stream p50 ${s.firstP50.toFixed(1)} ms, p99 ${s.firstP99.toFixed(1)} ms; first to last stream p50 ${s.spreadP50.toFixed(1)} ms, p99 ${s.spreadP99.toFixed(1)} ms`);
      for (const problem of s.problems.slice(0, 10)) console.log(`  ${problem}`);
    }

    let webhooks: WebhookBenchResult | undefined;
    if (runs('webhooks')) {
      const changes = Math.round(WEBHOOK_CHANGES_PER_S * DURATION_S);
      console.log(`# webhooks: ${WEBHOOK_ENDPOINTS} endpoints, ${changes} changes at ${WEBHOOK_CHANGES_PER_S}/s; then one endpoint's ceiling beside a bare twin`);
      const hooked = JSON.parse(await children.output(['bin/workspace.ts', 'project', 'create', '--name', 'bench-webhooks'], env));
      const from = performance.now();
      webhooks = await webhookDelivery({
        base, key: hooked.key.key, projectId: hooked.project.id, db, certFile: certificate.TLS_CERT_FILE, keyFile: certificate.TLS_KEY_FILE,
        endpoints: WEBHOOK_ENDPOINTS, ratePerS: WEBHOOK_CHANGES_PER_S, changes, workerPid: worker.pid!,
        twin: (args) => children.output(['bench/webhook-twin.ts', ...args], env),
      });
      const w = webhooks;
      console.log(`  delivered after the change's response p50 ${w.p50.toFixed(1)} ms, p99 ${w.p99.toFixed(1)} ms, max ${w.max.toFixed(0)} ms over ${w.pairs} (change, endpoint) pairs` +
        `${w.lost ? `, ${w.lost} never arrived` : ''}; worker peak RSS ${w.workerRssPeakMb.toFixed(0)} MB${diskLine(from)}`);
      console.log(`  one endpoint's ceiling: ${w.ceilingPerS.toFixed(0)} deliveries/s over a backlog of ${w.ceilingEvents}; its bare twin ${w.twinPerS.toFixed(0)}/s`);
    }

    const r1: Load = { name: 'R1 bare restify', url: `https://127.0.0.1:${r1Port}/ref` };
    const r2: Load = { name: 'R2 restify + pg SELECT', url: `https://127.0.0.1:${r2Port}/ref` };
    type Endpoint = Load & { kind: keyof typeof ENDPOINT_TARGETS };
    /** The endpoint's twin: the same request, to the same path under the twins' server. */
    const twinOf = (endpoint: Endpoint): Load => ({
      ...endpoint,
      name: `  its twin`,
      url: endpoint.url.replace(base, twinBase),
      ...(endpoint.vary ? { vary: (n: number) => { const v = endpoint.vary!(n); return { ...v, ...(v.path ? { path: `/twin${v.path}` } : {}) }; } } : {}),
    });
    const allEndpoints = ([
      { kind: 'current', name: 'GET /v1/key/current', url: `${base}/v1/key/current`, key },
      { kind: 'read', name: 'GET /v1/key', url: `${base}/v1/key`, key },
      { kind: 'read', name: 'GET /v1/app/list', url: `${base}/v1/app/list`, key },
      { kind: 'read', name: 'GET /v1/app/detail/<id>', url: `${base}/v1/app/detail/${appId}`, key },
      { kind: 'read', name: 'GET /v1/event', url: `${base}/v1/event`, key },
      { kind: 'write', name: 'POST /v1/key', url: `${base}/v1/key`, key, method: 'POST', body: { name: 'bench', scope: ['key:read'] } },
      { kind: 'write', name: 'POST /v1/app/create', url: `${base}/v1/app/create`, key, method: 'POST', body: APP_BODY },
      { kind: 'write', name: 'PATCH /v1/app/detail/<id>', url: `${base}/v1/app/detail/${appId}`, key, method: 'PATCH', vary: (n) => ({ body: { name: `Bench app ${n}` }, path: `/v1/app/detail/${patchedApps[n % patchedApps.length]}` }) },
    ] satisfies Endpoint[] as Endpoint[]);
    const endpoints = allEndpoints.filter((endpoint) => runs(endpoint.name));

    console.log(`# throughput: ${CONNECTIONS} connections, ${WARMUP_S} s warm-up, ${DURATION_S} s each (an endpoint and its twin in ${TURNS} turns), references alternated`);
    const r1Runs: Measured[] = [await measure(r1)];
    const rows: { kind: Endpoint['kind']; result: Measured; r2: Measured; twin: Measured }[] = [];
    for (const [i, endpoint] of endpoints.entries()) {
      const r2Run = await measure(r2);
      const { result, twin } = await inTurns(endpoint, twinOf(endpoint));
      rows.push({ kind: endpoint.kind, result, r2: r2Run, twin });
      if (i === Math.floor(endpoints.length / 2)) r1Runs.push(await measure(r1));
    }
    r1Runs.push(await measure(r1));
    // Event visibility's and stream delivery's reference, measured here when its endpoint was not.
    let keyWriteTwin = rows.find(({ result }) => result.name === 'POST /v1/key')?.twin;
    if (!keyWriteTwin && (visibility.count > 0 || streams)) {
      console.log("# POST /v1/key's twin: the event parts' reference");
      keyWriteTwin = await measure({ ...twinOf(allEndpoints.find((endpoint) => endpoint.name === 'POST /v1/key')!), name: "  POST /v1/key's twin" });
    }
    const r1Rps = r1Runs.reduce((sum, r) => sum + r.rps, 0) / r1Runs.length;

    // A limited key's key/current in turns with the same request of an unlimited key, which opens
    // and closes the part: the machine's drift weighs on both alike.
    let limited: { limited: Measured[]; unlimited: Measured[] } | undefined;
    if (runs('limited')) {
      console.log(`# GET /v1/key/current with a key limited to ${BENCH_RATE_LIMIT.limit} per ${BENCH_RATE_LIMIT.window_s} s, in turns with the unlimited key`);
      const made = await call(`${base}/v1/key`, 'POST', key, { name: 'bench limited', rate_limit: BENCH_RATE_LIMIT });
      const current = (name: string, with_: string): Load => ({ name, url: `${base}/v1/key/current`, key: with_ });
      limited = { limited: [], unlimited: [await measure(current('  unlimited key', key))] };
      for (let round = 0; round < LIMITED_ROUNDS; round++) {
        limited.limited.push(await measure(current('GET /v1/key/current (limited key)', made.body.response.key)));
        limited.unlimited.push(await measure(current('  unlimited key', key)));
      }
    }
    const webRssMb = peakRssMb(web.pid!);

    const scale: { name: string; fresh: Measured; big: Measured }[] = [];
    if (runs('scale')) {
      console.log('# scale: 1,000,000 events, 10,000 keys, 10,000 apps, 1,000,000 runs in one project');
      const big = JSON.parse(await children.output(['bin/workspace.ts', 'project', 'create', '--name', 'bench-scale'], env));
      const loadStarted = Date.now();
      const bigAppId = await loadScaleProject(db, big.project.id, big.consumer.id);
      console.log(`  loaded in ${((Date.now() - loadStarted) / 1000).toFixed(0)} s`);
      const scaleReads = [
        { name: 'GET /v1/key/current', path: '/v1/key/current' },
        { name: 'GET /v1/key', path: '/v1/key' },
        { name: 'GET /v1/app/list', path: '/v1/app/list' },
        { name: 'GET /v1/app/detail/<id>', fresh: `/v1/app/detail/${appId}`, path: `/v1/app/detail/${bigAppId}` },
        { name: 'GET /v1/event', path: '/v1/event' },
      ];
      for (const read of scaleReads) {
        const fresh = await measure({ name: `${read.name} (fresh)`, url: `${base}${read.fresh ?? read.path}`, key });
        const bigRun = await measure({ name: `${read.name} (1M rows)`, url: `${base}${read.path}`, key: big.key.key });
        scale.push({ name: read.name, fresh, big: bigRun });
      }
    }

    const checks: Check[] = [];
    const problems: string[] = [];
    const clean = (run: Measured, what: string) => { if (run.non2xx || run.errors) problems.push(`${what}: ${run.non2xx} non-2xx, ${run.errors} errors`); };
    const table = rows.map(({ kind, result, r2: r2Run, twin }) => {
      const vsR2 = result.rps / r2Run.rps;
      const vsR1 = result.rps / r1Rps;
      const vsTwin = result.rps / twin.rps;
      const { throughput, p99 } = ENDPOINT_TARGETS[kind];
      const beside = { twin, R2: r2Run };
      checks.push(
        { row: `${result.name} req/s`, target: throughput, figure: result.rps, reference: beside[TARGETS[throughput].against].rps },
        { row: `${result.name} p99`, target: p99, figure: result.p99, reference: beside[TARGETS[p99].against].p99 },
      );
      clean(result, result.name);
      clean(twin, `${result.name} twin`);
      return {
        endpoint: result.name, rps: Math.round(result.rps), p50_ms: result.p50, p99_ms: result.p99, first_answer_max_ms: result.firstAnswerMaxMs, disk_flush_stalls: result.disk?.stalls, disk_flush_max_ms: result.disk?.maxMs, vs_twin: +vsTwin.toFixed(2), twin_rps: Math.round(twin.rps),
        twin_p99_ms: twin.p99, p99_vs_twin: +(result.p99 / twin.p99).toFixed(2), vs_r2: +vsR2.toFixed(2), vs_r1: +vsR1.toFixed(2), r2_rps: Math.round(r2Run.rps),
      };
    });
    if (keyWriteTwin && !rows.some(({ twin }) => twin === keyWriteTwin)) clean(keyWriteTwin, 'POST /v1/key twin');
    if (visibility.count > 0) checks.push({ row: 'event visibility p99', target: 'eventVisibilityP99', figure: visibility.p99, reference: keyWriteTwin?.p99 });
    if (streams) {
      checks.push(
        { row: 'stream delivery p99', target: 'streamDeliveryP99', figure: streams.p99, reference: keyWriteTwin?.p99 },
        { row: `web RSS with ${streams.streams} streams`, target: 'streamsWebRss', figure: streams.rssPeakMb },
      );
      if (streams.problems.length) problems.push(`streams: ${streams.problems.length} problem(s): ${streams.problems.slice(0, 3).join('; ')}`);
    }
    if (webhooks) {
      checks.push(
        { row: `webhook delivery p99 (${WEBHOOK_ENDPOINTS} endpoints)`, target: 'webhookDeliveryP99', figure: webhooks.p99 },
        { row: 'worker peak RSS', target: 'workerPeakRss', figure: webhooks.workerRssPeakMb },
        { row: "one webhook endpoint's ceiling", target: 'webhookCeiling', figure: webhooks.ceilingPerS, reference: webhooks.twinPerS },
      );
      if (webhooks.lost) problems.push(`webhooks: ${webhooks.lost} (change, endpoint) pairs never delivered`);
    }
    for (const s of scale) checks.push({ row: `${s.name} at 1M rows p99`, target: 'scaleP99', figure: s.big.p99, reference: s.fresh.p99 });
    if (limited) {
      checks.push({ row: 'GET /v1/key/current, limited key, req/s', target: 'limitedKeyThroughput', figure: meanRps(limited.limited), reference: meanRps(limited.unlimited) });
      for (const run of [...limited.limited, ...limited.unlimited]) clean(run, `limited key part, ${run.name.trim()}`);
    }
    checks.push({ row: 'web peak RSS', target: 'webPeakRss', figure: webRssMb });
    const verdict = judge(checks);
    const missed = verdict.filter((j) => !j.met);

    const results = {
      when: new Date().toISOString(),
      settings: { connections: CONNECTIONS, warmup_s: WARMUP_S, duration_s: DURATION_S },
      references: { r1_rps: Math.round(r1Rps), r1_runs: r1Runs.map((r) => Math.round(r.rps)), r2_runs: rows.map((r) => Math.round(r.r2.rps)) },
      endpoints: table,
      event_streams: streams && {
        streams: streams.streams, changes: streams.changes, rate_per_s: STREAM_CHANGES_PER_S, pairs: streams.pairs,
        p50_ms: +streams.p50.toFixed(1), p99_ms: +streams.p99.toFixed(1), max_ms: +streams.max.toFixed(1), before_response: streams.beforeResponse,
        web_rss_peak_mb: +streams.rssPeakMb.toFixed(0), web_vmhwm_mb: +streams.rssHwmMb.toFixed(0), open_s: +(streams.openMs / 1000).toFixed(1),
        web_cpu_cores: +streams.webCpu.toFixed(2), load_generator_cpu_cores: +streams.benchCpu.toFixed(2), machine_cpu_cores: +streams.machineCpu.toFixed(2),
        bench_processes_cpu_cores: +streams.benchTreeCpu.toFixed(2),
        web_rss_streams_open_mb: +streams.rssOpenMb.toFixed(0), events_per_read: +streams.eventsPerRead.toFixed(1),
        first_stream_p50_ms: +streams.firstP50.toFixed(1), first_stream_p99_ms: +streams.firstP99.toFixed(1),
        fan_out_spread_p50_ms: +streams.spreadP50.toFixed(1), fan_out_spread_p99_ms: +streams.spreadP99.toFixed(1),
        problems: streams.problems,
      },
      webhooks: webhooks && {
        endpoints: webhooks.endpoints, changes: webhooks.changes, rate_per_s: WEBHOOK_CHANGES_PER_S, pairs: webhooks.pairs, lost: webhooks.lost,
        p50_ms: +webhooks.p50.toFixed(1), p99_ms: +webhooks.p99.toFixed(1), max_ms: +webhooks.max.toFixed(1), worker_rss_peak_mb: +webhooks.workerRssPeakMb.toFixed(0),
        ceiling_events: webhooks.ceilingEvents, ceiling_per_s: +webhooks.ceilingPerS.toFixed(0), twin_per_s: +webhooks.twinPerS.toFixed(0),
      },
      event_visibility: { changes: visibility.count, rate_per_s: EVENT_RATE_PER_S, p50_ms: +visibility.p50.toFixed(1), p99_ms: +visibility.p99.toFixed(1) },
      scale: scale.map((s) => ({ endpoint: s.name, fresh_p99_ms: s.fresh.p99, scaled_p99_ms: s.big.p99, ratio: +(s.big.p99 / s.fresh.p99).toFixed(2) })),
      limited_key: limited && {
        rate_limit: BENCH_RATE_LIMIT,
        limited_rps: limited.limited.map((r) => Math.round(r.rps)), limited_p99_ms: limited.limited.map((r) => r.p99),
        unlimited_rps: limited.unlimited.map((r) => Math.round(r.rps)), unlimited_p99_ms: limited.unlimited.map((r) => r.p99),
      },
      web_peak_rss_mb: +webRssMb.toFixed(0),
      verdict: verdict.map((j) => ({ row: j.row, target: j.target, figure: +j.figure.toFixed(1), against: j.reference === undefined ? undefined : +j.reference.toFixed(1), ratio: j.ratio === undefined ? undefined : +j.ratio.toFixed(2), met: j.met })),
      problems,
    };
    const md = [
      `# Benchmark (${results.when}; ${CONNECTIONS} connections, ${DURATION_S} s per run)`,
      '',
      `R1 (bare restify) ${results.references.r1_rps} req/s; R2 (restify + pg SELECT) measured beside each endpoint.`,
      '',
      '| endpoint | req/s | p50 ms | p99 ms | x twin | twin req/s | twin p99 ms | x R2 | x R1 | R2 req/s |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...table.map((r) => `| ${r.endpoint} | ${r.rps} | ${r.p50_ms} | ${r.p99_ms} | ${r.vs_twin} | ${r.twin_rps} | ${r.twin_p99_ms} | ${r.vs_r2} | ${r.vs_r1} | ${r.r2_rps} |`),
      '',
      ...(flushProbe ? [
        `The database disk's flushes over ${STALL_MS} ms in each endpoint's window (bench/disk-flush.ts; a commit waits for its flush): ` +
        `${rows.map(({ result }) => `${result.name} ${result.disk!.stalls} (max ${result.disk!.maxMs} ms)`).join(', ')}.`,
        '',
      ] : []),
      `Event visible after the change's response: p50 ${results.event_visibility.p50_ms} ms, p99 ${results.event_visibility.p99_ms} ms (${visibility.count} changes at ${EVENT_RATE_PER_S}/s).`,
      '',
      ...(streams ? [
        `Event streams: ${streams.streams} streams on one web process, ${streams.changes} changes at ${STREAM_CHANGES_PER_S}/s: ` +
        `delivered after the change's response p50 ${results.event_streams!.p50_ms} ms, p99 ${results.event_streams!.p99_ms} ms, ` +
        `max ${results.event_streams!.max_ms} ms over ${streams.pairs} (change, stream) pairs; ` +
        `that process's RSS peak ${results.event_streams!.web_rss_peak_mb} MB; ` +
        `${streams.problems.length ? `${streams.problems.length} stream problem(s)` : 'every stream got every event once, in sequence order'}.`,
        '',
      ] : []),
      ...(webhooks ? [
        `Webhooks: ${webhooks.endpoints} endpoints, ${webhooks.changes} changes at ${WEBHOOK_CHANGES_PER_S}/s: delivered after the change's response ` +
        `p50 ${results.webhooks!.p50_ms} ms, p99 ${results.webhooks!.p99_ms} ms, max ${results.webhooks!.max_ms} ms over ${webhooks.pairs} pairs; ` +
        `worker peak RSS ${results.webhooks!.worker_rss_peak_mb} MB. One endpoint's ceiling ${results.webhooks!.ceiling_per_s} deliveries/s ` +
        `over a backlog of ${webhooks.ceilingEvents}, its bare twin ${results.webhooks!.twin_per_s}/s.`,
        '',
      ] : []),
      '| read at scale | fresh p99 ms | 1M-row p99 ms | ratio |',
      '|---|---:|---:|---:|',
      ...results.scale.map((s) => `| ${s.endpoint} | ${s.fresh_p99_ms} | ${s.scaled_p99_ms} | ${s.ratio} |`),
      '',
      ...(limited ? [
        `GET /v1/key/current with a limited key (${BENCH_RATE_LIMIT.limit} per ${BENCH_RATE_LIMIT.window_s} s, never reached), in turns with the unlimited key: ` +
        `limited ${results.limited_key!.limited_rps.join(', ')} req/s (p99 ${results.limited_key!.limited_p99_ms.join(', ')} ms); ` +
        `unlimited ${results.limited_key!.unlimited_rps.join(', ')} req/s (p99 ${results.limited_key!.unlimited_p99_ms.join(', ')} ms).`,
        '',
      ] : []),
      `Web process peak RSS: ${results.web_peak_rss_mb} MB.`,
      '',
      '## Verdict',
      '',
      verdictTable(verdict),
      '',
      ...(problems.length ? [`Measurements gone wrong:\n${problems.map((p) => `- ${p}`).join('\n')}`, ''] : []),
      missed.length ? `Targets missed: ${missed.map((j) => j.row).join(', ')}.` : 'All targets met.',
      '',
    ].join('\n');
    writeFileSync(`${OUT}.json`, `${JSON.stringify(results, null, 2)}\n`);
    writeFileSync(`${OUT}.md`, md);
    console.log(`\n${md}`);
    console.log(`# written: ${OUT}.json, ${OUT}.md`);
    return exitCode(verdict, problems);
  } finally {
    await flushProbe?.stop();
    agent.destroy();
    await children.stopAll();
    await db.end();
    await stopPostgres();
  }
}

process.exit(await main().catch((err: unknown) => {
  // The embedded PostgreSQL could not start: one line, no stack.
  if (!(err instanceof StartupError)) throw err;
  process.stderr.write(`bench: ${err.message}\n`);
  return 1;
}));
