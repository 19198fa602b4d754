// As root, a checkout under a private (0700) directory runs its embedded PostgreSQL as the user
// postgres from root's copy of the binaries, data in its own .data/pg. On such a clone: the CLI
// makes the cluster and stops it; a web process starts it again and the CLI shares it meanwhile;
// both changes show, the server runs as postgres; SIGTERM to web stops PostgreSQL too.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { assertCliSucceeded, ROOT, runNode, serviceEnv } from '../support/cli.ts';
import { freePort } from '../support/ports.ts';
import { alive } from '../processes/helpers.ts';
import { waitFor } from '../support/wait.ts';

const AS_ROOT = process.getuid?.() === 0;
/** What a clone holds that the entry points need (besides node_modules). */
const CHECKOUT = ['package.json', 'Procfile', 'tsconfig.json', 'bin', 'lib', 'sql', 'domain', 'gateway', 'workers'];

function readyz(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = https.get({ host: '127.0.0.1', port, path: '/readyz', rejectUnauthorized: false, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200 ? 200 : undefined);
    });
    req.on('error', () => resolve(undefined));
    req.on('timeout', () => req.destroy());
  });
}

test('as root, a clone under a 0700 directory runs its embedded PostgreSQL with the data in its ./.data', {
  skip: AS_ROOT ? false : 'not running as root: only as root does the embedded server run as another user (postgres), who cannot pass through a private directory',
  timeout: 180_000,
}, async (t) => {
  const parent = mkdtempSync(path.join(tmpdir(), 'pms-private-'));
  assert.equal(statSync(parent).mode & 0o777, 0o700, 'mkdtemp makes a private directory');
  const clone = path.join(parent, 'clone');
  const pgDir = path.join(clone, '.data', 'pg');
  mkdirSync(clone);
  for (const entry of CHECKOUT) cpSync(path.join(ROOT, entry), path.join(clone, entry), { recursive: true });
  // Hard links keep the binaries inside the private directory, where `npm ci` would put them.
  const linked = spawnSync('cp', ['-al', path.join(ROOT, 'node_modules'), clone], { encoding: 'utf8' });
  if (linked.status !== 0) {
    t.diagnostic(`node_modules symlinked, not hard-linked (${linked.stderr.trim()}): the binaries stay reachable`);
    rmSync(path.join(clone, 'node_modules'), { recursive: true, force: true });
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(clone, 'node_modules'));
  }
  const pgPort = await freePort();
  const env = serviceEnv({ EMBEDDED_PG_PORT: String(pgPort), LOG_LEVEL: 'warn' });
  delete env.DATA_DIR;
  const workspace = (args: string[]) => runNode(['bin/workspace.ts', ...args], { cwd: clone, env, timeoutMs: 90_000 });
  let web: ReturnType<typeof spawn> | undefined;
  try {
    // A fresh checkout: the cluster is made in .data/pg, as the postgres user's.
    const made = assertCliSucceeded(await workspace(['project', 'create', '--name', 'Private clone']), 'project create');
    assert.ok(existsSync(path.join(pgDir, 'PG_VERSION')), 'the cluster is in the clone\'s .data/pg');
    const postgresUid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    assert.equal(statSync(pgDir).uid, postgresUid, 'the data directory belongs to postgres');
    assert.equal(statSync(parent).mode & 0o777, 0o700, 'the private directory stays private');
    assert.ok(!existsSync(path.join(pgDir, 'postmaster.pid')), 'the command line stopped the server it started');

    // A web process starts it again; the command line finds it running and shares it.
    const httpsPort = await freePort();
    web = spawn(process.execPath, ['bin/web.ts'], {
      cwd: clone,
      env: { ...env, PORT: String(httpsPort), HTTP_PORT: String(await freePort()), LOG_FILE: path.join(parent, 'web.log') },
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((resolve) => web!.once('exit', (code) => resolve(code)));
    await waitFor(() => `web /readyz 200:\n${existsSync(path.join(parent, 'web.log')) ? readFileSync(path.join(parent, 'web.log'), 'utf8').slice(-2000) : ''}`,
      () => readyz(httpsPort), 60_000, 200);
    const planned = assertCliSucceeded(await workspace(['plan', 'set', made.project.id, '--app-limit', '7']), 'plan set');
    assert.deepEqual(planned, { project: { id: made.project.id }, plan: { custom_apps: true, app_limit: 7, rate_limit: null } });

    // The server: run as postgres, in the clone's .data/pg; both changes in its database.
    const postmaster = Number(readFileSync(path.join(pgDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    assert.equal(statSync(`/proc/${postmaster}`).uid, postgresUid, 'PostgreSQL runs as postgres');
    assert.equal(readlinkSync(`/proc/${postmaster}/cwd`), pgDir, 'in the clone\'s data directory');
    const password = readFileSync(path.join(clone, '.data', 'pg.password'), 'utf8').trim();
    const client = new pg.Client({ connectionString: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${pgPort}/pms` });
    await client.connect();
    try {
      const { rows } = await client.query(
        'SELECT p.name, pl.app_limit FROM projects p JOIN plans pl ON pl.project_id = p.id WHERE p.id = $1', [made.project.id]);
      assert.deepEqual(rows, [{ name: 'Private clone', app_limit: 7 }]);
    } finally {
      await client.end();
    }

    // SIGTERM: the web process finishes, and stops the PostgreSQL it started.
    web.kill('SIGTERM');
    assert.equal(await exited, 0, 'web exits 0 on SIGTERM');
    web = undefined;
    assert.ok(!alive(postmaster), 'PostgreSQL stopped with the web process');
    assert.ok(!existsSync(path.join(pgDir, 'postmaster.pid')));
  } finally {
    web?.kill('SIGKILL');
    try {
      const pid = Number(readFileSync(path.join(pgDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      if (pid > 0) process.kill(pid, 'SIGQUIT');
    } catch { /* not running */ }
    rmSync(parent, { recursive: true, force: true });
  }
});
