// A database server that accepted the connection and then went silent (a stopped backend, a
// partition) must not hold a request forever: the server's statement timeout cannot end it, so
// the client bounds it (lib/pool.ts failWhenSilent). The backend is stopped with SIGSTOP, which
// is that silence exactly: its socket stays open and nothing comes back.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { isDatabaseUnavailable } from '../../domain/errors.ts';
import { readConfig } from '../../lib/config.ts';
import { createPool } from '../../lib/pool.ts';
import { createLogger } from '../../lib/log.ts';
import { createTestDatabase } from '../support/service.ts';
import { sleep } from '../support/wait.ts';

const STATEMENT_TIMEOUT_MS = 300;
/** The statement timeout and the second past it that lib/pool.ts allows a silent server. */
const SILENCE_BOUND_MS = STATEMENT_TIMEOUT_MS + 1000;

let pool: pg.Pool;

before(async () => {
  const config = readConfig({ DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS) });
  pool = createPool(config, createLogger('silent', 'silent-server-test', 2), await createTestDatabase(), 1);
});
after(() => pool.end());

test('a query on a connection whose server went silent fails as unavailable once the bound has passed', { timeout: 10_000 }, async () => {
  const client = await pool.connect();
  const { rows: [{ pid }] } = await client.query('SELECT pg_backend_pid() AS pid');
  process.kill(pid, 'SIGSTOP');
  try {
    const started = Date.now();
    await assert.rejects(client.query('SELECT 1'), (err: unknown) => {
      assert.ok(isDatabaseUnavailable(err), `answered as the database being unavailable (503), not: ${String(err)}`);
      return true;
    });
    const waitedMs = Date.now() - started;
    assert.ok(waitedMs >= SILENCE_BOUND_MS - 50, `not before the bound (${waitedMs} ms)`);
    assert.ok(waitedMs < SILENCE_BOUND_MS + 2000, `soon after the bound (${waitedMs} ms)`);
  } finally {
    process.kill(pid, 'SIGCONT');
    client.release(true);
  }
  // The pool goes on with a new connection.
  assert.deepEqual((await pool.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
});

test('a connection that waits for its next query is not cut however long it stays quiet', async () => {
  const client = await pool.connect();
  try {
    await sleep(SILENCE_BOUND_MS + 500);
    assert.deepEqual((await client.query('SELECT 2 AS two')).rows, [{ two: 2 }]);
    // Quiet before a query, then a query that takes a while with its answer to come: within bounds.
    await sleep(SILENCE_BOUND_MS + 500);
    assert.deepEqual((await client.query('SELECT pg_sleep(0.2), 3 AS three')).rows, [{ pg_sleep: '', three: 3 }]);
  } finally {
    client.release();
  }
});

test('a connection quiet past the bound first, whose server then goes silent, still fails once the bound has passed', { timeout: 15_000 }, async () => {
  const client = await pool.connect();
  const { rows: [{ pid }] } = await client.query('SELECT pg_backend_pid() AS pid');
  // The idle timer fires once here, with no query in flight, and must keep watching after it.
  await sleep(SILENCE_BOUND_MS + 500);
  assert.deepEqual((await client.query('SELECT 4 AS four')).rows, [{ four: 4 }]);
  process.kill(pid, 'SIGSTOP');
  try {
    const started = Date.now();
    // Raced against a deadline, so that a query never bounded still reaches the finally below.
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('no answer: the silence was not bounded')), SILENCE_BOUND_MS + 3000);
    });
    await assert.rejects(Promise.race([client.query('SELECT 1'), deadline]), (err: unknown) => isDatabaseUnavailable(err))
      .finally(() => clearTimeout(timer));
    const waitedMs = Date.now() - started;
    assert.ok(waitedMs < SILENCE_BOUND_MS + 2000, `soon after the bound (${waitedMs} ms)`);
  } finally {
    process.kill(pid, 'SIGCONT');
    client.release(true);
  }
});
