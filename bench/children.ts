// The bench's child processes: started from the project root, collected so they all stop together.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.join(import.meta.dirname, '..');

export class Children {
  private readonly all: ChildProcess[] = [];

  /** A node process; 'ipc' lets the reference servers say when they listen. */
  start(args: string[], env: Record<string, string | undefined>, stdout: 'ignore' | 'pipe' = 'ignore'): ChildProcess {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', stdout, 'inherit', 'ipc'] });
    this.all.push(child);
    return child;
  }

  /** Runs a command to its end; its standard output, or an error if it did not exit 0. */
  async output(args: string[], env: Record<string, string | undefined>): Promise<string> {
    const child = this.start(args, env, 'pipe');
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => { text += chunk; });
    const code = await finished(child);
    if (code !== 0) throw new Error(`${args.join(' ')} exited ${code}`);
    return text;
  }

  async stopAll(): Promise<void> {
    for (const child of this.all) child.kill('SIGTERM');
    await Promise.all(this.all.map((c) => (c.exitCode === null ? finished(c) : Promise.resolve(0))));
  }
}

export function finished(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code ?? 1)));
}
