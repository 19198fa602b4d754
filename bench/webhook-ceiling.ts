// The webhooks part's ceiling alone, for profiling it: an embedded PostgreSQL with
// pg_stat_statements, release, web and worker as the Procfile runs them, a project with a backlog
// of key.created events, then rounds of one endpoint's replayed backlog beside the bare twin
// (bench/webhook-twin.ts), in turns. Each round: deliveries a second, CPU a delivery of the
// worker, PostgreSQL and the receiver (this process), TLS connections the receiver accepted, and
// the statements' time from pg_stat_statements.
//   node bench/webhook-ceiling.ts [events (3000)] [rounds (2)]
//   CEILING_WORKER_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/prof'   node flags for the worker
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbedded } from '../lib/embedded-server.ts';
import { createLogger } from '../lib/log.ts';
import { procfileArgs, procfileEnv } from '../lib/procfile.ts';
import { Children, finished } from './children.ts';
import { call } from './http.ts';
import { certificateFiles } from './setup.ts';
import { freePort } from '../test/support/ports.ts';

const EVENTS = Number(process.argv[2] ?? 3000);
const ROUNDS = Number(process.argv[3] ?? 2);
const TICKS = 100;

const log = createLogger('warn', 'webhook-ceiling', 2);
const scratch = mkdtempSync(path.join(tmpdir(), 'pms-ceiling-'));
const server = await startEmbedded({
  dir: path.join(scratch, 'pg'), port: await freePort(), log, persistent: false, settings: { dir: 'TMPDIR', port: null },
  flags: ['-c', 'shared_preload_libraries=pg_stat_statements', '-c', 'pg_stat_statements.track=all'],
});
const databaseUrl = server.url('postgres');
const db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
const certificate = await certificateFiles(scratch);
const port = await freePort();
const env = {
  DATABASE_URL: databaseUrl, PORT: String(port), HTTP_PORT: String(await freePort()), HOST: '127.0.0.1', ...certificate, LOG_LEVEL: 'warn',
  WEBHOOK_ALLOW_PRIVATE: 'true', NODE_EXTRA_CA_CERTS: certificate.TLS_CERT_FILE,
};
const children = new Children();
await children.output(procfileArgs('release'), env);
children.start(procfileArgs('web'), { ...env, ...procfileEnv('web') });
const workerFlags = (process.env.CEILING_WORKER_FLAGS ?? '').split(' ').filter(Boolean);
const worker = children.start([...workerFlags, ...procfileArgs('worker')], { ...env, ...procfileEnv('worker') });
const base = `https://127.0.0.1:${port}`;
for (const deadline = Date.now() + 30_000; ;) {
  if (await call(`${base}/healthz`, 'GET', '').then((r) => r.status === 200, () => false)) break;
  if (Date.now() > deadline) throw new Error('web did not start');
  await new Promise((r) => setTimeout(r, 100));
}
const made = JSON.parse(await children.output(['bin/workspace.ts', 'project', 'create', '--name', 'ceiling'], env));
const key: string = made.key.key;
const projectId: string = made.project.id;

// The backlog: key.created events, 16 at a time.
let next = 0;
await Promise.all(Array.from({ length: 16 }, async () => {
  while (next < EVENTS) {
    const n = next++;
    const r = await call(`${base}/v1/key`, 'POST', key, { name: `k${n}`, scope: ['key:read'] });
    if (r.status !== 201) throw new Error(`POST /v1/key answered ${r.status}: ${JSON.stringify(r.body)}`);
  }
}));
for (;;) {
  const { rows: [row] } = await db.query('SELECT EXISTS (SELECT 1 FROM audit_outbox) AS waiting');
  if (!row.waiting) break;
  await new Promise((r) => setTimeout(r, 100));
}

const cert = readFileSync(certificate.TLS_CERT_FILE);
const tlsKey = readFileSync(certificate.TLS_KEY_FILE);
interface Receiver { url: string; server: https.Server; ids: Set<string>; requests: number; connections: number; lastAt: number }
async function receiver(): Promise<Receiver> {
  const r: Receiver = { url: '', server: https.createServer({ cert, key: tlsKey }), ids: new Set(), requests: 0, connections: 0, lastAt: 0 };
  r.server.on('secureConnection', () => { r.connections++; });
  r.server.on('request', (req, res) => {
    req.resume();
    req.on('end', () => {
      r.requests++;
      r.ids.add(req.headers['webhook-id'] as string);
      r.lastAt = performance.now();
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => r.server.listen(0, '127.0.0.1', resolve));
  r.url = `https://127.0.0.1:${(r.server.address() as AddressInfo).port}/hook`;
  return r;
}

/** CPU seconds of a process (user + system). */
function cpuOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS;
  } catch {
    return 0;
  }
}
/** Context switches of a process's main thread: each time it slept (a wake-up to come) or was preempted. */
function switchesOf(pid: number): number {
  const status = read(`/proc/${pid}/status`);
  return Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0) + Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
}
const pgPort = new URL(databaseUrl).port;
const pids = () => readdirSync('/proc').filter((p) => /^\d+$/.test(p)).map(Number);
const read = (file: string) => { try { return readFileSync(file, 'utf8'); } catch { return ''; } };
const postmaster = pids().find((pid) => read(`/proc/${pid}/cmdline`).split('\0').join(' ').includes(` -p ${pgPort} `))!;
/** The postmaster and its children (backends, writers). */
const postgresPids = () => pids().filter((pid) => pid === postmaster || read(`/proc/${pid}/status`).includes(`\nPPid:\t${postmaster}\n`));
const pgCpu = () => postgresPids().reduce((sum, pid) => sum + cpuOf(pid), 0);
const pgSwitches = () => postgresPids().reduce((sum, pid) => sum + switchesOf(pid), 0);
const selfCpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };

