// Not a test file of the suite: test/database/test-run.test.ts runs test/run.ts on it. It makes
// two databases as a test file does and writes their names (and its pid) to RUN_FIXTURE_OUT;
// with RUN_FIXTURE_HANG it then holds a session on one and waits to be interrupted.
import { writeFileSync } from 'node:fs';
import { test } from 'node:test';
import pg from 'pg';
import { createTestDatabase } from '../support/service.ts';

test('makes two databases', async () => {
  const urls = [await createTestDatabase(), await createTestDatabase()];
  const session = new pg.Client({ connectionString: urls[0] });
  await session.connect();
  writeFileSync(process.env.RUN_FIXTURE_OUT!, JSON.stringify({ pid: process.pid, databases: urls.map((url) => new URL(url).pathname.slice(1)) }));
  if (process.env.RUN_FIXTURE_HANG) await new Promise((resolve) => setTimeout(resolve, 600_000));
  await session.end();
});
