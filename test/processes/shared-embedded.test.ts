// The embedded PostgreSQL is shared by the processes of one checkout that find it running (web,
// worker, `npm start`, the workspace): the last one to leave stops it, whoever started it
// (lib/open-database.ts). Before, whoever started it stopped it on leaving, and took the database
// from every process still using it: a web process restarted alone left its worker answering
// nothing, a workspace command ending under a running `npm start` left it answering 503 for good.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { waitFor } from '../support/wait.ts';
import { alive, dataDir, distinctFreePorts, killLeftovers, postmasterPid, readyz, run, shellEnv, watchPid } from './helpers.ts';

/** A first start runs initdb and the migrations: allow for a slow machine. */
const READY_TIMEOUT_MS = 90_000;

const dir = dataDir();
after(killLeftovers);

/**
 * Whether a process runs: alive and not a zombie. The server outlives the worker that started it,
 * and once it exits nobody may reap it here (its new parent is whatever adopts orphans).
 */
function running(pid: number): boolean {
  if (!alive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] !== 'Z';
  } catch {
    return false;
  }
}

test('a process leaving while another uses the embedded server leaves it running; the last one to leave stops it, whoever started it', async () => {
  const [port, httpPort, pgPort] = (await distinctFreePorts(3)) as [number, number, number];
  const env = shellEnv({ DATA_DIR: dir, PORT: String(port), HTTP_PORT: String(httpPort), EMBEDDED_PG_PORT: String(pgPort) });

  const release = run('node', ['bin/release.ts'], env);
  assert.deepEqual(await release.exit, { code: 0, signal: null }, release.stderr);
  assert.equal(postmasterPid(dir), undefined, 'release, alone, stopped the server it started');

  // The worker starts the server; web, started once the worker is up, finds it running.
  const worker = run('node', ['bin/worker.ts'], env);
  await waitFor(() => `the worker up:\n${worker.stdout}\n${worker.stderr}`,
    async () => (worker.stdout.includes('"msg":"job workers started"') ? true : undefined), READY_TIMEOUT_MS, 100);
  const postgresPid = postmasterPid(dir)!;
  assert.ok(postgresPid, 'the worker started the server');
  watchPid(postgresPid, 'SIGQUIT');
  const web = run('node', ['bin/web.ts'], env);
  await waitFor(() => `web reaching its database:\n${web.stdout}\n${web.stderr}`,
    async () => ((await readyz(port)) === 200 ? true : undefined), READY_TIMEOUT_MS, 200);
  assert.match(web.stdout, /"msg":"embedded PostgreSQL already running; connecting to it"/);

  // The worker, which started it, leaves while web still has its sessions there.
  worker.child.kill('SIGTERM');
  assert.deepEqual(await worker.exit, { code: 0, signal: null }, worker.stderr);
  assert.match(worker.stdout, /"msg":"embedded PostgreSQL left running: other processes use it"/);
  assert.equal(running(postgresPid), true, 'the server runs on for web');
  assert.equal(await readyz(port), 200, 'web still reaches its database');

  // web, the last, leaves, and stops the server it did not start.
  web.child.kill('SIGTERM');
  assert.deepEqual(await web.exit, { code: 0, signal: null }, web.stderr);
  assert.equal(postmasterPid(dir), undefined, 'shut down cleanly (postmaster.pid removed)');
  assert.equal(running(postgresPid), false, 'the server has stopped');
});
