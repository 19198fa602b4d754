// A test file's own service: a database cloned from the migrated template, the real gateway on
// loopback HTTPS (port 0), its worker pool, and (unless told not to) the pg-boss job workers.
import { readFileSync } from 'node:fs';
import https from 'node:https';
import http from 'node:http';
import path from 'node:path';
import pg from 'pg';
import { createProject } from '../../domain/projects.ts';
import type { Services } from '../../domain/services.ts';
import { startGateway, type Gateway } from '../../gateway/server.ts';
import { readConfig, type Config } from '../../lib/config.ts';
import { createPool } from '../../lib/pool.ts';
import { startProducer } from '../../lib/jobs.ts';
import { createLogger } from '../../lib/log.ts';
import { startJobWorkers, type JobWorkers } from '../../workers/start.ts';
import { cloneDatabase } from '../citus/databases.ts';
import { checkAcceptedRequest, checkReplyAgainstDocument } from './openapi-check.ts';
import { testObjectName } from './postgres.ts';
import { tempDir } from './tmp.ts';
import { waitFor } from './wait.ts';

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The parsed JSON body (undefined when the body is not JSON). */
  body: any;
}

export interface RequestOptions {
  key?: string;
  /** An object is sent as JSON; a string or Buffer as it is. */
  body?: unknown;
  headers?: Record<string, string | number>;
}

export interface TestProject {
  projectId: string;
  consumerId: string;
  keyId: string;
  key: string;
}

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests with \`npm test\` (test/run.ts)`);
  return value;
}

export function databaseUrl(database: string): string {
  const u = new URL(env('TEST_PG_ADMIN_URL'));
  u.pathname = `/${database}`;
  return u.toString();
}

/** A fresh database cloned from the migrated template (named for the run, which drops it at its end). */
export async function createTestDatabase(): Promise<string> {
  const name = testObjectName();
  const admin = new pg.Client({ connectionString: env('TEST_PG_ADMIN_URL') });
  await admin.connect();
  try {
    await cloneDatabase(admin, env('TEST_PG_ADMIN_URL'), name, env('TEST_TEMPLATE_DB'));
  } finally {
    await admin.end();
  }
  return databaseUrl(name);
}

function asRole(url: string, role: { user: string; password: string }): string {
  const u = new URL(url);
  u.username = role.user;
  u.password = role.password;
  return u.toString();
}

export interface ServiceOptions {
  /** Start the pg-boss job workers too (default true). */
  jobWorkers?: boolean;
  /** Override the database URL the gateway uses (e.g. an unreachable one), or derive it from the test's own. */
  databaseUrl?: string | ((own: string) => string);
  /** Run the gateway and the job workers as this login role instead of the administrator. */
  role?: { user: string; password: string };
  env?: Record<string, string>;
}

export class TestService {
  readonly config: Config;
  readonly db: pg.Pool;
  readonly services: Services;
  readonly baseUrl: string;
  readonly httpUrl: string;
  readonly logFile: string;
  readonly databaseUrl: string;
  private readonly gateway: Gateway;
  private readonly workers: JobWorkers | undefined;
  private readonly agent: https.Agent;

  private constructor(fields: {
    config: Config; db: pg.Pool; services: Services; gateway: Gateway; workers: JobWorkers | undefined;
    logFile: string; databaseUrl: string;
  }) {
    this.config = fields.config;
    this.db = fields.db;
    this.services = fields.services;
    this.gateway = fields.gateway;
    this.workers = fields.workers;
    this.logFile = fields.logFile;
    this.databaseUrl = fields.databaseUrl;
    this.baseUrl = `https://127.0.0.1:${this.gateway.httpsPort}`;
    this.httpUrl = `http://127.0.0.1:${this.gateway.httpPort}`;
    this.agent = new https.Agent({ keepAlive: true, ca: readFileSync(this.config.tlsCertFile!) });
  }

