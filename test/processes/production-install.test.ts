// Day one in production: a clone of the committed HEAD, `npm ci --omit=dev`, `npm start` answers
// GET /readyz, with the npm and Node a fresh machine has (this checkout's node_modules off PATH);
// and every entry point, run by a Node older than package.json's engines, says so in one line and
// exits 1 (bin/node-version.js). Uncommitted changes are not in the clone: commit first.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync, realpathSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { procfileArgs } from '../../lib/procfile.ts';
import { ROOT } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';
import { alive, dataDir, distinctFreePorts, killLeftovers, logLines, postmasterPid, readyz, run, shellEnv, watchPid, withoutNpmWarnings, type Run } from './helpers.ts';

/** A clone, `npm ci --omit=dev` (15 to 70 s with npm's cache warm) and a first start. */
const INSTALL_TIMEOUT_MS = 240_000;
/** That is the slowest test of the suite: CI runs it (it sets CI), a developer on asking. */
const CLEAN_INSTALL = process.env.CI || process.env.TEST_CLEAN_INSTALL
  ? false : 'a clean install takes up to a minute or more: set TEST_CLEAN_INSTALL=1 to run it (CI does, by CI=true)';
const READY_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 20_000;

after(killLeftovers);

const PACKAGE = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const ENGINES: string = PACKAGE.engines.node;

/** PATH without this checkout's directories (its node_modules/.bin, which npm test put first). */
function machinePath(): string {
  return (process.env.PATH ?? '').split(path.delimiter).filter((dir) => dir && !path.resolve(dir).startsWith(ROOT + path.sep)).join(path.delimiter);
}

function which(command: string, searchPath: string): string | undefined {
  for (const dir of searchPath.split(path.delimiter)) {
    const file = path.join(dir, command);
    if (existsSync(file)) return file;
  }
  return undefined;
}

async function exited(child: Run, ms: number, what: string) {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      try { process.kill(-child.child.pid!, 'SIGKILL'); } catch { /* gone */ }
      reject(new Error(`${what} within ${ms} ms:\n${child.stdout}\n${child.stderr}`));
    }, ms);
  });
  const exit = await Promise.race([child.exit, timeout]).finally(() => clearTimeout(timer));
  await child.closed;
  return exit;
}

