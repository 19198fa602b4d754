// Least privilege (README "Database roles"): web and worker connect as a member of pms_app, which
// `release` grants the rows of every table and nothing more. Here the gateway and the job workers
// run as such a login role, made as the README tells an operator to, and serve every kind of
// change, its event included; the same role is refused DDL and holds no administrative right.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { assertSuccess } from '../support/assertions.ts';
import { createApp } from '../apps/helpers.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';

const INSUFFICIENT_PRIVILEGE = '42501';
const role = { user: `pms_web_${randomBytes(4).toString('hex')}`, password: randomBytes(12).toString('hex') };
let admin: pg.Client;
let service: TestService;
let project: TestProject;
let asRole: pg.Client;

before(async () => {
  admin = new pg.Client({ connectionString: process.env.TEST_PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE ROLE ${role.user} LOGIN PASSWORD '${role.password}' IN ROLE pms_app`);
  service = await TestService.start({ role });
  project = await service.createProject();
  const url = new URL(service.databaseUrl);
  url.username = role.user;
  url.password = role.password;
  asRole = new pg.Client({ connectionString: url.toString() });
  await asRole.connect();
});

after(async () => {
  await asRole?.end();
  await service?.stop();
  await admin.query(`DROP ROLE IF EXISTS ${role.user}`);
  await admin.end();
});

test('the gateway and the job workers serve changes and reads as a member of pms_app', async () => {
  const key = await createKey(service, project.key, { name: 'made as pms_app' });
  assertSuccess(await service.request('DELETE', `/v1/key/${key.id}`, { key: project.key }), 200);
  const created = await createApp(service, project.key);
  assertSuccess(await service.request('DELETE', `/v1/app/detail/${created.id}`, { key: project.key }), 200);
  // The events are written by the job workers, as the same role.
  await service.waitForEvents(project.projectId, 6);
  const feed = assertSuccess(await service.request('GET', '/v1/event', { key: project.key }), 200);
  assert.deepEqual(feed.data.map((e: { type: { name: string } }) => e.type.name).sort(),
    ['app.created', 'app.deleted', 'key.created', 'key.created', 'key.revoked', 'project.created']);
  const { rows } = await admin.query(
    'SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = $1 AND usename <> current_user',
    [new URL(service.databaseUrl).pathname.slice(1)]);
  assert.deepEqual(rows.map((r) => r.usename), [role.user], 'every connection of the service is the role');
});

test('the role holds no administrative right and may not change the schema', async () => {
  const { rows } = await asRole.query('SELECT rolsuper, rolcreatedb, rolcreaterole, rolbypassrls FROM pg_roles WHERE rolname = current_user');
  assert.deepEqual(rows, [{ rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolbypassrls: false }]);
  for (const ddl of [
    'CREATE TABLE intruder (x int)',
    'CREATE TABLE pgboss.intruder (x int)',
    'ALTER TABLE events ADD COLUMN intruder int',
    'DROP TABLE api_keys',
    'CREATE INDEX intruder ON events (id)',
    'TRUNCATE events',
    'CREATE SCHEMA intruder',
  ]) {
    await assert.rejects(asRole.query(ddl), (err: { code?: string }) => err.code === INSUFFICIENT_PRIVILEGE, ddl);
  }
});
