// The Procfile's processes as real child processes, run with the Procfile's own node arguments (lib/procfile.ts),
// against one database, for the fault suite: start them and wait until they serve, kill -9,
// SIGTERM and restart them, read what they logged; and an HTTPS client (keep-alive, trusting the
// test certificate) that reports connection errors instead of hiding them.
// Every child is killed when the test process ends, whatever way it ends: no run leaves one behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, readdirSync, statSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { procfileArgs, procfileEnv } from '../../lib/procfile.ts';
import { ROOT } from './cli.ts';
import { freePort } from './ports.ts';
import { readReply, requestParts, type Reply, type RequestOptions, type TestProject } from './service.ts';
import { tempDir } from './tmp.ts';
import { sleep } from './wait.ts';

export type ProcessKind = 'web' | 'worker';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** How long a process may take to start serving before the test gives up on it. */
const READY_TIMEOUT_MS = 45_000;
const READY_POLL_MS = 50;
/** A /healthz probe that does not answer in this long counts as "not yet". */
const PROBE_TIMEOUT_MS = 2000;
/** The worker's line once its pg-boss handlers are registered (workers/start.ts). */
const WORKER_READY = /"msg":"job workers started"/;

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the fault suite with \`node test/run.ts --faults\``);
  return value;
}

// ---------------------------------------------------------------------------------------------
// The safety net: every child this test process started dies with it.

const live = new Set<ChildProcess>();

function killAllNow(): void {
  for (const child of live) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
  }
  live.clear();
}

process.on('exit', killAllNow);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    killAllNow();
    process.exit(128 + ({ SIGINT: 2, SIGTERM: 15, SIGHUP: 1 } as const)[signal]);
  });
}

function track(child: ChildProcess): Promise<Exit> {
  live.add(child);
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    });
  });
}

/** The last `chars` characters of a file, for failure messages. */
/** Whether a process of this pid still exists (signal 0 asks without sending). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function tail(file: string, chars = 4000): string {
  if (!existsSync(file)) return '(no file)';
  const text = readFileSync(file, 'utf8');
  return text.length > chars ? `…${text.slice(-chars)}` : text;
}

// ---------------------------------------------------------------------------------------------
// One Procfile process.

export class ServiceProcess {
  readonly kind: ProcessKind;
  readonly name: string;
  /** LOG_FILE: the process appends to it across restarts. */
  readonly logFile: string;
  /** Its stdout and stderr (a crash before the logger exists lands here). */
  readonly outFile: string;
  /** HTTPS and plain-HTTP ports, fixed across restarts so clients keep their address (web only). */
  readonly port: number;
  readonly httpPort: number;
  /** How many times it was started. */
  starts = 0;
  /** Milliseconds each start took until it served (web: /healthz 200; worker: handlers registered). */
  readonly startMs: number[] = [];
  private child: ChildProcess | undefined;
  private exited: Promise<Exit> | undefined;
  private readonly group: ProcessGroup;
  private readonly extraEnv: Record<string, string>;

  constructor(group: ProcessGroup, kind: ProcessKind, name: string, ports: [number, number], extraEnv: Record<string, string>) {
    this.group = group;
    this.kind = kind;
    this.name = name;
    this.logFile = path.join(group.logDir, `${name}.log`);
    this.outFile = path.join(group.logDir, `${name}.out`);
    [this.port, this.httpPort] = ports;
    this.extraEnv = extraEnv;
  }

  get baseUrl(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves when the current child exits. */
  get exit(): Promise<Exit> {
    if (!this.exited) throw new Error(`${this.name} was never started`);
    return this.exited;
  }

  /** Spawns the process and waits until it serves; returns how long that took in ms. */
  async start(): Promise<number> {
    if (this.running) throw new Error(`${this.name} is already running`);
    const started = Date.now();
    const logOffset = existsSync(this.logFile) ? statSync(this.logFile).size : 0;
    const out = openSync(this.outFile, 'a');
    try {
      this.child = spawn(process.execPath, procfileArgs(this.kind), {
        cwd: ROOT,
        env: { ...this.group.envFor(this, this.extraEnv), ...procfileEnv(this.kind) },
        stdio: ['ignore', out, out],
      });
    } finally {
      closeSync(out);
    }
    this.exited = track(this.child);
    this.starts += 1;
    const child = this.child;
    let gone: Exit | undefined;
    void this.exited.then((exit) => { if (this.child === child) gone = exit; });
    const deadline = started + READY_TIMEOUT_MS;
    for (;;) {
      if (gone) throw new Error(`${this.name} exited while starting (${JSON.stringify(gone)}):\n${tail(this.outFile)}\n${tail(this.logFile)}`);
      if (await this.ready(logOffset)) break;
      if (Date.now() > deadline) {
        await this.kill9();
        throw new Error(`${this.name} did not become ready within ${READY_TIMEOUT_MS} ms:\n${tail(this.outFile)}\n${tail(this.logFile)}`);
      }
      await sleep(READY_POLL_MS);
    }
    const ms = Date.now() - started;
    this.startMs.push(ms);
    return ms;
  }

  private async ready(logOffset: number): Promise<boolean> {
    if (this.kind === 'worker') {
      if (!existsSync(this.logFile)) return false;
      return WORKER_READY.test(readFileSync(this.logFile, 'utf8').slice(logOffset));
    }
    try {
      const reply = await probe(this.baseUrl, '/healthz', this.group.ca);
      return reply.status === 200;
    } catch {
      return false;
    }
  }

  /** kill -9, then waits for the exit. */
  async kill9(): Promise<Exit | undefined> {
    if (!this.running) return undefined;
    this.child!.kill('SIGKILL');
    return this.exited;
  }

  /**
   * SIGTERM; waits up to `timeoutMs` for the exit. A process still running then is killed -9 (so the
   * test never hangs) and reported with `timedOut: true`.
   */
  async terminate(timeoutMs = 20_000): Promise<Exit & { ms: number; timedOut: boolean }> {
    if (!this.running) throw new Error(`${this.name} is not running`);
    const started = Date.now();
    this.child!.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), timeoutMs); });
    const exit = await Promise.race([this.exited!, timeout]);
    clearTimeout(timer);
    if (exit) return { ...exit, ms: Date.now() - started, timedOut: false };
    const killed = (await this.kill9())!;
    return { ...killed, ms: Date.now() - started, timedOut: true };
  }

  async restart(): Promise<number> {
    await this.kill9();
    return this.start();
  }

  /** What this process logged (all its starts). */
  logText(): string {
    return existsSync(this.logFile) ? readFileSync(this.logFile, 'utf8') : '';
  }
}

