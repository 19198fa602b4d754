// Statements sent together on a pipelining connection (lib/pool.ts pipelined), as the webhook
// worker sends a claim and a fan-out: in a transaction they commit together or not at all, and a
// connection whose statements failed is closed rather than handed to its next user.
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { readConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { createPool, pipelined } from '../../lib/pool.ts';
import { socketOf } from '../../lib/pg-internals.ts';
import { createTestDatabase } from '../support/service.ts';

let pool: pg.Pool;

before(async () => {
  // One connection: what the pool hands out next is the one given back, unless it was closed.
  pool = createPool(readConfig({}), createLogger('silent', 'pipelined-test', 2), await createTestDatabase(), 1, { pipelining: true });
  await pool.query('CREATE TABLE sent (id int PRIMARY KEY)');
});
after(() => pool?.end());

const backend = async () => (await pool.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
const ids = async () => (await pool.query('SELECT id FROM sent ORDER BY id')).rows.map((row) => row.id as number);

test('in a transaction, the statements sent together commit together, and the answers come in order', async () => {
  const pid = await backend();
  const answers = await pipelined(pool, (client) => Promise.all([
    client.query('INSERT INTO sent VALUES (1) RETURNING id'),
    client.query('INSERT INTO sent VALUES (2) RETURNING id'),
    client.query('SELECT count(*)::int AS n FROM sent'),
  ]), { transaction: true });
  assert.deepEqual(answers.map((a) => a.rows[0]), [{ id: 1 }, { id: 2 }, { n: 2 }]);
  assert.deepEqual(await ids(), [1, 2]);
  assert.equal(await backend(), pid, 'the connection is given back');
});

test('a statement that fails rolls back those before it, fails the call, and closes the connection', async () => {
  const pid = await backend();
  await assert.rejects(pipelined(pool, (client) => Promise.all([
    client.query('INSERT INTO sent VALUES (3)'),
    client.query('INSERT INTO sent VALUES (1)'),
    client.query('INSERT INTO sent VALUES (4)'),
  ]), { transaction: true }), /duplicate key/);
  assert.deepEqual(await ids(), [1, 2], 'neither 3 nor 4');
  assert.notEqual(await backend(), pid, 'a new connection');
});

test('without a transaction, each statement stands alone', async () => {
  await assert.rejects(pipelined(pool, (client) => Promise.all([
    client.query('INSERT INTO sent VALUES (5)'),
    client.query('INSERT INTO sent VALUES (1)'),
    client.query('INSERT INTO sent VALUES (6)'),
  ])), /duplicate key/);
  assert.deepEqual(await ids(), [1, 2, 5, 6]);
});

test('the statements leave in one write: the server is woken once for them all', async () => {
  const first = await pool.connect();
  const socket = socketOf(first) as Socket & { _write: (...args: unknown[]) => void; _writev: (...args: unknown[]) => void };
  first.release();
  let writes = 0;
  const write = socket._write;
  const writev = socket._writev;
  socket._write = function (...args) { writes++; return write.apply(this, args); };
  socket._writev = function (...args) { writes++; return writev.apply(this, args); };
  try {
    await pipelined(pool, (client) => Promise.all([
      client.query({ name: 'pipelined_one', text: 'SELECT $1::int AS n', values: [1] }),
      client.query({ name: 'pipelined_two', text: 'SELECT $1::int AS n', values: [2] }),
    ]), { transaction: true });
  } finally {
    socket._write = write;
    socket._writev = writev;
  }
  assert.equal(writes, 1, 'BEGIN, the two statements and COMMIT in one write');
});
