// The whole fleet: network, database host (PostgreSQL, PgBouncer), two web and two worker hosts
// running the Procfile's processes unchanged (configured by environment only), HAProxy, and the
// client host's agent. up() first clears what a killed run left; down() removes everything.
import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { generate } from 'selfsigned';
import { procfileArgs, type ProcessKind } from '../../lib/procfile.ts';
import { ROOT } from '../support/cli.ts';
import { alive } from '../support/processes.ts';
import { Balancer, PUBLIC_URL } from './balancer.ts';
import type { AgentReply, AgentRequest } from './client-agent.ts';
import { DatabaseHost } from './database.ts';
import { createNetwork, cut, destroyNetwork, destroyNetworkSync, fleetNamespaces, HOSTS, restore, type HostName } from './hosts.ts';
import { HostProcess } from './processes.ts';

const execFileAsync = promisify(execFile);
/** Where a fleet keeps its files; outside the test run's private directory, which postgres cannot pass. */
const STATE_PARENT = '/tmp';
const STATE_PREFIX = 'pms-fleet-';
const SERVICE_READY_MS = 60_000;
const BALANCED_MS = 30_000;

export type WebHost = 'web1' | 'web2';
export type WorkerHost = 'worker1' | 'worker2';

/** One Procfile process on its host; started again with other variables when asked. */
export class ServiceHost {
  readonly kind: Exclude<ProcessKind, 'release'>;
  readonly host: WebHost | WorkerHost;
  readonly logFile: string;
  process: HostProcess | undefined;
  readonly #fleet: Fleet;

  constructor(fleet: Fleet, kind: Exclude<ProcessKind, 'release'>, host: WebHost | WorkerHost) {
    this.#fleet = fleet;
    this.kind = kind;
    this.host = host;
    this.logFile = path.join(fleet.dir, `${host}.log`);
  }

  get address(): string {
    return HOSTS[this.host];
  }

  /** Starts the process with `env` over the fleet's own; resolves once it serves. */
  async start(env: Record<string, string> = {}): Promise<number> {
    const offset = existsSync(this.logFile) ? statSync(this.logFile).size : 0;
    const ready = this.kind === 'web' ? /"msg":"gateway listening"/ : /"msg":"job workers started"/;
    this.process = new HostProcess(this.host, this.host, [process.execPath, ...procfileArgs(this.kind)], path.join(this.#fleet.dir, `${this.host}.out`), {
      cwd: ROOT, env: this.#fleet.serviceEnv(this, env),
    });
    return this.process.waitUntil('its ready line', () => existsSync(this.logFile) && ready.test(readFileSync(this.logFile, 'utf8').slice(offset)), SERVICE_READY_MS);
  }

  async stop(): Promise<void> {
    await this.process?.stop('SIGTERM', 15_000);
  }
}

export interface FleetOptions {
  /** Processes' LOG_LEVEL. */
  logLevel?: string;
}

