// `npm start` as a newcomer runs it and stops it: `kill <pid of npm>` (SIGTERM to npm), or Ctrl-C
// (SIGINT to npm's whole process group). Either way npm exits only once the service has stopped,
// nothing it started is left (no node, no PostgreSQL, no port held), and the log ends `stopped`.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { waitFor } from '../support/wait.ts';
import {
  alive, dataDir, distinctFreePorts, healthz, keyCurrent, killLeftovers, logLines, portFree, postmasterPid, run, shellEnv, watchPid, withoutNpmWarnings, type Run,
} from './helpers.ts';

/** A first start runs initdb and the migrations: allow for a slow machine. */
const READY_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 20_000;

const dir = dataDir();
after(killLeftovers);

const [PORT, HTTP_PORT, EMBEDDED_PG_PORT] = (await distinctFreePorts(3)) as [number, number, number];

interface Started {
  npm: Run;
  servicePid: number;
  postgresPid: number;
  /** On a first start: what GET /v1/key/current answered with the key the moment it was shown. */
  firstKeyStatus?: number;
}

const FIRST_KEY = /\nFirst start: created a project and its first API key\. The key is shown this once:\n {2}project proj_[0-9a-f]{20}\n {2}key {5}(sk-project-[0-9A-Za-z]{43,})\n/;

async function startNpm(firstStart = false): Promise<Started> {
  const npm = run('npm', ['start'], shellEnv({
    DATA_DIR: dir, PORT: String(PORT), HTTP_PORT: String(HTTP_PORT), EMBEDDED_PG_PORT: String(EMBEDDED_PG_PORT),
  }));
  let exited = false;
  void npm.exit.then(() => { exited = true; });
  let firstKeyStatus: number | undefined;
  if (firstStart) {
    const shown = await waitFor(() => `the first key shown:\n${npm.stdout}\n${npm.stderr}`, async () => {
      if (exited) throw new Error(`npm start exited while starting:\n${npm.stdout}\n${npm.stderr}`);
      return FIRST_KEY.exec(npm.stdout) ?? undefined;
    }, READY_TIMEOUT_MS, 5);
    firstKeyStatus = await keyCurrent(PORT, shown[1]!);
  }
  await waitFor(() => `npm start answering /healthz on ${PORT}:\n${npm.stdout}\n${npm.stderr}`, async () => {
    if (exited) throw new Error(`npm start exited while starting:\n${npm.stdout}\n${npm.stderr}`);
    return (await healthz(PORT)) === 200 ? true : undefined;
  }, READY_TIMEOUT_MS, 200);
  // The log line goes out through a pipe: an answer on the socket may come before it.
  const listening = await waitFor(() => `the log saying the gateway listens:\n${npm.stdout}`,
    async () => logLines(npm.stdout).find((line) => line.msg === 'gateway listening'), READY_TIMEOUT_MS, 50);
  const servicePid = listening.pid as number;
  const postgresPid = postmasterPid(dir);
  assert.ok(postgresPid, 'the embedded PostgreSQL runs from DATA_DIR');
  watchPid(servicePid);
  watchPid(postgresPid, 'SIGQUIT');
  assert.notEqual(servicePid, npm.child.pid);
  return { npm, servicePid, postgresPid, ...(firstKeyStatus === undefined ? {} : { firstKeyStatus }) };
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function assertStopped({ npm, servicePid, postgresPid }: Started, signal: string): Promise<void> {
  const exit = await within(npm.exit, STOP_TIMEOUT_MS, 'npm exits');
  // npm exits after its script: by then the service and its PostgreSQL have stopped.
  assert.equal(alive(servicePid), false, 'the service process is gone');
  assert.equal(alive(postgresPid), false, 'the embedded PostgreSQL is gone');
  assert.equal(postmasterPid(dir), undefined, 'PostgreSQL shut down cleanly (postmaster.pid removed)');
  for (const [name, port] of [['PORT', PORT], ['HTTP_PORT', HTTP_PORT], ['EMBEDDED_PG_PORT', EMBEDDED_PG_PORT]] as const) {
    assert.equal(await portFree(port), true, `${name} ${port} is free`);
  }
  await within(npm.closed, 1000, 'nothing holds npm\'s output');
  assert.deepEqual(exit, { code: 0, signal: null }, `npm's exit:\n${npm.stdout}\n${npm.stderr}`);

  // The shutdown's log: the signal, then `stopped`, last, and nothing between.
  const lines = logLines(npm.stdout);
  const from = lines.findIndex((line) => line.msg === 'shutting down');
  assert.ok(from >= 0, `the log says it is shutting down:\n${npm.stdout}`);
  assert.deepEqual(lines.slice(from).map(({ level, name, msg, signal: cause, pid }) => ({ level, name, msg, pid, ...(cause ? { signal: cause } : {}) })), [
    { level: 30, name: 'start', msg: 'shutting down', pid: servicePid, signal },
    { level: 30, name: 'start', msg: 'stopped', pid: servicePid },
  ]);
  assert.ok(npm.stdout.endsWith('"msg":"stopped"}\n'), 'the output ends with the `stopped` line');
  assert.equal(withoutNpmWarnings(npm.stderr), '', 'nothing on stderr');
}

test('kill <pid of npm start>: npm exits once the service and its PostgreSQL have stopped', async () => {
  const started = await startNpm(true);
  // The key is shown once the API listens: used the moment it appears, it works.
  assert.equal(started.firstKeyStatus, 200, 'the key answers GET /v1/key/current the moment it is shown');
  process.kill(started.npm.child.pid!, 'SIGTERM');
  await assertStopped(started, 'SIGTERM');
});

test('Ctrl-C (SIGINT to npm\'s process group): the same, and PostgreSQL stops last, not at once', async () => {
  const started = await startNpm();
  assert.doesNotMatch(started.npm.stdout, /First start/, 'the second start finds the first project');
  process.kill(-started.npm.child.pid!, 'SIGINT');
  await assertStopped(started, 'SIGINT');
});
