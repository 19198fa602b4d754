// `npm run -s bench:side-by-side -- <other checkout> [request ...]`: this checkout's service and
// another's (the commit before a change, say: `git worktree add ../before HEAD~1`, with its own
// `npm ci` or a node_modules link), each started as bench:serve starts it, and R2 beside them,
// measured in turns: SIDE_ROUNDS (6) rounds of SIDE_S (5) seconds each of R2, this, the other (the
// other, then this, every second round), for each request (default /v1/key/current): a GET path,
// or one of the bench's writes, `POST /v1/key`, `POST /v1/app/create` or `PATCH /v1/app/detail`
// (round 32 apps, as the bench does; a GET path under /v1/app has them too, and `{app}` in it is
// one of them in turn). On a machine whose speed drifts from one minute to the next, only figures
// taken in turns like this compare two builds; the full bench's ratios do not.
// Each project first gets SIDE_KEYS (110) keys, and so as many events, for pages of a realistic
// size. Beside each throughput, the CPU each request cost (bench/cpu.ts): by the web process's
// threads, by the worker process (which drains the writes' events), by PostgreSQL, and by the
// whole machine (the load generator included); and each round's this / other, whose spread says
// how large a difference the run can tell from noise. SIDE_THIS_ENV and SIDE_OTHER_ENV
// (`NAME=value ...`) set variables for one side's processes: with `.` as the other checkout, one
// build under two settings (`SIDE_THIS_ENV="METRICS_PORT=0 WORKER_METRICS_PORT=0"`).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import pg from 'pg';
import { freePort } from '../test/support/ports.ts';
import { finished } from './children.ts';
import { CPU_COUNTED, cpuBetween, machineCpu, postgresCpu, threadsCpu } from './cpu.ts';
import { agent, call } from './http.ts';
import { APP_BODY, certificateFiles, createReferenceTable } from './setup.ts';

const CONNECTIONS = 32;
const ROUNDS = Number(process.env.SIDE_ROUNDS ?? 6);
const SECONDS = Number(process.env.SIDE_S ?? 5);
const KEYS = Number(process.env.SIDE_KEYS ?? 110);
const [other, ...givenPaths] = process.argv.slice(2);
if (!other) {
  process.stderr.write('usage: npm run -s bench:side-by-side -- <other checkout> [GET path | "POST /v1/key" | "POST /v1/app/create" | "PATCH /v1/app/detail" ...]\n');
  process.exit(2);
}

/** One of the measured requests: its method and path, and what it sends (n counts a server's requests). */
interface Load {
  method: 'GET' | 'POST' | 'PATCH';
  request: (served: Served, n: number) => { path: string; body?: object };
}

const WRITES: Readonly<Record<string, Load>> = {
  'POST /v1/key': { method: 'POST', request: () => ({ path: '/v1/key', body: { name: 'side', scope: ['key:read'] } }) },
  'POST /v1/app/create': { method: 'POST', request: () => ({ path: '/v1/app/create', body: APP_BODY }) },
  'PATCH /v1/app/detail': {
    method: 'PATCH',
    request: (served, n) => ({ path: `/v1/app/detail/${served.apps[n % served.apps.length]}`, body: { name: `Side app ${n}` } }),
  },
};

function loadOf(given: string): Load {
  // `{app}` in a GET path: one of the apps the writes go round, in turn (/v1/app/detail/{app}).
  if (given.startsWith('/')) return { method: 'GET', request: (served, n) => ({ path: given.replace('{app}', served.apps[n % served.apps.length] ?? '') }) };
  const write = WRITES[given];
  if (!write) {
    process.stderr.write(`bench:side-by-side: unknown request ${JSON.stringify(given)}; a GET path or one of ${Object.keys(WRITES).join(', ')}\n`);
    process.exit(2);
  }
  return write;
}
const loads = (givenPaths.length ? givenPaths : ['/v1/key/current']).map((given) => [given, loadOf(given)] as const);