export class Fleet {
  readonly dir: string;
  readonly db: DatabaseHost;
  readonly balancer: Balancer;
  readonly web: Record<WebHost, ServiceHost>;
  readonly worker: Record<WorkerHost, ServiceHost>;
  readonly client: FleetClient;
  readonly tls: { cert: string; key: string; certFile: string; keyFile: string };
  readonly #secrets = {
    sealingKey: randomBytes(32).toString('base64'),
    auditSigningKey: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
  };
  readonly #options: FleetOptions;
  /** Where web and worker connect: PostgreSQL itself or PgBouncer. */
  via: 'postgres' | 'pgbouncer' = 'postgres';

  private constructor(dir: string, tls: Fleet['tls'], options: FleetOptions) {
    this.dir = dir;
    this.tls = tls;
    this.#options = options;
    const password = () => randomBytes(18).toString('base64url');
    this.db = new DatabaseHost(dir, { owner: password(), web: password(), admin: password() });
    this.balancer = new Balancer(dir);
    this.web = { web1: new ServiceHost(this, 'web', 'web1'), web2: new ServiceHost(this, 'web', 'web2') };
    this.worker = { worker1: new ServiceHost(this, 'worker', 'worker1'), worker2: new ServiceHost(this, 'worker', 'worker2') };
    this.client = new FleetClient(this, tls.cert);
  }

  /** Builds and starts the whole fleet. On failure it is torn down again before the error is thrown. */
  static async up(options: FleetOptions = {}): Promise<Fleet> {
    await clearStale();
    const dir = path.join(STATE_PARENT, `${STATE_PREFIX}${process.pid}`);
    mkdirSync(dir, { mode: 0o755 });
    tearDownOnSignal(dir);
    let fleet: Fleet | undefined;
    try {
      await createNetwork();
      fleet = new Fleet(dir, await certificate(dir), options);
      await fleet.#start();
      return fleet;
    } catch (err) {
      if (fleet) await fleet.down();
      else await teardown(dir);
      throw err;
    }
  }

  async #start(): Promise<void> {
    await this.db.start();
    await this.release();
    await Promise.all([...Object.values(this.web), ...Object.values(this.worker)].map((service) => service.start()));
    await this.balancer.start({ cert: this.tls.cert, key: this.tls.key, caFile: this.tls.certFile });
    await this.client.start();
    await this.balanced();
  }

  /** Resolves once HAProxy has both web hosts in rotation. */
  async balanced(timeoutMs = BALANCED_MS): Promise<number> {
    const started = Date.now();
    for (;;) {
      const servers = await this.balancer.servers();
      if (servers.web1?.status === 'UP' && servers.web2?.status === 'UP') return Date.now() - started;
      if (Date.now() - started > timeoutMs) throw new Error(`HAProxy has not both web hosts up after ${timeoutMs} ms: ${JSON.stringify(servers)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  serviceEnv(service: ServiceHost, extra: Record<string, string>): NodeJS.ProcessEnv {
    const base: NodeJS.ProcessEnv = { ...process.env };
    for (const name of Object.keys(base)) if (name.startsWith('TEST_') || name.startsWith('NODE_TEST')) delete base[name];
    const own: Record<string, string> = {
      DATABASE_URL: this.db.url('web', this.via),
      LOG_FILE: service.logFile,
      LOG_LEVEL: this.#options.logLevel ?? 'info',
      DATA_DIR: path.join(this.dir, `${service.host}-data`),
    };
    if (service.kind === 'web') {
      Object.assign(own, {
        HOST: service.address, PORT: '8443', HTTP_PORT: '8080',
        TLS_CERT_FILE: this.tls.certFile, TLS_KEY_FILE: this.tls.keyFile,
        TRUST_PROXY: 'true', PUBLIC_URL, SEALING_KEY: this.#secrets.sealingKey,
      });
    } else {
      own.AUDIT_SIGNING_KEY = this.#secrets.auditSigningKey;
    }
    return { ...base, ...own, ...extra };
  }

  /** Procfile `release`, from the first web host, as the schema's owner. */
  async release(): Promise<void> {
    const release = new HostProcess('release', 'web1', [process.execPath, ...procfileArgs('release')], path.join(this.dir, 'release.out'), {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: this.db.url('owner'), LOG_FILE: path.join(this.dir, 'release.log'), DATA_DIR: path.join(this.dir, 'release-data') },
    });
    const exit = await release.exited;
    if (exit.code !== 0) throw new Error(`release exited ${JSON.stringify(exit)}:\n${release.output()}\n${readFileSync(path.join(this.dir, 'release.log'), 'utf8').slice(-3000)}`);
  }

  /** A workspace command as the owner, over the database's Unix socket; its JSON output. */
  async workspace(...args: string[]): Promise<any> {
    const socketUrl = `postgres://${encodeURIComponent('pms_owner')}:${encodeURIComponent(this.db.passwords.owner)}@${encodeURIComponent(this.db.pgSocketDir)}:5432/pms`;
    const { stdout } = await execFileAsync(process.execPath, ['bin/workspace.js', ...args], {
      cwd: ROOT, timeout: 60_000,
      env: { ...process.env, DATABASE_URL: socketUrl, LOG_LEVEL: 'warn', LOG_FILE: path.join(this.dir, 'workspace.log'), DATA_DIR: path.join(this.dir, 'workspace-data') },
    });
    return JSON.parse(stdout);
  }

  cut(host: HostName): Promise<void> {
    return cut(host);
  }

  restore(host: HostName): Promise<void> {
    return restore(host);
  }

  /** Every file the service's processes, HAProxy, PgBouncer and PostgreSQL wrote. */
  logFiles(): string[] {
    return readdirSync(this.dir).filter((f) => f.endsWith('.log') || f.endsWith('.out')).map((f) => path.join(this.dir, f));
  }

  /** Stops everything, deletes the namespaces and the fleet's files. Safe to call twice. */
  async down(): Promise<void> {
    this.client.stop();
    await Promise.all([...Object.values(this.web), ...Object.values(this.worker)].map((s) => s.stop().catch(() => undefined)));
    await this.balancer.stop().catch(() => undefined);
    await this.db.stop().catch(() => undefined);
    await teardown(this.dir);
  }
}

async function teardown(dir: string): Promise<void> {
  await destroyNetwork();
  if (!process.env.TEST_KEEP_TMP) rmSync(dir, { recursive: true, force: true });
}

/** Stopped by a signal (Ctrl-C, the test runner's timeout): nothing of the fleet is left behind. */
function tearDownOnSignal(dir: string): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      destroyNetworkSync();
      if (!process.env.TEST_KEEP_TMP) rmSync(dir, { recursive: true, force: true });
      process.exit(128 + ({ SIGINT: 2, SIGTERM: 15, SIGHUP: 1 } as const)[signal]);
    });
  }
}

