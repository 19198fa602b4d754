// The workspace command line (`node bin/workspace.ts <command>`) run against a test's own database:
// one JSON object on stdout and exit 0, or a message on stderr and a non-zero exit.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { TestService } from './service.ts';

export const ROOT = path.resolve(import.meta.dirname, '..', '..');

export interface CliOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the command line on the service's database; a run still going after `timeoutMs` is killed. */
export function runWorkspace(service: TestService, args: string[], timeoutMs = 60_000): Promise<CliOutcome> {
  return runNode(['bin/workspace.ts', ...args], { env: { ...process.env, DATABASE_URL: service.databaseUrl, LOG_LEVEL: 'warn' }, timeoutMs });
}

/** The environment of this test process without the test run's own variables (and DATABASE_URL). */
export function serviceEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) {
    if (name === 'DATABASE_URL' || name.startsWith('TEST_') || name.startsWith('NODE_TEST')) delete env[name];
  }
  return { ...env, ...extra };
}

/** `node <args>` in `cwd` (default: this checkout) with `env`; a run still going after `timeoutMs` is killed. */
export function runNode(args: string[], options: { env: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number }): Promise<CliOutcome> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: options.cwd ?? ROOT,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (err) => { clearTimeout(timer); reject(err); });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Exit 0 and exactly one line on stdout holding one JSON object; returns that object. */
export function assertCliSucceeded(outcome: CliOutcome, what = ''): Record<string, any> {
  const label = what ? `${what}: ` : '';
  assert.equal(outcome.signal, null, `${label}killed: ${outcome.stderr}`);
  assert.equal(outcome.code, 0, `${label}exit ${outcome.code}: ${outcome.stderr}`);
  assert.match(outcome.stdout, /^[^\n]+\n$/, `${label}exactly one line on stdout`);
  const value = JSON.parse(outcome.stdout);
  assert.equal(typeof value, 'object');
  assert.ok(value !== null && !Array.isArray(value), `${label}a JSON object`);
  return value;
}

/** A non-zero exit (not a kill), a message on stderr, nothing on stdout. */
export function assertCliFailed(outcome: CliOutcome, what: string): void {
  assert.equal(outcome.signal, null, `${what}: killed`);
  assert.equal(typeof outcome.code, 'number', what);
  assert.notEqual(outcome.code, 0, `${what}: exit code`);
  assert.equal(outcome.stdout, '', `${what}: stdout`);
  assert.ok(outcome.stderr.trim().length > 0, `${what}: a message on stderr`);
}

/** A command that must succeed; returns the JSON object it printed. */
export async function workspaceOk(service: TestService, args: string[]): Promise<Record<string, any>> {
  return assertCliSucceeded(await runWorkspace(service, args), `workspace ${args.join(' ')}`);
}

/** A command that must fail. */
export async function workspaceFails(service: TestService, args: string[]): Promise<CliOutcome> {
  const outcome = await runWorkspace(service, args);
  assertCliFailed(outcome, `workspace ${args.join(' ')}`);
  return outcome;
}