// ---------------------------------------------------------------------------------------------
// The processes of one database.

export interface OneShot extends Exit {
  stdout: string;
  stderr: string;
}

export class ProcessGroup {
  readonly databaseUrl: string;
  /** Every LOG_FILE and output file of this group is under here. */
  readonly logDir: string;
  readonly ca: Buffer;
  readonly processes: ServiceProcess[] = [];
  private readonly clients: ApiClient[] = [];
  private releases = 0;

  constructor(databaseUrl: string, label = 'faults') {
    this.databaseUrl = databaseUrl;
    this.logDir = tempDir(`pms-${label}-`);
    this.ca = readFileSync(env('TEST_TLS_CERT_FILE'));
  }

  envFor(proc: ServiceProcess | { logFile: string }, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    const own: Record<string, string> = {
      DATABASE_URL: this.databaseUrl,
      HOST: '127.0.0.1',
      TLS_CERT_FILE: env('TEST_TLS_CERT_FILE'),
      TLS_KEY_FILE: env('TEST_TLS_KEY_FILE'),
      // TEST_SERVICE_LOG_LEVEL=debug shows, among other things, what pg-boss's workers hold.
      LOG_LEVEL: process.env.TEST_SERVICE_LOG_LEVEL ?? 'info',
      LOG_FILE: proc.logFile,
      // Never the checkout's own .data: nothing here may start or touch an embedded server.
      DATA_DIR: path.join(this.logDir, 'data'),
    };
    if (proc instanceof ServiceProcess) {
      own.PORT = String(proc.port);
      own.HTTP_PORT = String(proc.httpPort);
    }
    const base: NodeJS.ProcessEnv = { ...process.env };
    // The test run's own variables are no business of the service.
    for (const name of Object.keys(base)) if (name.startsWith('TEST_') || name.startsWith('NODE_TEST')) delete base[name];
    return { ...base, ...own, ...extra };
  }