interface Served { child: ChildProcess; base: string; key: string; database: string; webPid?: number; workerPid?: number; apps: string[] }

/** `NAME=value NAME=value`: variables for one side's processes. */
function settings(given = ''): Record<string, string> {
  return Object.fromEntries(given.split(' ').filter(Boolean).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
}

/** bench:serve in `dir`, once it has printed its BASE, KEY and DATABASE. */
function serve(dir: string, env: Record<string, string>): Promise<Served> {
  const child = spawn(process.execPath, ['bench/serve.ts'], { cwd: dir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const values: Record<string, string> = {};
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bench:serve in ${dir} exited ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const [name, value] = [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)];
      values[name] = value;
      // The lines come in one write: WEB_PID, where a build prints it, is read within this turn.
      if (name === 'DATABASE') {
        setImmediate(() => resolve({
          child, base: values.BASE!, key: values.KEY!, database: value, apps: [],
          ...(values.WEB_PID ? { webPid: Number(values.WEB_PID) } : {}),
          ...(values.WORKER_PID ? { workerPid: Number(values.WORKER_PID) } : {}),
        }));
      }
    });
  });
}

/** What one server's requests cost, summed over its turns: requests, and CPU (us) by where it ran. */
class Cost {
  requests = 0;
  readonly cpu = new Map<string, number>();
  private readonly pid: number | undefined;
  private readonly workerPid: number | undefined;

  constructor(pid: number | undefined, workerPid?: number) {
    this.pid = pid;
    this.workerPid = workerPid;
  }

  /** Runs `load` (resolving to its request count) and adds what it cost. */
  async measure(load: () => Promise<number>): Promise<void> {
    const before = { threads: threadsCpu(this.pid), worker: threadsCpu(this.workerPid), postgres: postgresCpu(), machine: machineCpu() };
    this.requests += await load();
    for (const [name, us] of cpuBetween(before.threads, threadsCpu(this.pid))) this.add(name, us);
    for (const [, us] of cpuBetween(before.worker, threadsCpu(this.workerPid))) this.add('worker process', us);
    for (const [, us] of cpuBetween(before.postgres, postgresCpu())) this.add('PostgreSQL', us);
    this.add('machine', machineCpu() - before.machine);
  }

  private add(name: string, us: number): void {
    this.cpu.set(name, (this.cpu.get(name) ?? 0) + us);
  }

  /** CPU us per request, threads that used at least 1 us per request. */
  perRequest(): string {
    return [...this.cpu].map(([name, us]) => [name, Math.round(us / this.requests)] as const)
      .filter(([, us]) => us >= 1).map(([name, us]) => `${name} ${us}`).join(', ');
  }
}

function requests(base: string, load: Load, served?: Served): Promise<number> {
  let n = 0;
  const first = load.request(served!, 0);
  return new Promise((resolve, reject) => {
    autocannon({
      url: `${base}${first.path}`, connections: CONNECTIONS, duration: SECONDS, method: load.method,
      headers: { ...(served ? { authorization: `Bearer ${served.key}` } : {}), ...(first.body ? { 'content-type': 'application/json' } : {}) },
      ...(first.body ? {
        requests: [{
          setupRequest: (req: autocannon.Request) => {
            const { path: varied, body } = load.request(served!, n++);
            return { ...req, path: varied, body: JSON.stringify(body) };
          },
        }],
      } : {}),
    }, (err, result) => {
      if (err) return reject(err);
      if (result.non2xx || result.errors) return reject(new Error(`${base}${first.path}: ${result.non2xx} answers not 2xx, ${result.errors} errors`));
      resolve(result.requests.total);
    });
  });
}

