// What the service reaches for inside pg-boss (lib/pg-boss-internals.ts) still works as it does
// on the pinned version: an upgrade that renames what BossPool reads would otherwise go unnoticed,
// the worker's statements silently sent as text again (parsed and planned on every job). A module
// gone from pg-boss fails every import of the adapter, with Node's message naming both.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { prepared } from '../../lib/jobs.ts';
import { BossPool, notifyChannelSql } from '../../lib/pg-boss-internals.ts';
import { createTestDatabase } from '../support/service.ts';
import { waitFor } from '../support/wait.ts';

const PG_BOSS = `pg-boss ${createRequire(import.meta.url)('pg-boss/package.json').version as string}`;
const ADAPTER = 'lib/pg-boss-internals.ts';

/** How long a statement of pg-boss's pool may hear nothing before its connection is closed, here. */
const SILENCE_MS = 1000;

let connectionString: string;
let boss: BossPool;

before(async () => {
  connectionString = await createTestDatabase();
  // One connection: the statement prepared is then visible to the query that lists them.
  boss = new BossPool({ connectionString, max: 1 }, prepared, SILENCE_MS);
  await boss.open();
});
after(() => boss.close());

test('pg-boss\'s pool sends its parameterised statements as named prepared statements once open', async () => {
  const text = 'SELECT $1::int + 1 AS next';
  const { rows } = await boss.executeSql(text, [41]);
  assert.deepEqual(rows, [{ next: 42 }]);
  const name = (prepared(text, [41]) as pg.QueryConfig).name!;
  assert.match(name, /^pgboss_[0-9a-f]{24}$/);
  const { rows: statements } = await boss.executeSql('SELECT name, statement FROM pg_prepared_statements');
  assert.deepEqual(statements, [{ name, statement: text }], `${PG_BOSS}: its Db's \`opened\` or \`pool\`, which ${ADAPTER} reads, moved`);
});

test('a statement without values goes as text, and is not prepared', async () => {
  assert.equal(prepared('SELECT 1'), 'SELECT 1');
  const { rows } = await boss.executeSql('SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement = $1', ['SELECT 1']);
  assert.deepEqual(rows, [{ n: 0 }]);
});

test('its LISTEN connection hears a wake-up sent on the channel the wake-up SQL names', async () => {
  assert.equal(typeof boss.listen, 'function', `${PG_BOSS}: its Db, which ${ADAPTER} extends, no longer listens`);
  const heard: string[] = [];
  const { rows: [{ channel }] } = await boss.executeSql(`SELECT ${notifyChannelSql('pgboss')} AS channel`);
  const listening = await boss.listen(channel, (payload) => heard.push(payload), () => {});
  const sender = new pg.Client({ connectionString });
  await sender.connect();
  try {
    await sender.query(`SELECT pg_notify(${notifyChannelSql('pgboss')}, $1)`, ['audit.drain']);
    await waitFor(`${PG_BOSS}: the wake-up heard on the channel ${ADAPTER}'s notifyChannelSql names`, async () => heard.includes('audit.drain') || undefined);
  } finally {
    await sender.end();
    await listening.close();
  }
});

test('a statement of pg-boss\'s pool whose server went silent fails once the silence bound has passed', { timeout: 10_000 }, async () => {
  const { rows: [{ pid }] } = await boss.executeSql('SELECT pg_backend_pid() AS pid');
  // SIGSTOP: the backend's socket stays open and nothing comes back, as from a host gone silent.
  process.kill(pid, 'SIGSTOP');
  try {
    const started = Date.now();
    await assert.rejects(boss.executeSql('SELECT 1'), /Connection terminated/);
    const waitedMs = Date.now() - started;
    assert.ok(waitedMs >= SILENCE_MS - 50 && waitedMs < SILENCE_MS + 2000, `failed after ${waitedMs} ms, not soon after ${SILENCE_MS} ms`);
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  // The pool goes on with a new connection.
  assert.deepEqual((await boss.executeSql('SELECT 1 AS one')).rows, [{ one: 1 }]);
});