  static async start(options: ServiceOptions = {}): Promise<TestService> {
    const url = await createTestDatabase();
    const logFile = path.join(tempDir('pms-log-'), 'service.log');
    const config = readConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      HTTP_PORT: '0',
      TLS_CERT_FILE: env('TEST_TLS_CERT_FILE'),
      TLS_KEY_FILE: env('TEST_TLS_KEY_FILE'),
      LOG_LEVEL: 'info',
      LOG_FILE: logFile,
      WORKER_THREADS: '1',
      DB_POOL_SIZE: '4',
      // What a process keeps on disk (the audit signing key) stays in the run's temporary files.
      DATA_DIR: tempDir('pms-data-'),
      ...options.env,
    });
    const log = createLogger(config.logLevel, 'test', logFile);
    const db = createPool(config, log, url, 4);
    const services: Services = { pool: db, db, boss: await startProducer(db, log), log, config };
    const serviceUrl = options.role ? asRole(url, options.role) : url;
    const workers = options.jobWorkers === false ? undefined : await startJobWorkers(config, log, serviceUrl);
    const gatewayUrl = typeof options.databaseUrl === 'function' ? options.databaseUrl(serviceUrl) : options.databaseUrl;
    const gateway = await startGateway(config, log, gatewayUrl ?? serviceUrl);
    return new TestService({ config, db, services, gateway, workers, logFile, databaseUrl: url });
  }

  async stop(): Promise<void> {
    this.agent.destroy();
    await this.gateway.stop();
    await this.workers?.stop();
    await this.services.boss.stop({ graceful: false });
    await this.db.end();
  }

  /** The metrics listeners' ports, when `env` gave METRICS_PORT or WORKER_METRICS_PORT. */
  get metricsPorts(): { web: number | undefined; worker: number | undefined } {
    return { web: this.gateway.metricsPort, worker: this.workers?.metricsPort };
  }

  /** A project made the way the workspace command line makes one. */
  async createProject(name = 'Test project'): Promise<TestProject> {
    const made = await createProject(this.services, { origin: 'workspace', ip: '127.0.0.1' }, name);
    return { projectId: made.project.id, consumerId: made.consumer.id, keyId: made.key.id, key: made.key.key };
  }

  request(method: string, pathAndQuery: string, options: RequestOptions = {}): Promise<Reply> {
    const { headers, payload } = requestParts(options);
    const sent = (retry: boolean): Promise<Reply> => {
      const req = https.request(new URL(pathAndQuery, this.baseUrl), { method, headers, agent: this.agent });
      return send(req, payload).catch((err: unknown) => {
        // An idle keep-alive connection the server closed just as this request took it (Node's
        // documented race, likelier on a loaded machine): the server never read it, so once more.
        if (retry && req.reusedSocket && (err as NodeJS.ErrnoException).code === 'ECONNRESET') return sent(false);
        throw err;
      });
    };
    return sent(true).then((reply) => {
      checkAcceptedRequest(method, pathAndQuery, sentJson(options.body), reply.status);
      return reply;
    });
  }

  /** The same request over the plain-HTTP listener. */
  plainRequest(method: string, pathAndQuery: string, headers: Record<string, string> = {}): Promise<Reply> {
    return send(http.request(new URL(pathAndQuery, this.httpUrl), { method, headers }), undefined);
  }

  /** Waits until the project holds `count` events (the audit worker runs asynchronously). */
  async waitForEvents(projectId: string, count: number, timeoutMs = 10_000): Promise<void> {
    let n = 0;
    await waitFor(() => `project ${projectId} has ${n} events, wanted ${count}`, async () => {
      const { rows } = await this.db.query('SELECT count(*)::int AS n FROM events WHERE project_id = $1', [projectId]);
      n = rows[0].n;
      return n >= count ? true : undefined;
    }, timeoutMs);
  }

  /** Waits until no event waits in audit_outbox and no audit job is pending or running. */
  async waitForJobsDrained(timeoutMs = 10_000): Promise<void> {
    const started = Date.now();
    await waitFor('events still waiting in audit_outbox', async () => {
      const { rows } = await this.db.query('SELECT EXISTS (SELECT 1 FROM audit_outbox) AS waiting');
      return rows[0].waiting ? undefined : true;
    }, timeoutMs);
    await this.waitForJobsIdle(['audit.write', 'audit.drain'], Math.max(1000, timeoutMs - (Date.now() - started)));
  }

  /** Waits until no job of these queues is pending or running. */
  async waitForJobsIdle(queues: string[], timeoutMs = 10_000): Promise<void> {
    let n = 0;
    await waitFor(() => `${n} ${queues.join('/')} jobs still pending`, async () => {
      const { rows } = await this.db.query(
        "SELECT count(*)::int AS n FROM pgboss.job WHERE name = ANY($1) AND state IN ('created', 'retry', 'active')", [queues]);
      n = rows[0].n;
      return n === 0 ? true : undefined;
    }, timeoutMs);
  }

  logText(): string {
    return readFileSync(this.logFile, 'utf8');
  }
}

/** Headers and bytes of a test request: the key as a Bearer header, an object body as JSON. */
/** A request body as JSON, when it is JSON. */
function sentJson(body: RequestOptions['body']): unknown {
  if (body === undefined) return undefined;
  if (!Buffer.isBuffer(body) && typeof body !== 'string') return body;
  try {
    return JSON.parse(body.toString());
  } catch {
    return undefined;
  }
}

export function requestParts(options: RequestOptions): { headers: Record<string, string | number>; payload: Buffer | undefined } {
  const headers: Record<string, string | number> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  let payload: Buffer | undefined;
  if (options.body !== undefined) {
    payload = Buffer.isBuffer(options.body) ? options.body
      : Buffer.from(typeof options.body === 'string' ? options.body : JSON.stringify(options.body));
    if (headers['content-type'] === undefined) headers['content-type'] = 'application/json';
    if (headers['content-length'] === undefined && headers['transfer-encoding'] === undefined) headers['content-length'] = payload.length;
  }
  return { headers, payload };
}

function send(req: http.ClientRequest, payload: Buffer | undefined): Promise<Reply> {
  return new Promise((resolve, reject) => {
    req.on('response', (res) => { readReply(res).then(resolve, reject); });
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * Reads a response to its end: the status, the headers, the text and, when it is JSON, the body;
 * and checks it against the OpenAPI document (openapi-check.ts), so an answer the document does
 * not describe fails the test that received it.
 */
export function readReply(res: http.IncomingMessage): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try { body = JSON.parse(text); } catch { body = undefined; }
      const reply = { status: res.statusCode ?? 0, headers: res.headers, text, body };
      try {
        // Node keeps the request a response answers on it; its types do not say so.
        const { method, path } = (res as http.IncomingMessage & { req: http.ClientRequest }).req;
        checkReplyAgainstDocument(method, path, reply);
      } catch (err) {
        return reject(err);
      }
      resolve(reply);
    });
    res.on('error', reject);
  });
}
