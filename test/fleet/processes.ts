// A program run on one of the fleet's hosts (`ip netns exec`, which execs it in place, so the pid is
// the program's), optionally as another user (setpriv, which execs too); its output kept in a file.
// Every one still running when this process exits is killed with it.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { namespaceOf, type HostName } from './hosts.ts';
import { PROGRAMS } from './packages.ts';

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) {
    try { child.kill('SIGKILL'); } catch { /* gone */ }
  }
});

export interface HostProcessOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Run as this user (postgres for PostgreSQL and PgBouncer, which refuse root). */
  user?: string;
  /** 'ipc': a channel to the child (the client agent), besides the output file. */
  ipc?: boolean;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export function tailOf(file: string, chars = 3000): string {
  if (!existsSync(file)) return '(no output)';
  const text = readFileSync(file, 'utf8');
  return text.length > chars ? `…${text.slice(-chars)}` : text;
}

export class HostProcess {
  readonly name: string;
  readonly host: HostName;
  readonly outFile: string;
  readonly child: ChildProcess;
  readonly exited: Promise<Exit>;
  #exit: Exit | undefined;

  constructor(name: string, host: HostName, command: string[], outFile: string, options: HostProcessOptions = {}) {
    this.name = name;
    this.host = host;
    this.outFile = outFile;
    const asUser = options.user ? [PROGRAMS.setpriv, `--reuid=${options.user}`, `--regid=${options.user}`, '--init-groups', '--'] : [];
    const out = openSync(outFile, 'a');
    const stdio: StdioOptions = options.ipc ? ['ignore', out, out, 'ipc'] : ['ignore', out, out];
    try {
      this.child = spawn('ip', ['netns', 'exec', namespaceOf(host), ...asUser, ...command], { env: options.env ?? process.env, cwd: options.cwd, stdio });
    } finally {
      closeSync(out);
    }
    live.add(this.child);
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        live.delete(this.child);
        this.#exit = { code, signal };
        resolve(this.#exit);
      });
    });
  }

  get running(): boolean {
    return this.#exit === undefined;
  }

  get pid(): number {
    return this.child.pid!;
  }

  output(): string {
    return existsSync(this.outFile) ? readFileSync(this.outFile, 'utf8') : '';
  }

  /** Waits until `ready()` holds, failing early (with the output) if the program exits. */
  async waitUntil(what: string, ready: () => boolean | Promise<boolean>, timeoutMs: number): Promise<number> {
    const started = Date.now();
    for (;;) {
      if (!this.running) throw new Error(`${this.name} exited (${JSON.stringify(this.#exit)}) before ${what}:\n${tailOf(this.outFile)}`);
      if (await ready()) return Date.now() - started;
      if (Date.now() - started > timeoutMs) throw new Error(`${this.name}: no ${what} within ${timeoutMs} ms:\n${tailOf(this.outFile)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** `signal`, then SIGKILL past `timeoutMs`. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<Exit> {
    if (!this.running) return this.#exit!;
    this.child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), timeoutMs); });
    const exit = await Promise.race([this.exited, late]);
    clearTimeout(timer);
    if (exit) return exit;
    this.child.kill('SIGKILL');
    return this.exited;
  }

  /** Stops (SIGSTOP) or continues (SIGCONT) the program where it is. */
  pause(paused: boolean): void {
    if (this.running) this.child.kill(paused ? 'SIGSTOP' : 'SIGCONT');
  }
}
