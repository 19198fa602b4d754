// The environment, read once per process into one frozen object. Units are in the names.
import path from 'node:path';

export interface Config {
  /** External PostgreSQL; absent means the embedded server under DATA_DIR. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** Port of the embedded PostgreSQL, fixed so that `npm start` and the workspace CLI meet. */
  embeddedPgPort: number;
  host: string;
  httpsPort: number;
  httpPort: number;
  tlsCertFile: string | undefined;
  tlsKeyFile: string | undefined;
  /** Honour X-Forwarded-Proto / X-Forwarded-For from a TLS-terminating proxy. */
  trustProxy: boolean;
  logLevel: string;
  /** Append logs to this file instead of stdout. */
  logFile: string | undefined;
  workerThreads: number;
  /** Tasks one piscina thread runs at once: handlers wait on the database, not the CPU. */
  tasksPerThread: number;
  /** Requests waiting for a thread before the gateway sheds load with 503. */
  maxQueuedTasks: number;
  dbPoolSize: number;
  dbConnectTimeoutMs: number;
  dbStatementTimeoutMs: number;
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return value;
}

export function readConfig(env = process.env): Config {
  const dataDir = path.resolve(env.DATA_DIR ?? '.data');
  return Object.freeze({
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir,
    embeddedPgPort: int(env, 'EMBEDDED_PG_PORT', 54329),
    host: env.HOST || '127.0.0.1',
    httpsPort: int(env, 'PORT', 8443),
    httpPort: int(env, 'HTTP_PORT', 8080),
    tlsCertFile: env.TLS_CERT_FILE || undefined,
    tlsKeyFile: env.TLS_KEY_FILE || undefined,
    trustProxy: env.TRUST_PROXY === 'true',
    logLevel: env.LOG_LEVEL || 'info',
    logFile: env.LOG_FILE || undefined,
    // Two cores here: one thread beside the main thread keeps both busy; a second thread measured
    // no faster and costs ~35 MB more.
    workerThreads: Math.max(1, int(env, 'WORKER_THREADS', 1)),
    tasksPerThread: Math.max(1, int(env, 'TASKS_PER_THREAD', 32)),
    maxQueuedTasks: int(env, 'MAX_QUEUED_TASKS', 512),
    dbPoolSize: Math.max(1, int(env, 'DB_POOL_SIZE', 8)),
    // A database that does not answer must become a 503 quickly, never a hang.
    dbConnectTimeoutMs: int(env, 'DB_CONNECT_TIMEOUT_MS', 2000),
    dbStatementTimeoutMs: int(env, 'DB_STATEMENT_TIMEOUT_MS', 5000),
  });
}