  /** Procfile `release`: runs to its end; fails the test unless it exits 0. */
  async release(timeoutMs = 60_000): Promise<void> {
    const logFile = path.join(this.logDir, `release-${++this.releases}.log`);
    const outcome = await this.runOnce(procfileArgs('release'), this.envFor({ logFile }), timeoutMs);
    if (outcome.code !== 0) throw new Error(`release exited ${JSON.stringify(outcome)}:\n${tail(logFile)}`);
  }

  /** A `web` process (not started yet), on ports of its own. */
  async web(name: string, extraEnv: Record<string, string> = {}): Promise<ServiceProcess> {
    const proc = new ServiceProcess(this, 'web', name, [await freePort(), await freePort()], extraEnv);
    this.processes.push(proc);
    return proc;
  }

  /** A `worker` process (not started yet). */
  worker(name: string, extraEnv: Record<string, string> = {}): ServiceProcess {
    const proc = new ServiceProcess(this, 'worker', name, [0, 0], extraEnv);
    this.processes.push(proc);
    return proc;
  }

  async startWeb(name: string, extraEnv: Record<string, string> = {}): Promise<ServiceProcess> {
    const proc = await this.web(name, extraEnv);
    await proc.start();
    return proc;
  }

  async startWorker(name: string, extraEnv: Record<string, string> = {}): Promise<ServiceProcess> {
    const proc = this.worker(name, extraEnv);
    await proc.start();
    return proc;
  }

  /** A keep-alive HTTPS client of one web process, trusting the test certificate. */
  client(web: ServiceProcess, options: ClientOptions = {}): ApiClient {
    const client = new ApiClient(web.baseUrl, this.ca, options);
    this.clients.push(client);
    return client;
  }

  /** A workspace command on this group's database, to its end; its JSON output. */
  async workspace(...args: string[]): Promise<any> {
    const outcome = await this.runOnce(['bin/workspace.ts', ...args],
      this.envFor({ logFile: path.join(this.logDir, 'workspace.log') }, { LOG_LEVEL: 'warn' }), 60_000);
    if (outcome.code !== 0) throw new Error(`workspace ${args.join(' ')} exited ${outcome.code}: ${outcome.stderr}`);
    return JSON.parse(outcome.stdout);
  }

  /** `workspace project create --name <name>` on this group's database. */
  async createProject(name: string): Promise<TestProject> {
    const made = await this.workspace('project', 'create', '--name', name);
    return { projectId: made.project.id, consumerId: made.consumer.id, keyId: made.key.id, key: made.key.key };
  }

  /** Runs a command of the checkout to its end (killed -9 past `timeoutMs`). */
  runOnce(args: string[], childEnv: NodeJS.ProcessEnv, timeoutMs: number): Promise<OneShot> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, args, { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
      const exited = track(child);
      let stdout = '';
      let stderr = '';
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; });
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('error', (err) => { clearTimeout(timer); reject(err); });
      void exited.then((exit) => {
        clearTimeout(timer);
        // 'exit' can come before the pipes are drained.
        setImmediate(() => resolve({ ...exit, stdout, stderr }));
      });
    });
  }

  /** Every file a process of this group logged to (LOG_FILEs and stdout/stderr captures). */
  logFiles(): string[] {
    return readdirSync(this.logDir).filter((f) => f.endsWith('.log') || f.endsWith('.out')).map((f) => path.join(this.logDir, f));
  }

  /** Kills -9 every process of this group still running and closes the clients. Safe to call twice. */
  async stopAll(): Promise<void> {
    for (const client of this.clients) client.destroy();
    await Promise.all(this.processes.map((p) => p.kill9()));
  }
}

// ---------------------------------------------------------------------------------------------
// The HTTPS client.

export interface ClientOptions {
  /** Connections kept per process (default: as many as needed). */
  maxSockets?: number;
  /** A request not answered in this long is destroyed with code ETESTTIMEOUT (default 30 s). */
  timeoutMs?: number;
  /**
   * Send a request once more after a stale pooled connection (see ApiClient.request). Only where
   * the process is never killed: a process killed under a request resets it the same way, and it
   * may have committed the change.
   */
  retryStaleConnections?: boolean;
}

export interface CallOptions extends RequestOptions {
  timeoutMs?: number;
}

