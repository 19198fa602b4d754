// The webhooks ceiling's bare twin: the same events, bodies and signatures POSTed to a receiver
// with the same 8 connections an endpoint gets, but nothing else: no claims, leases or records.
// Prints {"perS": deliveries a second, "cpuMsEach": its CPU a delivery}. Args: receiver URL, project id, how many.
import https from 'node:https';
import pg from 'pg';
import { deliveryBody, signedHeaders } from '../domain/webhook-attempt.ts';
import { newWebhookSecret } from '../domain/webhooks.ts';

const [url, projectId, count] = process.argv.slice(2);
const CONNECTIONS = 8;
const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
await db.connect();
const { rows } = await db.query<{ id: string; body: string; type: string; created_at: string }>(
  `SELECT e.id, e.body, t.name AS type, floor(extract(epoch FROM e.created_at))::bigint AS created_at
   FROM events e JOIN event_types t ON t.id = e.type_id
   WHERE e.project_id = $1 AND t.name = 'key.created' ORDER BY e.sequence LIMIT $2`, [projectId, Number(count)]);
await db.end();
const agent = new https.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
const secret = newWebhookSecret();

function deliver(row: (typeof rows)[number]): Promise<void> {
  const body = deliveryBody(row.type, Number(row.created_at), row.body);
  const headers = signedHeaders({ url: url!, secret, previousSecret: null, eventId: row.id, body }, new Date());
  return new Promise((resolve, reject) => {
    const req = https.request(url!, { method: 'POST', agent, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode! < 300 ? resolve() : reject(new Error(`answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const started = performance.now();
const cpuBefore = process.cpuUsage();
let next = 0;
await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
  while (next < rows.length) await deliver(rows[next++]!);
}));
const cpu = process.cpuUsage(cpuBefore);
agent.destroy();
process.stdout.write(`${JSON.stringify({ perS: rows.length / ((performance.now() - started) / 1000), cpuMsEach: (cpu.user + cpu.system) / 1000 / rows.length })}\n`);
