// Migrations against a live database (lib/migrate.ts): a schema change that must wait for a
// table's lock waits in short turns, letting the queries queued behind it through between them,
// and gives up with one line after its last turn; the pool's statement timeout, which bounds
// requests, does not bound a migration.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { readConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { migrateSchema } from '../../lib/migrate.ts';
import { createPool } from '../../lib/pool.ts';
import { StartupError } from '../../lib/startup-error.ts';
import { createTestDatabase } from '../support/service.ts';
import { sleep } from '../support/wait.ts';

const STATEMENT_TIMEOUT_MS = 300;
const LOCK_TIMEOUT_MS = 200;
const log = createLogger('silent', 'migrations-test', 2);
let url: string;
let pool: pg.Pool;
let holder: pg.Client;
/** For looking: the pool's one connection is the migration's. */
let looker: pg.Client;

before(async () => {
  url = await createTestDatabase();
  pool = createPool(readConfig({ DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS) }), log, url, 1);
  holder = new pg.Client({ connectionString: url });
  looker = new pg.Client({ connectionString: url });
  await holder.connect();
  await looker.connect();
});
after(async () => {
  await holder.end();
  await looker.end();
  await pool.end();
});

/** An open transaction that has read api_keys: it holds the lock an ALTER TABLE must wait for. */
async function holdApiKeys(): Promise<() => Promise<void>> {
  await holder.query('BEGIN');
  await holder.query('SELECT 1 FROM api_keys LIMIT 1');
  return async () => { await holder.query('COMMIT'); };
}

async function columnExists(name: string): Promise<boolean> {
  const { rows } = await looker.query(`SELECT 1 FROM information_schema.columns WHERE table_name = 'api_keys' AND column_name = $1`, [name]);
  return rows.length === 1;
}

async function recorded(version: string): Promise<boolean> {
  return (await looker.query('SELECT 1 FROM schema_migrations WHERE version = $1', [version])).rows.length === 1;
}

test('a migration waiting for a lock lets the queries behind it through, and applies once the lock is free', async () => {
  const release = await holdApiKeys();
  const migrating = migrateSchema(pool, log, new Map([['9001_waits', 'ALTER TABLE api_keys ADD COLUMN waits_in_turns int']]),
    { lockTimeoutMs: LOCK_TIMEOUT_MS, attempts: 100, pauseMs: 50 });
  await sleep(100);
  // Without the turns each of these would queue behind the waiting ALTER until the holder ends.
  for (let i = 0; i < 6; i++) {
    const started = Date.now();
    await looker.query('SELECT count(*) FROM api_keys');
    const took = Date.now() - started;
    assert.ok(took < LOCK_TIMEOUT_MS + 500, `a read of the table took ${took} ms while the migration waited`);
    await sleep(100);
  }
  assert.equal(await columnExists('waits_in_turns'), false, 'not applied while the lock is held');
  await release();
  assert.deepEqual(await migrating, ['9001_waits']);
  assert.equal(await columnExists('waits_in_turns'), true);
  assert.equal(await recorded('9001_waits'), true);
});

test('a lock held through every turn: the release gives up with one line naming the migration, and nothing of it stays', async () => {
  const release = await holdApiKeys();
  try {
    await assert.rejects(
      migrateSchema(pool, log, new Map([['9002_blocked', 'ALTER TABLE api_keys ADD COLUMN never_added int']]), { lockTimeoutMs: 100, attempts: 3, pauseMs: 20 }),
      (err: Error) => {
        assert.ok(err instanceof StartupError, `${err.name}: ${err.message}`);
        assert.equal(err.message, 'migration 9002_blocked could not take its locks in 3 tries of 100 ms: ' +
          'a transaction in progress holds a table it changes; run release again once it has ended.');
        return true;
      },
    );
  } finally {
    await release();
  }
  assert.equal(await columnExists('never_added'), false);
  assert.equal(await recorded('9002_blocked'), false);
});

test('a migration runs past the statement timeout that bounds requests', async () => {
  await assert.rejects(pool.query(`SELECT pg_sleep(${(2 * STATEMENT_TIMEOUT_MS) / 1000})`), { code: '57014' }, 'the pool\'s requests are bounded');
  assert.deepEqual(await migrateSchema(pool, log, new Map([['9003_slow', `SELECT pg_sleep(${(2 * STATEMENT_TIMEOUT_MS) / 1000})`]])), ['9003_slow']);
  assert.equal(await recorded('9003_slow'), true);
});
