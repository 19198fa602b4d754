// A client given back to a pool inside a transaction (lib/pool.ts createPool) is closed, never
// handed to the next user: a failed one would fail its every statement ("current transaction is
// aborted"), an open one would keep its locks and make its user's statements part of it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { readConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { createPool } from '../../lib/pool.ts';
import { createTestDatabase } from '../support/service.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';

const logFile = path.join(tempDir('pms-pool-'), 'pool.log');
const log = createLogger('info', 'pool-test', logFile);
let pool: pg.Pool;
let other: pg.Client;

before(async () => {
  const url = await createTestDatabase();
  // One client: whatever the pool hands out next is the one given back, unless it was closed.
  pool = createPool(readConfig({}), log, url, 1);
  other = new pg.Client({ connectionString: url });
  await other.connect();
  await other.query('CREATE TABLE held (id int PRIMARY KEY)');
  await other.query('INSERT INTO held VALUES (1)');
});
after(async () => {
  await other?.end();
  await pool?.end();
});

const backend = async (client: pg.PoolClient) => (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
const closedLines = () => readFileSync(logFile, 'utf8').split('\n').filter((line) => line.includes('given back inside a transaction')).length;

test('a client given back in a failed transaction is closed; the next user gets a new one that works', async () => {
  const first = await pool.connect();
  const pid = await backend(first);
  await first.query('BEGIN');
  await assert.rejects(first.query('SELECT 1 / 0'), /division by zero/);
  first.release();

  const next = await pool.connect();
  try {
    assert.notEqual(await backend(next), pid, 'a new connection');
    assert.deepEqual((await next.query('SELECT 2 AS two')).rows, [{ two: 2 }]);
  } finally {
    next.release();
  }
  await waitFor('the warning in the log', async () => closedLines() >= 1 || undefined);
});

test('a client given back with its transaction open is closed, and its locks go with it', async () => {
  const before = closedLines();
  const holder = await pool.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT id FROM held WHERE id = 1 FOR UPDATE');
  holder.release();
  // The server ends the closed session's transaction: the row can be locked at once.
  await waitFor('the row lock let go', async () => {
    await other.query('BEGIN');
    try {
      await other.query('SELECT id FROM held WHERE id = 1 FOR UPDATE NOWAIT');
      return true;
    } catch {
      return undefined;
    } finally {
      await other.query('ROLLBACK');
    }
  });
  await waitFor('the warning in the log', async () => closedLines() > before || undefined);
});

test('a client given back after a confirmed ROLLBACK is kept', async () => {
  const before = closedLines();
  const first = await pool.connect();
  const pid = await backend(first);
  await first.query('BEGIN');
  await assert.rejects(first.query('SELECT 1 / 0'));
  await first.query('ROLLBACK');
  first.release();
  const next = await pool.connect();
  try {
    assert.equal(await backend(next), pid, 'the same connection');
  } finally {
    next.release();
  }
  assert.equal(closedLines(), before);
});