/** A request the client gave up on, or a connection error (ECONNRESET, ECONNREFUSED …). */
export class ConnectionError extends Error {
  readonly code: string;
  /** A reset of a pooled connection before any answer (see ApiClient.request). */
  staleConnection = false;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * How long a pooled connection must have been idle for its reset to count as the keep-alive race:
 * the web closes a connection idle for 5 s (Node's keepAliveTimeout), and the outage's clients
 * back off for seconds. A reset of a connection used more recently than this is the server's
 * doing, and fails the request as any other.
 */
const STALE_IDLE_MS = 3000;
/** When each pooled socket was last handed back to its agent. */
const freedAt = new WeakMap<object, number>();

let staleConnectionRetries = 0;
/** How many requests ApiClient sent again after a stale pooled connection (for a suite's figures). */
export const staleRetries = () => staleConnectionRetries;

export class ApiClient {
  readonly baseUrl: string;
  private agent: https.Agent;
  private readonly ca: Buffer;
  private readonly options: ClientOptions;

  constructor(baseUrl: string, ca: Buffer, options: ClientOptions = {}) {
    this.baseUrl = baseUrl;
    this.ca = ca;
    this.options = options;
    this.agent = this.newAgent();
  }

  private newAgent(): https.Agent {
    const agent = new https.Agent({ keepAlive: true, ca: this.ca, maxSockets: this.options.maxSockets ?? Infinity });
    agent.on('free', (socket: object) => freedAt.set(socket, Date.now()));
    return agent;
  }

  /** Drops every pooled connection (e.g. after the process behind them was killed). */
  reset(): void {
    this.agent.destroy();
    this.agent = this.newAgent();
  }

  destroy(): void {
    this.agent.destroy();
  }

  /**
   * Rejects with a ConnectionError when no answer arrives (refused, reset, timed out). A pooled
   * connection idle for seconds and reset before any answer is the race Node documents for
   * keep-alive clients (the server closed it as idle while the request was on its way; the server
   * read nothing of it): with retryStaleConnections the request is sent once more on a new one.
   */
  async request(method: string, pathAndQuery: string, options: CallOptions = {}): Promise<Reply> {
    try {
      return await this.send(method, pathAndQuery, options);
    } catch (err) {
      if (!(this.options.retryStaleConnections && err instanceof ConnectionError && err.staleConnection)) throw err;
      staleConnectionRetries += 1;
      return this.send(method, pathAndQuery, options);
    }
  }

  private send(method: string, pathAndQuery: string, options: CallOptions): Promise<Reply> {
    const { headers, payload } = requestParts(options);
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs ?? 30_000;
    return new Promise((resolve, reject) => {
      const req = https.request(new URL(pathAndQuery, this.baseUrl), { method, headers, agent: this.agent });
      const timer = setTimeout(() => req.destroy(new ConnectionError('ETESTTIMEOUT', `no answer to ${method} ${pathAndQuery} within ${timeoutMs} ms`)), timeoutMs);
      req.on('response', (res) => {
        readReply(res).then((reply) => { clearTimeout(timer); resolve(reply); }, (err: Error & { code?: string }) => {
          clearTimeout(timer);
          reject(err instanceof ConnectionError ? err : new ConnectionError(err.code ?? 'EBODY', err.message));
        });
      });
      let answered = false;
      let idleMs = 0;
      req.on('socket', (socket) => { idleMs = Date.now() - (freedAt.get(socket) ?? Date.now()); });
      req.on('error', (err: Error & { code?: string }) => {
        clearTimeout(timer);
        if (err instanceof ConnectionError) return reject(err);
        const failure = new ConnectionError(err.code ?? 'EUNKNOWN', err.message);
        failure.staleConnection = req.reusedSocket && !answered && err.code === 'ECONNRESET' && idleMs >= STALE_IDLE_MS;
        reject(failure);
      });
      req.on('response', () => { answered = true; });
      req.end(payload);
    });
  }
}

/** One request on a connection of its own, for readiness probes. */
function probe(baseUrl: string, pathAndQuery: string, ca: Buffer): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = https.request(new URL(pathAndQuery, baseUrl), { method: 'GET', ca, agent: false });
    req.setTimeout(PROBE_TIMEOUT_MS, () => req.destroy(new Error('probe timeout')));
    req.on('response', (res) => { readReply(res).then(resolve, reject); });
    req.on('error', reject);
    req.end();
  });
}