/** A fleet left by a run that was killed: its processes, namespaces and files. Another live run's stays. */
async function clearStale(): Promise<void> {
  const dirs = readdirSync(STATE_PARENT).filter((name) => name.startsWith(STATE_PREFIX));
  for (const name of dirs) {
    const pid = Number(name.slice(STATE_PREFIX.length));
    if (pid !== process.pid && alive(pid) && (await fleetNamespaces()).length > 0) {
      throw new Error(`another fleet run (pid ${pid}) is using the namespaces; run one at a time`);
    }
  }
  await destroyNetwork();
  for (const name of dirs) rmSync(path.join(STATE_PARENT, name), { recursive: true, force: true });
}

/** One certificate for the balancer's address and both web hosts' names (HAProxy verifies them). */
async function certificate(dir: string): Promise<Fleet['tls']> {
  const pems = await generate([{ name: 'commonName', value: 'api.fleet.test' }], {
    keyType: 'ec', curve: 'P-256', algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 86_400_000),
    extensions: [{
      name: 'subjectAltName',
      altNames: [
        { type: 2, value: 'api.fleet.test' }, { type: 2, value: 'web1.fleet.test' }, { type: 2, value: 'web2.fleet.test' },
        { type: 7, ip: HOSTS.lb }, { type: 7, ip: HOSTS.web1 }, { type: 7, ip: HOSTS.web2 },
      ],
    }],
  });
  const certFile = path.join(dir, 'fleet-cert.pem');
  const keyFile = path.join(dir, 'fleet-key.pem');
  writeFileSync(certFile, pems.cert);
  writeFileSync(keyFile, pems.private, { mode: 0o600 });
  return { cert: pems.cert, key: pems.private, certFile, keyFile };
}

/** The client host: requests sent from its namespace by test/fleet/client-agent.ts. */
export class FleetClient {
  #agent: HostProcess | undefined;
  #next = 0;
  readonly #pending = new Map<number, (reply: AgentReply) => void>();
  readonly #fleet: Fleet;
  readonly #ca: string;

  constructor(fleet: Fleet, ca: string) {
    this.#fleet = fleet;
    this.#ca = ca;
  }

  async start(): Promise<void> {
    const agent = this.#agent = new HostProcess('client', 'client', [process.execPath, path.join(import.meta.dirname, 'client-agent.ts')],
      path.join(this.#fleet.dir, 'client.out'), { cwd: ROOT, env: { ...process.env, FLEET_CA: this.#ca }, ipc: true });
    let ready = false;
    agent.child.on('message', (message: AgentReply | { ready: true }) => {
      if ('ready' in message) {
        ready = true;
        return;
      }
      const resolve = this.#pending.get(message.id);
      this.#pending.delete(message.id);
      resolve?.(message);
    });
    await agent.waitUntil('the agent\'s ready message', () => ready, 15_000);
  }

  /** `url`: a path (through the balancer) or a whole URL (a web host directly, plain HTTP …). */
  request(method: string, url: string, options: { headers?: Record<string, string>; body?: unknown; timeoutMs?: number; fresh?: boolean } = {}): Promise<AgentReply> {
    const id = ++this.#next;
    const headers: Record<string, string> = { ...options.headers };
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    const request: AgentRequest = {
      id, method, url: url.startsWith('/') ? `${PUBLIC_URL}${url}` : url, headers, body, timeoutMs: options.timeoutMs ?? 30_000, fresh: options.fresh,
    };
    return new Promise((resolve, reject) => {
      if (!this.#agent?.running) return reject(new Error('the client agent is not running'));
      this.#pending.set(id, resolve);
      this.#agent.child.send(request);
    });
  }

  /** Drops the agent's pooled connections. */
  reset(): void {
    this.#agent?.child.send({ reset: true });
  }

  stop(): void {
    if (this.#agent?.running) this.#agent.child.kill('SIGKILL');
  }
}