const f = (n: number, d = 0) => n.toFixed(d);
for (let round = 1; round <= ROUNDS; round++) {
  // The service.
  const alone = await receiver();
  const endpoint = await call(`${base}/v1/webhook`, 'POST', key, { url: alone.url, types: ['key.created'] });
  if (endpoint.status !== 201) throw new Error(`POST /v1/webhook answered ${endpoint.status}`);
  await db.query('SELECT pg_stat_statements_reset()');
  const before = { worker: cpuOf(worker.pid!), pg: pgCpu(), self: selfCpu(), workerSwitches: switchesOf(worker.pid!), pgSwitches: pgSwitches(), load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ') };
  const started = performance.now();
  const monotonicFrom = process.hrtime.bigint() / 1000n;
  const replay = await call(`${base}/v1/webhook/${endpoint.body.response.id}/replay`, 'POST', key, { after: 0 });
  const queued = replay.body.response.queued as number;
  while (alone.ids.size < queued) await new Promise((r) => setTimeout(r, 20));
  const seconds = (alone.lastAt - started) / 1000;
  // CLOCK_MONOTONIC in µs, as a .cpuprofile's timestamps: the round's window in the worker's profile.
  console.log(`round ${round} window ${monotonicFrom}-${process.hrtime.bigint() / 1000n}`);
  const after = { worker: cpuOf(worker.pid!), pg: pgCpu(), self: selfCpu(), workerSwitches: switchesOf(worker.pid!), pgSwitches: pgSwitches() };
  const per = (a: number, b: number) => f(((a - b) * 1000) / queued, 3);
  console.log(`round ${round} service: ${queued} in ${f(seconds, 2)} s = ${f(queued / seconds)}/s; load ${before.load}; CPU ms a delivery: worker ${per(after.worker, before.worker)}, ` +
    `PostgreSQL ${per(after.pg, before.pg)}, receiver ${per(after.self, before.self)}; context switches a delivery: worker ` +
    `${f((after.workerSwitches - before.workerSwitches) / queued, 2)}, PostgreSQL ${f((after.pgSwitches - before.pgSwitches) / queued, 2)}; TLS connections ${alone.connections}, requests ${alone.requests}`);
  const { rows: [a] } = await db.query(`SELECT count(*)::int AS n, percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,
      percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms) AS p99, sum(duration_ms)::float8 AS busy_ms,
      extract(epoch FROM max(created_at) - min(created_at))::float8 * 1000 AS span_ms
    FROM webhook_attempts WHERE endpoint_id = $1`, [endpoint.body.response.id]);
  console.log(`  attempts ${a.n}: their own duration p50 ${a.p50} ms, p99 ${a.p99} ms; the 8 places busy ${f((100 * a.busy_ms) / (8 * a.span_ms))}% of their span`);
  const { rows } = await db.query(`SELECT calls, round(total_exec_time::numeric, 1) AS ms, rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 140) AS query
    FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12`);
  for (const r of rows) console.log(`  ${String(r.calls).padStart(6)} calls ${String(r.ms).padStart(8)} ms ${String(r.rows).padStart(7)} rows  ${r.query}`);
  // The twin, to a receiver of its own.
  const twinReceiver = await receiver();
  const t0 = { self: selfCpu() };
  const twinFlags = (process.env.CEILING_TWIN_FLAGS ?? '').split(' ').filter(Boolean);
  const twin = children.start([...twinFlags, 'bench/webhook-twin.ts', twinReceiver.url, projectId, String(queued)], env, 'pipe');
  let out = '';
  let twinCpu = 0;
  twin.stdout!.on('data', (c: Buffer) => { out += c; });
  let twinSwitches = 0;
  const poll = setInterval(() => { twinCpu = Math.max(twinCpu, cpuOf(twin.pid!)); twinSwitches = Math.max(twinSwitches, switchesOf(twin.pid!)); }, 20);
  await finished(twin);
  clearInterval(poll);
  const { perS: twinPerS, cpuMsEach } = JSON.parse(out) as { perS: number; cpuMsEach: number };
  console.log(`round ${round} twin: ${f(twinPerS)}/s (ratio ${f(queued / seconds / twinPerS, 2)}); CPU ms a delivery: twin ${f(cpuMsEach, 3)} (its loop; ${f((twinCpu * 1000) / queued, 3)} with its start), ` +
    `receiver ${per(selfCpu(), t0.self)}; context switches a delivery <= ${f(twinSwitches / queued, 2)} (its start included); TLS connections ${twinReceiver.connections}`);
  for (const r of [alone, twinReceiver]) {
    r.server.closeAllConnections();
    r.server.close();
  }
}
await db.end();
await children.stopAll();
await server.stop();
rmSync(scratch, { recursive: true, force: true });
