// The bench's webhooks part: receivers in this process (HTTPS, the bench's certificate, which the
// worker trusts through NODE_EXTRA_CA_CERTS), endpoints of one project at them (one answering 500,
// one never answering, as issue 32 asks), and changes at a steady rate: how long after a change's
// answer its event reaches each healthy endpoint; then one endpoint's ceiling on a replayed
// backlog beside a bare twin deliverer (bench/webhook-twin.ts).
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { call } from './http.ts';

interface Receiver {
  url: string;
  server: https.Server;
  /** Deliveries received, by event id: when each first arrived. */
  arrived: Map<string, number>;
  /** The same, by the id of the key each event is of. */
  byKey: Map<string, number>;
  count: number;
}

/** `ok` answers 204; `failing` 500; `silent` reads the request and never answers. */
type Answers = 'ok' | 'failing' | 'silent';

async function receiver(cert: Buffer, key: Buffer, answers: Answers = 'ok'): Promise<Receiver> {
  const made: Receiver = { url: '', server: https.createServer({ cert, key }), arrived: new Map(), byKey: new Map(), count: 0 };
  made.server.on('request', (req, res) => {
    if (answers !== 'ok') {
      made.count++;
      req.resume();
      if (answers === 'failing') req.on('end', () => res.writeHead(500).end());
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const at = performance.now();
      made.count++;
      const id = req.headers['webhook-id'] as string;
      if (!made.arrived.has(id)) {
        made.arrived.set(id, at);
        made.byKey.set((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: { related: { id: string } } }).data.related.id, at);
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => made.server.listen(0, '127.0.0.1', resolve));
  made.url = `https://127.0.0.1:${(made.server.address() as AddressInfo).port}/hook`;
  return made;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

export interface WebhookBenchResult {
  endpoints: number;
  changes: number;
  pairs: number;
  p50: number;
  p99: number;
  max: number;
  /** (change, endpoint) pairs that never arrived within the wait. */
  lost: number;
  workerRssPeakMb: number;
  ceilingEvents: number;
  ceilingPerS: number;
  twinPerS: number;
}

export interface WebhookBenchOptions {
  base: string;
  key: string;
  projectId: string;
  db: pg.Pool;
  certFile: string;
  keyFile: string;
  endpoints: number;
  ratePerS: number;
  changes: number;
  workerPid: number;
  /** Runs bench/webhook-twin.ts (a child process) to its end; its output. */
  twin: (args: string[]) => Promise<string>;
}

function peakRssMb(pid: number): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

async function waitUntil(what: string, done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  void what;
  return true;
}

export async function webhookDelivery(options: WebhookBenchOptions): Promise<WebhookBenchResult> {
  const cert = readFileSync(options.certFile);
  const tlsKey = readFileSync(options.keyFile);
  const answered = new Map<string, number>();
  const receivers: Receiver[] = [];
  try {
    // The last two of the endpoints: one answering 500, one never answering. Only the others are measured.
    for (let i = 0; i < options.endpoints; i++) {
      receivers.push(await receiver(cert, tlsKey, i === options.endpoints - 2 ? 'failing' : i === options.endpoints - 1 ? 'silent' : 'ok'));
    }
    const healthy = receivers.slice(0, options.endpoints - 2);
    const healthyIds: string[] = [];
    for (const r of receivers) {
      const made = await call(`${options.base}/v1/webhook`, 'POST', options.key, { url: r.url, types: ['key.created'] });
      if (made.status !== 201) throw new Error(`POST /v1/webhook answered ${made.status}: ${JSON.stringify(made.body)}`);
      if (healthy.includes(r)) healthyIds.push(made.body.response.id as string);
    }
    // Warm-up, unmeasured: connections to the receivers, the worker's first claims.
    await changes(options, Math.min(options.ratePerS, options.changes), new Map());
    await waitUntil('the warm-up', () => healthy.every((r) => r.count >= Math.min(options.ratePerS, options.changes)), 30_000);
    const samples: string[] = [];
    const sampler = setInterval(() => {
      // Owed, due and leased: the healthy endpoints' (the others' backlogs only grow).
      void options.db.query(`SELECT (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = ANY ($1))::int AS owed,
          (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = ANY ($1) AND next_at <= now())::int AS due,
          (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = ANY ($1) AND leased_until > now())::int AS leased,
          (SELECT coalesce(sum(c.total - e.fanned_out), 0)::int FROM webhook_endpoints e JOIN project_event_counts c USING (project_id)
            WHERE e.status = 'enabled') AS unfanned,
          (SELECT count(*) FROM audit_outbox)::int AS outbox`, [healthyIds]).then(({ rows: [row] }) => samples.push(JSON.stringify(row)), () => {});
    }, 1000);
    await changes(options, options.changes, answered);
    clearInterval(sampler);
    if (process.env.BENCH_WEBHOOK_SAMPLES) {
      console.log(samples.map((s) => `  ${s}`).join('\n'));
      const { rows: [d] } = await options.db.query(`SELECT count(*)::int AS n, percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,
        percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms) AS p99 FROM webhook_attempts`);
      console.log(`  attempts so far ${d.n}, their duration p50 ${d.p50} ms, p99 ${d.p99} ms`);
    }
    const measured = healthy;
    const pairs = options.changes * measured.length;
    const arrived = () => measured.reduce((sum, r) => sum + [...answered.keys()].filter((id) => r.byKey.has(id)).length, 0);
    await waitUntil('every delivery', () => arrived() >= pairs, 60_000);
    // Arriving before the bench read the change's answer counts as 0.
    const latencies = measured.flatMap((r) => [...answered].flatMap(([id, at]) => (r.byKey.has(id) ? [Math.max(0, r.byKey.get(id)! - at)] : [])))
      .sort((a, b) => a - b);
    const workerRssPeakMb = peakRssMb(options.workerPid);

    // The ceiling: every key.created of the project queued again for one endpoint at once.
    const alone = await receiver(cert, tlsKey);
    receivers.push(alone);
    const endpoint = await call(`${options.base}/v1/webhook`, 'POST', options.key, { url: alone.url, types: ['key.created'] });
    const started = performance.now();
    const replay = await call(`${options.base}/v1/webhook/${endpoint.body.response.id}/replay`, 'POST', options.key, { after: 0 });
    const queued = replay.body.response.queued as number;
    await waitUntil('the replayed backlog', () => alone.arrived.size >= queued, 120_000);
    const ceilingPerS = alone.arrived.size / ((Math.max(...alone.arrived.values()) - started) / 1000);
    const twinReceiver = await receiver(cert, tlsKey);
    receivers.push(twinReceiver);
    const twin = JSON.parse(await options.twin([twinReceiver.url, options.projectId, String(queued)])) as { perS: number };
    return {
      endpoints: options.endpoints, changes: options.changes, pairs: latencies.length, p50: percentile(latencies, 50), p99: percentile(latencies, 99),
      max: latencies.at(-1) ?? NaN, lost: pairs - latencies.length, workerRssPeakMb, ceilingEvents: queued, ceilingPerS, twinPerS: twin.perS,
    };
  } finally {
    for (const r of receivers) {
      r.server.closeAllConnections();
      r.server.close();
    }
  }
}

/** POST /v1/key at a steady rate; each answer's time by the new key's id. */
async function changes(options: WebhookBenchOptions, count: number, answered: Map<string, number>): Promise<void> {
  const started = Date.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const due = started + (i * 1000) / options.ratePerS;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now())));
    pending.push(call(`${options.base}/v1/key`, 'POST', options.key, { name: `webhook ${i}`, scope: ['key:read'] }).then((created) => {
      if (created.status !== 201) throw new Error(`POST /v1/key answered ${created.status}`);
      answered.set(created.body.response.id as string, performance.now());
    }));
  }
  await Promise.all(pending);
}
