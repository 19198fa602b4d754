// The service started as a person starts it (`npm start`, `node bin/web.ts`): a child process in
// the checkout, with the environment of a shell (none of the test run's or npm's variables, no
// DATABASE_URL: the embedded PostgreSQL) plus a DATA_DIR and ports of its own; output captured.
// Whatever such a child leaves running when the test process ends (the test failed half-way) is
// killed, its PostgreSQL too.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, readFileSync } from 'node:fs';
import https from 'node:https';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { ROOT } from '../support/cli.ts';
import { alive } from '../support/processes.ts';
import { freePort } from '../support/ports.ts';
import { tempDir } from '../support/tmp.ts';

/** Variables of the test run, of npm, and the service's own settings: none reach the child. */
const NOT_PASSED = /^(TEST_|NODE_TEST|npm_)|^(DATABASE_URL|DATA_DIR|HOST|PORT|HTTP_PORT|EMBEDDED_PG_PORT|LOG_FILE|LOG_LEVEL|TLS_CERT_FILE|TLS_KEY_FILE|PUBLIC_URL)$/;

/** The npm running this test (`npm test`), else the one on PATH. */
const NPM_CLI = process.env.npm_execpath;

export function shellEnv(settings: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!NOT_PASSED.test(name)) env[name] = value;
  return { ...env, ...settings };
}

/** A DATA_DIR under a temporary directory the embedded PostgreSQL's own user can reach (as root). */
export function dataDir(): string {
  const parent = tempDir('pms-start-');
  chmodSync(parent, 0o755);
  return path.join(parent, 'data');
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Run {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  /** The child itself has exited. */
  exit: Promise<Exit>;
  /** Its output has ended too: nothing it started holds stdout or stderr any more. */
  closed: Promise<void>;
}

const children = new Set<ChildProcess>();
/** Service processes and PostgreSQL servers seen running, by pid, with the signal that ends them. */
const pids = new Map<number, NodeJS.Signals>();

/**
 * Kills what is still running: each child's process group, every process watched. For an after
 * hook: a leftover holding the output pipes would keep the test process from ever ending.
 */
export function killLeftovers(): void {
  for (const child of children) {
    try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ }
  }
  for (const [pid, signal] of pids) if (alive(pid)) process.kill(pid, signal);
}
process.on('exit', killLeftovers);

/** Remembers a process to kill should the test end with it still running (SIGQUIT: PostgreSQL's immediate stop). */
export function watchPid(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  pids.set(pid, signal);
}

/**
 * Spawns `command args` in the checkout (or `cwd`), in a process group of its own (as a shell runs
 * a job). `node` and `npm` are this test's own; any other command is looked up in env.PATH.
 */
export function run(command: string, args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): Run {
  const [file, argv] = command === 'node' ? [process.execPath, args]
    : command !== 'npm' ? [command, args]
    : NPM_CLI ? [process.execPath, [NPM_CLI, ...args]] : ['npm', args];
  const child = spawn(file, argv, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.add(child);
  const result: Run = {
    child,
    stdout: '',
    stderr: '',
    exit: new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal }))),
    closed: new Promise((resolve) => child.on('close', () => {
      children.delete(child);
      resolve();
    })),
  };
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => { result.stdout += chunk; });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { result.stderr += chunk; });
  return result;
}

/** Lines npm writes itself about this machine's configuration (`npm warn Unknown user config …`). */
export function withoutNpmWarnings(text: string): string {
  return text.split('\n').filter((line) => !line.startsWith('npm warn ')).join('\n');
}

/** The JSON log lines among the output, parsed. */
export function logLines(stdout: string): Array<Record<string, unknown>> {
  return stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line));
}

/** A GET over HTTPS (the self-signed certificate accepted), `key` its bearer: its status, or 0 when nothing answers. */
function statusOf(port: number, path: string, key?: string): Promise<number> {
  return new Promise((resolve) => {
    const headers = key ? { authorization: `Bearer ${key}` } : {};
    const req = https.get({ host: '127.0.0.1', port, path, headers, rejectUnauthorized: false, agent: false, timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

export const healthz = (port: number): Promise<number> => statusOf(port, '/healthz');

/** 200 while the process reaches its database. */
export const readyz = (port: number): Promise<number> => statusOf(port, '/readyz');

/** The status of GET /v1/key/current with `key`. */
export const keyCurrent = (port: number, key: string): Promise<number> => statusOf(port, '/v1/key/current', key);

/** `count` loopback ports free at the moment of asking, no two the same. */
export async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** Whether a loopback port can be bound right now. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A plain TCP server holding a loopback port, as another program would. */
export function holdPort(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => socket.destroy());
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/** The pid in the first line of the embedded PostgreSQL's postmaster.pid, if it is there. */
export function postmasterPid(dir: string): number | undefined {
  const file = path.join(dir, 'pg', 'postmaster.pid');
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  return pid > 0 ? pid : undefined;
}

export { alive };