test('a clone of HEAD: npm ci --omit=dev, then npm start answers GET /readyz over HTTPS on the Node it installed', { skip: CLEAN_INSTALL, timeout: INSTALL_TIMEOUT_MS + READY_TIMEOUT_MS }, async (t) => {
  const PATH = machinePath();
  const npm = which('npm', PATH);
  assert.ok(npm, `npm on PATH (${PATH})`);
  const work = tempDir('pms-clone-');
  const clone = path.join(work, 'checkout');
  const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  execFileSync('git', ['clone', '--quiet', '--no-checkout', ROOT, clone], { stdio: 'pipe' });
  // HEAD itself, on a branch or not.
  execFileSync('git', ['fetch', '--quiet', ROOT, 'HEAD'], { cwd: clone, stdio: 'pipe' });
  execFileSync('git', ['checkout', '--quiet', '--detach', head], { cwd: clone, stdio: 'pipe' });
  assert.equal(existsSync(path.join(clone, 'node_modules')), false, 'the clone has no node_modules');

  // TMPDIR: whatever npm leaves there goes with the clone's directory.
  const env = (settings: Record<string, string> = {}) => shellEnv({ PATH, TMPDIR: tempDir('pms-clone-tmp-'), ...settings });
  const started = Date.now();
  const ci = run(npm, ['ci', '--omit=dev', '--no-audit', '--no-fund'], env(), clone);
  const ciExit = await exited(ci, INSTALL_TIMEOUT_MS, 'npm ci --omit=dev exits');
  assert.deepEqual(ciExit, { code: 0, signal: null }, `npm ci --omit=dev:\n${ci.stdout}\n${ci.stderr}`);
  const installMs = Date.now() - started;
  assert.equal(existsSync(path.join(clone, 'node_modules', 'typescript')), false, 'no devDependency is installed');
  // The `node` dependency's install script ran: npm scripts get a Node the engines allow.
  const installed = path.join(clone, 'node_modules', '.bin', 'node');
  const version = execFileSync(installed, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
  assert.ok(Number(version.split('.')[0]) >= minimumMajor(), `node_modules/.bin/node is Node.js ${version}`);

  const dir = dataDir();
  const [port, httpPort, pgPort] = await distinctFreePorts(3);
  const start = run(npm, ['start'], env({ DATA_DIR: dir, PORT: String(port), HTTP_PORT: String(httpPort), EMBEDDED_PG_PORT: String(pgPort) }), clone);
  let gone = false;
  void start.exit.then(() => { gone = true; });
  await waitFor(() => `npm start answering /readyz on ${port}:\n${start.stdout}\n${start.stderr}`, async () => {
    if (gone) throw new Error(`npm start exited while starting:\n${start.stdout}\n${start.stderr}`);
    return (await readyz(port)) === 200 ? true : undefined;
  }, READY_TIMEOUT_MS, 200);
  const listening = logLines(start.stdout).find((line) => line.msg === 'gateway listening');
  assert.ok(listening, `the log says the gateway listens:\n${start.stdout}`);
  const servicePid = listening.pid as number;
  watchPid(servicePid);
  const postgresPid = postmasterPid(dir);
  if (postgresPid) watchPid(postgresPid, 'SIGQUIT');
  // The service runs on the clone's own Node, though npm itself may run on an older one.
  if (existsSync(`/proc/${servicePid}/exe`)) {
    assert.equal(readlinkSync(`/proc/${servicePid}/exe`), realpathSync(installed), 'the service runs on node_modules/.bin/node');
  }

  process.kill(start.child.pid!, 'SIGTERM');
  const stop = await exited(start, STOP_TIMEOUT_MS, 'npm start exits on SIGTERM');
  assert.deepEqual(stop, { code: 0, signal: null }, `npm start's exit:\n${start.stdout}\n${start.stderr}`);
  assert.equal(alive(servicePid), false, 'the service is gone');
  assert.equal(postmasterPid(dir), undefined, 'its PostgreSQL stopped');
  assert.equal(withoutNpmWarnings(start.stderr), '', 'nothing on stderr');
  t.diagnostic(`clone and npm ci --omit=dev: ${(installMs / 1000).toFixed(1)} s; Node.js ${version} installed`);
});

/** The major version of `>=N` (the engines range this test knows how to read). */
function minimumMajor(): number {
  const found = /^>=\s*v?(\d+)(\.\d+){0,2}$/.exec(ENGINES.trim());
  assert.ok(found, `package.json engines.node is ${JSON.stringify(ENGINES)}: this test reads only ">=N"`);
  return Number(found[1]);
}

/** Nodes on this machine older than the engines allow (their version and real path), this checkout's aside. */
function olderNodes(): Array<{ file: string; version: string; execPath: string }> {
  const candidates = new Set(['/usr/bin/node', '/usr/local/bin/node']);
  for (const dir of machinePath().split(path.delimiter)) candidates.add(path.join(dir, 'node'));
  const found = new Map<string, { file: string; version: string; execPath: string }>();
  for (const file of candidates) {
    if (!existsSync(file)) continue;
    const [version, execPath] = execFileSync(file, ['-p', 'process.versions.node + " " + process.execPath'], { encoding: 'utf8' }).trim().split(' ') as [string, string];
    if (Number(version.split('.')[0]) < minimumMajor() && !found.has(execPath)) found.set(execPath, { file, version, execPath });
  }
  return [...found.values()];
}

/** Every way the service is started: the Procfile's lines and the npm scripts, as the shell runs them. */
function entryPoints(): Array<{ what: string; name: string; command: string }> {
  const procfile = (['release', 'web', 'worker'] as const).map((kind) => ({ what: `Procfile ${kind}`, name: kind, command: ['node', ...procfileArgs(kind)].join(' ') }));
  const scripts = ['start', 'web', 'worker', 'release', 'workspace', 'test', 'test:faults'].map((name) => ({
    what: `npm run ${name}`,
    name,
    command: `${PACKAGE.scripts[name]}${name === 'workspace' ? ' project create --name Never' : ''}`,
  }));
  return [...procfile, ...scripts];
}

test('each entry point on a Node older than the engines allow: one line naming the versions needed and found, exit 1', async (t) => {
  const nodes = olderNodes();
  if (nodes.length === 0) return t.skip(`no Node.js older than ${ENGINES} on this machine (looked on PATH and in /usr/bin, /usr/local/bin)`);
  for (const old of nodes) {
    // `node` is the old one: the shell of a platform, or npm's without node_modules/.bin/node.
    const bin = tempDir('pms-old-node-');
    symlinkSync(old.file, path.join(bin, 'node'));
    const env = shellEnv({ PATH: [bin, machinePath()].join(path.delimiter), DATA_DIR: path.join(bin, 'data') });
    for (const entry of entryPoints()) {
      const child = run('sh', ['-c', entry.command], env);
      const exit = await exited(child, 30_000, `${entry.what} on Node.js ${old.version} exits`);
      const what = `${entry.what} (${entry.command}) on Node.js ${old.version}`;
      assert.equal(child.stderr, `${entry.name}: needs Node.js ${ENGINES} (package.json engines.node); found Node.js ${old.version} (${old.execPath}).\n`, what);
      assert.equal(child.stdout, '', `${what}: stdout`);
      assert.deepEqual(exit, { code: 1, signal: null }, what);
    }
    t.diagnostic(`Node.js ${old.version} (${old.file}): ${entryPoints().length} entry points refused in one line`);
  }
});