/** What a write needs before it is measured: no app limit in the way, and the apps PATCH goes round. */
async function prepareWrites(served: Served): Promise<void> {
  const db = new pg.Client({ connectionString: served.database });
  await db.connect();
  await db.query('UPDATE plans SET app_limit = 100000000');
  await db.end();
  while (served.apps.length < CONNECTIONS) {
    const made = await call(`${served.base}/v1/app/create`, 'POST', served.key, APP_BODY);
    if (made.status !== 200) throw new Error(`${served.base}: an app was not created (${made.status})`);
    served.apps.push(made.body.response.id);
  }
}

const scratch = mkdtempSync(path.join(tmpdir(), 'pms-side-'));
const [here, there] = await Promise.all([
  serve(path.join(import.meta.dirname, '..'), settings(process.env.SIDE_THIS_ENV)), serve(path.resolve(other), settings(process.env.SIDE_OTHER_ENV)),
]);
const db = new pg.Client({ connectionString: here.database });
await db.connect();
await createReferenceTable(db);
await db.end();
const certificate = await certificateFiles(scratch);
const r2Port = await freePort();
const r2 = spawn(process.execPath, ['bench/reference.ts', 'r2', String(r2Port), here.database], {
  cwd: path.join(import.meta.dirname, '..'),
  env: { ...process.env, ...certificate },
  stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
});
await new Promise((resolve) => r2.once('message', resolve));
try {
  for (const { base, key } of [here, there]) {
    for (let i = 0; i < KEYS; i++) {
      const made = await call(`${base}/v1/key`, 'POST', key, { name: `side ${i}`, scope: ['key:read'] });
      if (made.status !== 201) throw new Error(`${base}: a key was not created (${made.status})`);
    }
  }
  if (loads.some(([given, load]) => load.method !== 'GET' || given.startsWith('/v1/app'))) for (const served of [here, there]) await prepareWrites(served);
  const r2Load: Load = { method: 'GET', request: () => ({ path: '/ref' }) };
  for (const [p, load] of loads) {
    const cost = { r2: new Cost(r2.pid), here: new Cost(here.webPid, here.workerPid), there: new Cost(there.webPid, there.workerPid) };
    const turns = [() => cost.here.measure(() => requests(here.base, load, here)), () => cost.there.measure(() => requests(there.base, load, there))];
    const roundRatios: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await cost.r2.measure(() => requests(`https://127.0.0.1:${r2Port}`, r2Load));
      const before = { here: cost.here.requests, there: cost.there.requests };
      // Whichever build ran right after R2 came out slower than the other (docs/performance.md,
      // "bench:side-by-side: its noise, and its CPU table"): the two take that place in turns.
      for (const turn of round % 2 === 0 ? turns : [...turns].reverse()) await turn();
      roundRatios.push((cost.here.requests - before.here) / (cost.there.requests - before.there));
    }
    const total = { r2: cost.r2.requests, here: cost.here.requests, there: cost.there.requests };
    const perS = (n: number) => Math.round(n / (ROUNDS * SECONDS));
    console.log(`${p}: R2 ${perS(total.r2)}/s, this ${perS(total.here)}/s (${(total.here / total.r2).toFixed(2)}x R2), `
      + `other ${perS(total.there)}/s (${(total.there / total.r2).toFixed(2)}x R2); this / other ${(total.here / total.there).toFixed(3)}`);
    // How far one round's ratio strays from the next: a difference inside this spread is noise.
    const sorted = [...roundRatios].sort((a, b) => a - b);
    console.log(`  this / other by round: ${roundRatios.map((r) => r.toFixed(3)).join(' ')} (${sorted[0]!.toFixed(3)}-${sorted.at(-1)!.toFixed(3)})`);
    if (CPU_COUNTED) {
      console.log(`  CPU us per request: R2 ${cost.r2.perRequest()}\n    this ${cost.here.perRequest()}\n    other ${cost.there.perRequest()}`);
    }
  }
} finally {
  agent.destroy();
  r2.kill('SIGTERM');
  for (const { child } of [here, there]) child.kill('SIGINT');
  await Promise.all([finished(r2), finished(here.child), finished(there.child)]);
  rmSync(scratch, { recursive: true, force: true });
}
