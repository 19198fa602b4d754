// How the audit worker learns of a change: not through pg-boss's NOTIFY inside the change's
// transaction (PostgreSQL commits every notifying transaction one at a time), but through one
// wake-up on pg-boss's channel sent after the commit (lib/jobs.ts wakeWorkers).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { notifyChannelSql } from 'pg-boss/dist/plans.js';
import { appTotals } from '../../workers/jobs/app-totals.ts';
import { auditWrite } from '../../workers/jobs/audit-write.ts';
import { runFinished } from '../../workers/jobs/run-finished.ts';
import { Secrets } from '../support/secrets.ts';
import { TestService } from '../support/service.ts';
import { waitFor } from '../support/wait.ts';

let service: TestService;
let listener: pg.Client;
const secrets = new Secrets();
const heard: string[] = [];

before(async () => {
  service = await TestService.start();
  listener = new pg.Client({ connectionString: service.databaseUrl });
  await listener.connect();
  const { rows: [{ channel }] } = await listener.query(`SELECT ${notifyChannelSql('pgboss')} AS channel`);
  listener.on('notification', (message) => heard.push(message.payload ?? ''));
  await listener.query(`LISTEN "${channel}"`);
});
after(async () => {
  await listener.end();
  await service.stop();
});

test('the change queues carry no transactional NOTIFY; the run engine\'s queue keeps it', async () => {
  const { rows } = await service.db.query('SELECT name, notify FROM pgboss.queue WHERE name = ANY ($1) ORDER BY name',
    [[auditWrite.name, appTotals.name, runFinished.name]]);
  assert.deepEqual(rows, [
    { name: appTotals.name, notify: false },
    { name: auditWrite.name, notify: false },
    { name: runFinished.name, notify: true },
  ]);
});

test('a change wakes the audit worker on pg-boss\'s channel once it has committed', async () => {
  const p = await secrets.project(service, 'Wake');
  await service.waitForJobsDrained();
  heard.length = 0;
  const made = await secrets.key(service, p.key, { name: 'woken', scope: ['key:read'] });
  await waitFor('a wake-up for audit.write', async () => (heard.includes(auditWrite.name) ? true : undefined));
  await service.waitForEvents(p.projectId, 2);
  assert.ok(made.id, 'the key was made');
});

test('a burst of changes sends at most one wake-up per change, and every change gets its event', async () => {
  const p = await secrets.project(service, 'Burst');
  await service.waitForJobsDrained();
  heard.length = 0;
  const made = await Promise.all(Array.from({ length: 40 }, (_, i) => secrets.key(service, p.key, { name: `burst ${i}`, scope: ['key:read'] })));
  assert.equal(made.length, 40);
  await service.waitForEvents(p.projectId, 41);
  await waitFor('the last wake-up', async () => (heard.length > 0 ? true : undefined));
  const wakes = heard.filter((q) => q === auditWrite.name).length;
  assert.ok(wakes >= 1 && wakes <= 40, `${wakes} wake-ups for 40 changes`);
});
