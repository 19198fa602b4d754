// A port already taken (another program, another copy of the service): one line on stderr naming
// the port and the variable that moves it, exit 1, and nothing started first: no embedded
// PostgreSQL, no data directory, no certificate, nothing else printed but the log's own line.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { Server } from 'node:net';
import { after, before, test } from 'node:test';
import { freePort } from '../support/ports.ts';
import { dataDir, holdPort, killLeftovers, logLines, portFree, run, shellEnv, withoutNpmWarnings } from './helpers.ts';

let held: Server;
let taken: number;

before(async () => {
  taken = await freePort();
  held = await holdPort(taken);
});
after(async () => {
  killLeftovers();
  await new Promise((resolve) => held.close(resolve));
});

async function otherPort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port !== taken) return port;
  }
}

/** Starts `command` with these ports and a fresh DATA_DIR; it must fail at once, having started nothing. */
async function refused(command: 'node' | 'npm', args: string[], ports: { PORT: number; HTTP_PORT: number }) {
  const dir = dataDir();
  const pgPort = await otherPort();
  const child = run(command, args, shellEnv({
    DATA_DIR: dir, PORT: String(ports.PORT), HTTP_PORT: String(ports.HTTP_PORT), EMBEDDED_PG_PORT: String(pgPort),
  }));
  const exit = await child.exit;
  await child.closed;
  assert.equal(existsSync(dir), false, 'no data directory: no database, no certificate was made');
  assert.equal(await portFree(pgPort), true, 'no PostgreSQL listens');
  return { exit, stdout: child.stdout, stderr: child.stderr };
}

/** The one log line of a refused start: `could not start`, with the reason. */
function assertOnlyLogLine(stdout: string, name: string, reason: string): void {
  const lines = logLines(stdout);
  assert.deepEqual(lines.map(({ level, name: n, msg, reason: r }) => ({ level, name: n, msg, reason: r })), [
    { level: 60, name, msg: 'could not start', reason },
  ]);
}

test('PORT taken: `node bin/web.ts` says so in one line and exits 1', async () => {
  const other = await otherPort();
  const { exit, stdout, stderr } = await refused('node', ['bin/web.ts'], { PORT: taken, HTTP_PORT: other });
  const reason = `port ${taken} is already in use; set PORT to another port.`;
  assert.deepEqual(exit, { code: 1, signal: null });
  assert.equal(stderr, `web: ${reason}\n`);
  assert.equal(stdout.split('\n').length, 2, 'one line on stdout');
  assertOnlyLogLine(stdout, 'web', reason);
});

test('HTTP_PORT taken: `node bin/start.ts` names HTTP_PORT', async () => {
  const other = await otherPort();
  const { exit, stdout, stderr } = await refused('node', ['bin/start.ts'], { PORT: other, HTTP_PORT: taken });
  const reason = `port ${taken} is already in use; set HTTP_PORT to another port.`;
  assert.deepEqual(exit, { code: 1, signal: null });
  assert.equal(stderr, `start: ${reason}\n`);
  assertOnlyLogLine(stdout, 'start', reason);
});

test('PORT and HTTP_PORT set to one port: the second is named', async () => {
  const both = await otherPort();
  const { exit, stderr } = await refused('node', ['bin/web.ts'], { PORT: both, HTTP_PORT: both });
  assert.deepEqual(exit, { code: 1, signal: null });
  assert.equal(stderr, `web: port ${both} is already in use; set HTTP_PORT to another port.\n`);
});

test('PORT taken: `npm start` prints the same one line (npm adds nothing), exit 1', async () => {
  const other = await otherPort();
  const { exit, stdout, stderr } = await refused('npm', ['start'], { PORT: taken, HTTP_PORT: other });
  const reason = `port ${taken} is already in use; set PORT to another port.`;
  assert.deepEqual(exit, { code: 1, signal: null });
  assert.equal(withoutNpmWarnings(stderr), `start: ${reason}\n`);
  assertOnlyLogLine(stdout, 'start', reason);
});
