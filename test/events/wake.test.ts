// How the job workers learn of a change: never through pg-boss's NOTIFY inside the change's
// transaction (PostgreSQL commits every notifying transaction one at a time), but after the commit:
// a wake-up on pg-boss's channel for jobs the change sent (lib/jobs.ts wakeWorkers), and for its
// audit event, an `audit.drain` job whose insert notifies (lib/jobs.ts requestJob).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { notifyChannelSql } from '../../lib/pg-boss-internals.ts';
import { appTotals } from '../../workers/app-totals.ts';
import { auditDrain } from '../../workers/audit-drain.ts';
import { auditWrite } from '../../workers/audit-write.ts';
import { runFinished } from '../../workers/run-finished.ts';
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

test('the queues a change sends to inside its transaction carry no NOTIFY; those sent outside it keep it', async () => {
  const { rows } = await service.db.query('SELECT name, notify, policy FROM pgboss.queue WHERE name = ANY ($1) ORDER BY name',
    [[auditWrite.name, auditDrain.name, appTotals.name, runFinished.name]]);
  assert.deepEqual(rows, [
    { name: appTotals.name, notify: false, policy: 'stately' },
    { name: auditDrain.name, notify: true, policy: 'short' },
    { name: auditWrite.name, notify: false, policy: 'standard' },
    { name: runFinished.name, notify: true, policy: 'standard' },
  ]);
});

test('a change wakes the audit drain on pg-boss\'s channel once it has committed', async () => {
  const p = await secrets.project(service, 'Wake');
  await service.waitForJobsDrained();
  heard.length = 0;
  const made = await secrets.key(service, p.key, { name: 'woken', scope: ['key:read'] });
  await waitFor('a wake-up for audit.drain', async () => (heard.includes(auditDrain.name) ? true : undefined));
  await service.waitForEvents(p.projectId, 2);
  assert.ok(made.id, 'the key was made');
});

test('a burst of changes makes at most one drain job per change, and every change gets its event', async () => {
  const p = await secrets.project(service, 'Burst');
  await service.waitForJobsDrained();
  heard.length = 0;
  const made = await Promise.all(Array.from({ length: 40 }, (_, i) => secrets.key(service, p.key, { name: `burst ${i}`, scope: ['key:read'] })));
  assert.equal(made.length, 40);
  await service.waitForEvents(p.projectId, 41);
  await waitFor('the last wake-up', async () => (heard.length > 0 ? true : undefined));
  const wakes = heard.filter((q) => q === auditDrain.name).length;
  assert.ok(wakes >= 1 && wakes <= 40, `${wakes} wake-ups for 40 changes`);
  assert.ok(!heard.includes(auditWrite.name), 'no audit.write job');
});
