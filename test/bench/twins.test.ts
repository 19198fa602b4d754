// The bench's twins (bench/twins.ts) make each change as the service does, but hand no event over:
// on every connection of their pool, the first one included (it once ran a query before the
// hand-off was taken out, so one write in eight of the twins carried its event).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { after, before, test } from 'node:test';
import { APP_BODY } from '../../bench/setup.ts';
import { freePort } from '../support/ports.ts';
import { TestService } from '../support/service.ts';

let service: TestService;
before(async () => { service = await TestService.start({ jobWorkers: false }); });
after(() => service.stop());

/** A request to the twins' server; its status and the envelope's response. */
function call(agent: https.Agent, port: number, method: string, path: string, body: object): Promise<{ status: number; response: any }> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, method, path: `/twin${path}`, agent, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => { text += chunk; });
      res.on('end', () => resolve({ status: res.statusCode!, response: JSON.parse(text).response }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const outboxRows = async (projectId: string) =>
  (await service.db.query('SELECT count(*)::int AS n FROM audit_outbox WHERE project_id = $1', [projectId])).rows[0].n as number;

test('the twins write keys and apps and change apps with every pool connection, and hand no event over', async (t) => {
  const project = await service.createProject('Twins');
  const port = await freePort();
  const twins = spawn(process.execPath, ['bench/twins.ts', String(port), service.databaseUrl, project.key], {
    env: { ...process.env, TLS_CERT_FILE: process.env.TEST_TLS_CERT_FILE, TLS_KEY_FILE: process.env.TEST_TLS_KEY_FILE },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  twins.stderr!.on('data', (chunk: Buffer) => { stderr += chunk; });
  t.after(() => { twins.kill('SIGTERM'); });
  await new Promise<void>((resolve, reject) => {
    twins.once('message', () => resolve());
    twins.once('exit', (code) => reject(new Error(`the twins exited (${code}): ${stderr}`)));
  });
  const agent = new https.Agent({ keepAlive: true, maxSockets: 32, ca: readFileSync(process.env.TEST_TLS_CERT_FILE!) });
  t.after(() => agent.destroy());
  const before = await outboxRows(project.projectId);

  // 32 at once each time: more than the twins' 8 pool connections, so every one makes changes.
  const times = <T>(n: number, make: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => make(i)));
  const keys = await times(32, (i) => call(agent, port, 'POST', '/v1/key', { name: `twin ${i}`, scope: ['key:read'] }));
  const apps = await times(32, () => call(agent, port, 'POST', '/v1/app/create', APP_BODY));
  const edits = await times(32, (i) => call(agent, port, 'PATCH', `/v1/app/detail/${apps[i]!.response.id}`, { name: `Twin app ${i}` }));
  assert.deepEqual([...new Set([...keys, ...apps, ...edits].map((r) => r.status))].sort(), [200, 201]);

  const made = await service.db.query(`SELECT (SELECT count(*)::int FROM api_keys WHERE project_id = $1 AND name LIKE 'twin %') AS keys,
      (SELECT count(*)::int FROM apps WHERE project_id = $1 AND name LIKE 'Twin app %') AS renamed`, [project.projectId]);
  assert.deepEqual(made.rows[0], { keys: 32, renamed: 32 });
  assert.equal(await outboxRows(project.projectId), before, 'a twin handed an event over');
});
