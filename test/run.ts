// `npm test`: one PostgreSQL, one migrated template database, a test certificate, then node:test
// over every test file; each file clones the template into a database of its own.
// `npm run test:faults` is the same with `--faults`: the fault suite (test/faults/*.fault.ts),
// one file at a time, ending with the table of figures its files recorded (test/support/figures.ts).
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { release } from '../bin/release.ts';
import { selfSigned } from '../gateway/tls.ts';
import { readConfig } from '../lib/config.ts';
import { createLogger } from '../lib/log.ts';
import { StartupError } from '../lib/startup-error.ts';
import { printFigures } from './support/figures.ts';
import { startTestPostgres } from './support/postgres.ts';

const TEMPLATE_DB = 'pms_test_template';
const log = createLogger(process.env.LOG_LEVEL ?? 'warn', 'test-run', 2);

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

const postgres = await startTestPostgres(log).catch((err: unknown) => {
  // The embedded PostgreSQL could not start: one line naming the cause and the fix, no stack.
  if (!(err instanceof StartupError)) throw err;
  process.stderr.write(`test: ${err.message}\n`);
  process.exit(1);
});
let code = 1;
try {
  const admin = new pg.Client({ connectionString: postgres.adminUrl });
  await admin.connect();
  const version = (await admin.query('SHOW server_version')).rows[0].server_version as string;
  await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB}`);
  await admin.query(`CREATE DATABASE ${TEMPLATE_DB}`);
  await admin.end();
  await release(readConfig({}), log, withDatabase(postgres.adminUrl, TEMPLATE_DB));
  console.log(`# PostgreSQL for this run: ${postgres.kind} (server ${version})`);

  const tlsDir = mkdtempSync(path.join(tmpdir(), 'pms-tls-'));
  const tls = await selfSigned();
  writeFileSync(path.join(tlsDir, 'cert.pem'), tls.cert);
  writeFileSync(path.join(tlsDir, 'key.pem'), tls.key);

  const faults = process.argv.includes('--faults');
  const files = process.argv.slice(2).filter((arg) => arg !== '--faults');
  const figuresFile = path.join(tlsDir, 'figures.jsonl');
  const child = spawn(process.execPath, [
    '--test',
    // Fault files kill processes, stop databases and load the machine: one at a time.
    `--test-concurrency=${faults ? 1 : (process.env.TEST_CONCURRENCY ?? 3)}`,
    `--test-timeout=${faults ? 900_000 : 120_000}`,
    ...(files.length ? files : [faults ? 'test/faults/*.fault.ts' : 'test/**/*.test.ts']),
  ], {
    stdio: 'inherit',
    env: {
      ...process.env,
      TEST_PG_ADMIN_URL: postgres.adminUrl,
      TEST_TEMPLATE_DB: TEMPLATE_DB,
      TEST_TLS_CERT_FILE: path.join(tlsDir, 'cert.pem'),
      TEST_TLS_KEY_FILE: path.join(tlsDir, 'key.pem'),
      TEST_PG_KIND: postgres.kind,
      TEST_FIGURES_FILE: figuresFile,
    },
  });
  code = await new Promise<number>((resolve) => child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
  if (faults) printFigures(figuresFile);
  console.log(`# PostgreSQL for this run: ${postgres.kind} (server ${version})`);
} finally {
  await postgres.stop();
}
process.exit(code);
