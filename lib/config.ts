// The environment, read once per process into one frozen object. Units are in the names.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { StartupError } from './startup-error.ts';

export interface Config {
  /** External PostgreSQL; absent means the embedded server under DATA_DIR. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** Port of the embedded PostgreSQL, fixed so that `npm start` and the workspace CLI meet. */
  embeddedPgPort: number;
  host: string;
  httpsPort: number;
  httpPort: number;
  /** The metrics listeners of web and worker (lib/metrics.ts); absent: none. */
  metricsPort: number | undefined;
  workerMetricsPort: number | undefined;
  tlsCertFile: string | undefined;
  tlsKeyFile: string | undefined;
  /** Honour X-Forwarded-Proto / X-Forwarded-For from a TLS-terminating proxy. */
  trustProxy: boolean;
  /** The HTTPS origin clients reach (the 301's Location); absent: the HTTPS listener's own. */
  publicUrl: string | undefined;
  /** A connection that has not finished its TLS handshake by then is destroyed. */
  tlsHandshakeTimeoutMs: number;
  /** New connections' handshakes while the event loop is busy (gateway/handshake-admission.ts). */
  handshakeBusy: number;
  handshakeBurst: number;
  handshakeFloorGapMs: number;
  /** A request whose head, or whole request, has not arrived by then gets 408 and is closed. */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** Open connections per process (both listeners), and per client address (0: no bound). */
  maxConnections: number;
  maxConnectionsPerAddress: number;
  /** Requests one connection may have unanswered before the gateway stops reading it. */
  maxPipelinedRequests: number;
  /** Requests one client address may have in progress over all its connections (0: no bound). */
  maxRequestsPerAddress: number;
  /** Requests one key, one project, and the process may have in progress once authenticated (0: no bound). */
  maxRequestsPerKey: number;
  maxRequestsPerProject: number;
  maxRequestsInProgress: number;
  /** Requests one project may have in progress while another project is served too (0: no such bound). */
  maxRequestsPerProjectShared: number;
  /** How long a connection's answer may go untaken by its client before the connection is closed. */
  unreadOutputTimeoutMs: number;
  /** Answers waiting for their clients, over the process, past which the stalled ones are cut. */
  unreadOutputMaxBytes: number;
  /** Refused authentications one client address may cause per minute before 429 (0: no bound). */
  authRefusalsPerMinute: number;
  /** How long a 429 for too many refusals is held before it is answered. */
  authRefusalDelayMs: number;
  keyRefusalFloorMs: number;
  /** Keys a web process recognises from memory; 0: every call looks its key up. */
  keyMemorySize: number;
  /** Event streams one web process holds at once; past it, 503. */
  maxEventStreams: number;
  maxEventStreamsPerProject: number;
  /** Bytes a stream's reader may leave unread before the stream is closed (it resumes by its last id). */
  eventStreamBacklogBytes: number;
  /** How often a stream carries a comment line, so proxies keep the connection. */
  eventStreamHeartbeatMs: number;
  logLevel: string;
  /** Append logs to this file instead of stdout. */
  logFile: string | undefined;
  workerThreads: number;
  /** Tasks one piscina thread runs at once: handlers wait on the database, not the CPU. */
  tasksPerThread: number;
  /** Requests waiting for a thread before the gateway sheds load with 503. */
  maxQueuedTasks: number;
  dbPoolSize: number;
  dbLanes: number;
  dbConnectTimeoutMs: number;
  dbStatementTimeoutMs: number;
  /** How long the database host may leave the web process's watch unanswered (lib/database-watch.ts); 0: no watch. */
  dbSilenceMs: number;
  /** The audit checkpoints' Ed25519 key (PKCS#8 PEM); absent: one made once under dataDir. */
  auditSigningKey: string | undefined;
  /** The least time between two checkpoints of one project. */
  checkpointIntervalS: number;
  /** AES-256-GCM key (base64 of 32 bytes) sealing stored secrets and kept answers; absent: one made once under dataDir. */
  sealingKey: string | undefined;
  /** Webhook URLs may name loopback and private addresses (tests on one machine). */
  webhookAllowPrivate: boolean;
  /** Seconds before each retry of a failed delivery; past the last, the delivery is given up. */
  webhookRetryScheduleS: readonly number[];
  /** A delivery attempt's whole bound: resolving, connecting, the answer's head and its first 64 kB. */
  webhookTimeoutMs: number;
  /** Delivery attempts one worker process has in flight at once, in all and at one endpoint. */
  webhookMaxInFlight: number;
  webhookMaxInFlightPerEndpoint: number;
}

/** The largest delay a Node timer takes (2^31 - 1 ms), and PostgreSQL's largest timeout. */
const MAX_MS = 2_147_483_647;
const MAX_PORT = 65_535;

/** A whole decimal in [min, max], or `fallback`; else stops (`Number()` takes " " as 0, "0x1F" as 31). */
function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0, max = MAX_MS): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= min && value <= max)) throw new StartupError(`${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}.`);
  return value;
}

function optionalPort(env: NodeJS.ProcessEnv, name: string): number | undefined {
  return env[name] === undefined || env[name] === '' ? undefined : int(env, name, 0, 0, MAX_PORT);
}

/** The retry schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h. */
const WEBHOOK_RETRY_SCHEDULE_S = [5, 300, 1800, 7200, 18_000, 36_000, 50_400, 72_000, 86_400];

/** Comma-separated whole seconds, at least one, each at most a week. */
function seconds(env: NodeJS.ProcessEnv, name: string, fallback: readonly number[]): readonly number[] {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const values = raw.split(',').map((part) => part.trim());
  if (!values.every((value) => /^\d+$/.test(value) && Number(value) <= 604_800)) {
    throw new StartupError(`${name} must be whole seconds separated by commas, such as 5,300,1800, got ${JSON.stringify(raw)}.`);
  }
  return Object.freeze(values.map(Number));
}

/** SEALING_KEY: the base64 of exactly 32 bytes; the message does not echo it. */
function sealingKey(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  if (!/^[A-Za-z0-9+/]{43}=$/.test(raw.trim())) throw new StartupError('SEALING_KEY must be the base64 of 32 random bytes, such as `openssl rand -base64 32` prints.');
  return raw.trim();
}

function bool(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  throw new StartupError(`${name} must be true or false, got ${JSON.stringify(raw)}.`);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function logLevel(raw: string | undefined): string {
  if (raw === undefined || raw === '') return 'info';
  if (!LOG_LEVELS.includes(raw.toLowerCase())) throw new StartupError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(raw)}.`);
  return raw.toLowerCase();
}

/** LOG_FILE, appended to: its directory must be there (pino would fail later, with a stack). */
function logFile(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  if (!existsSync(path.dirname(path.resolve(raw)))) throw new StartupError(`LOG_FILE ${JSON.stringify(raw)} is in a directory that does not exist.`);
  return raw;
}

/** TLS_CERT_FILE and TLS_KEY_FILE: both or neither (neither: the self-signed pair). */
function tlsFiles(env: NodeJS.ProcessEnv): { tlsCertFile: string | undefined; tlsKeyFile: string | undefined } {
  const tlsCertFile = env.TLS_CERT_FILE || undefined;
  const tlsKeyFile = env.TLS_KEY_FILE || undefined;
  if ((tlsCertFile === undefined) !== (tlsKeyFile === undefined)) {
    throw new StartupError(`TLS_CERT_FILE and TLS_KEY_FILE go together: ${tlsCertFile ? 'TLS_KEY_FILE' : 'TLS_CERT_FILE'} is not set.`);
  }
  return { tlsCertFile, tlsKeyFile };
}

/** DATABASE_URL must be a postgres:// URL; the message does not echo it, as it may hold a password. */
function databaseUrl(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  let protocol: string | undefined;
  try {
    protocol = new URL(raw).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
    throw new StartupError('DATABASE_URL must be a postgres:// URL such as postgres://user:password@host:5432/database.');
  }
  return raw;
}

/** PUBLIC_URL: an https origin (scheme, host, optional port), without path, query or credentials. */
function publicOrigin(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new StartupError(`PUBLIC_URL must be an https origin such as https://api.example.com, got ${JSON.stringify(raw)}.`);
  }
  if (url.protocol !== 'https:' || url.username || url.password || url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) {
    throw new StartupError(`PUBLIC_URL must be an https origin such as https://api.example.com, got ${JSON.stringify(raw)}.`);
  }
  return url.origin;
}

export function readConfig(env = process.env): Config {
  const dataDir = path.resolve(env.DATA_DIR ?? '.data');
  return Object.freeze({
    databaseUrl: databaseUrl(env.DATABASE_URL),
    dataDir,
    embeddedPgPort: int(env, 'EMBEDDED_PG_PORT', 54329, 1, MAX_PORT),
    host: env.HOST || '127.0.0.1',
    // 0: any free port (the tests' choice).
    httpsPort: int(env, 'PORT', 8443, 0, MAX_PORT),
    httpPort: int(env, 'HTTP_PORT', 8080, 0, MAX_PORT),
    metricsPort: optionalPort(env, 'METRICS_PORT'),
    workerMetricsPort: optionalPort(env, 'WORKER_METRICS_PORT'),
    ...tlsFiles(env),
    trustProxy: bool(env, 'TRUST_PROXY'),
    publicUrl: publicOrigin(env.PUBLIC_URL),
    // Enough for a slow mobile handshake; a flood of silent sockets is gone in seconds.
    tlsHandshakeTimeoutMs: int(env, 'TLS_HANDSHAKE_TIMEOUT_MS', 10_000, 1),
    // Half the loop: the other half keeps its clients' answers near their quiet speed.
    handshakeBusy: int(env, 'HANDSHAKE_BUSY_PERCENT', 50, 1, 100) / 100,
    // A busy process still takes a burst of new clients at once (a fleet's reconnect)...
    handshakeBurst: int(env, 'HANDSHAKE_BURST', 256, 1, 1_000_000),
    // ...and then 100 a second.
    handshakeFloorGapMs: int(env, 'HANDSHAKE_FLOOR_GAP_MS', 10, 1, 60_000),
    headersTimeoutMs: int(env, 'HEADERS_TIMEOUT_MS', 10_000, 1),
    // Sending the largest body this slowly is slower than any honest client.
    requestTimeoutMs: int(env, 'REQUEST_TIMEOUT_MS', 30_000, 1),
    // Well under an open-file limit, with room for database pools and logs.
    maxConnections: int(env, 'MAX_CONNECTIONS', 4096, 1),
    // A NAT of many clients needs a few hundred. Not applied behind a proxy (TRUST_PROXY).
    maxConnectionsPerAddress: int(env, 'MAX_CONNECTIONS_PER_ADDRESS', 256),
    maxPipelinedRequests: int(env, 'MAX_PIPELINED_REQUESTS', 8, 1),
    // Half of TASKS_PER_THREAD: one address alone keeps the process busy but cannot starve others.
    maxRequestsPerAddress: int(env, 'MAX_REQUESTS_PER_ADDRESS', 16),
    // As an address's: one key cannot take the process from many addresses either.
    maxRequestsPerKey: int(env, 'MAX_REQUESTS_PER_KEY', 16),
    // A pool thread's tasks: a project of many keys keeps the process busy, and no more.
    maxRequestsPerProject: int(env, 'MAX_REQUESTS_PER_PROJECT', 32),
    // Past what the process serves well, projects take turns instead of all piling on the database.
    maxRequestsInProgress: int(env, 'MAX_REQUESTS_IN_PROGRESS', 256),
    // Served in turn with another: the other's request waits behind one of its own, not several.
    maxRequestsPerProjectShared: int(env, 'MAX_REQUESTS_PER_PROJECT_SHARED', 1),
    // As long as a head may take to arrive: a client that has taken nothing for that long is gone.
    unreadOutputTimeoutMs: int(env, 'UNREAD_OUTPUT_TIMEOUT_MS', 10_000, 1),
    // Small beside what a web process holds idle; a client that reads is never cut for it.
    unreadOutputMaxBytes: int(env, 'UNREAD_OUTPUT_MAX_BYTES', 64 * 1024 * 1024, 1, Number.MAX_SAFE_INTEGER),
    // An honest client with a bad key stops after a few; a guesser is then held to about one a second.
    authRefusalsPerMinute: int(env, 'AUTH_REFUSALS_PER_MINUTE', 60),
    // A guesser waiting for each answer then guesses once a second per connection.
    authRefusalDelayMs: int(env, 'AUTH_REFUSAL_DELAY_MS', 1000),
    // Above the slowest way a key is refused, so every refusal takes the same time.
    keyRefusalFloorMs: int(env, 'KEY_REFUSAL_FLOOR_MS', 5),
    keyMemorySize: int(env, 'KEY_MEMORY_SIZE', 10_000),
    // Leaves room under MAX_CONNECTIONS for requests.
    maxEventStreams: int(env, 'MAX_EVENT_STREAMS', 2000),
    // A tenth of the process's places: one tenant cannot take the others' streams.
    maxEventStreamsPerProject: int(env, 'MAX_EVENT_STREAMS_PER_PROJECT', 200, 1),
    eventStreamBacklogBytes: int(env, 'EVENT_STREAM_BACKLOG_BYTES', 1_048_576, 1, Number.MAX_SAFE_INTEGER),
    // Under the silence after which proxies drop a connection; twice it must fit a timer.
    eventStreamHeartbeatMs: int(env, 'EVENT_STREAM_HEARTBEAT_MS', 15_000, 1, Math.floor(MAX_MS / 2)),
    auditSigningKey: env.AUDIT_SIGNING_KEY || undefined,
    checkpointIntervalS: int(env, 'CHECKPOINT_INTERVAL_S', 60, 1, 86_400),
    sealingKey: sealingKey(env.SEALING_KEY),
    webhookAllowPrivate: bool(env, 'WEBHOOK_ALLOW_PRIVATE'),
    webhookRetryScheduleS: seconds(env, 'WEBHOOK_RETRY_SCHEDULE_S', WEBHOOK_RETRY_SCHEDULE_S),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 15_000, 1, 600_000),
    // Each holds a socket and an answer of at most 64 kB: memory stays flat whatever the backlog.
    webhookMaxInFlight: int(env, 'WEBHOOK_MAX_IN_FLIGHT', 128, 1, 10_000),
    // A slow endpoint holds this many of the process's places at most, the rest serve the others.
    webhookMaxInFlightPerEndpoint: int(env, 'WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT', 8, 1, 1000),
    logLevel: logLevel(env.LOG_LEVEL),
    logFile: logFile(env.LOG_FILE),
    // One thread beside the main thread keeps two cores busy.
    workerThreads: int(env, 'WORKER_THREADS', 1, 1, 256),
    tasksPerThread: int(env, 'TASKS_PER_THREAD', 32, 1),
    maxQueuedTasks: int(env, 'MAX_QUEUED_TASKS', 512),
    dbPoolSize: int(env, 'DB_POOL_SIZE', 8, 1, 1000),
    dbLanes: int(env, 'DB_LANES', 2, 0, 1000),
    // A database that does not answer must become a 503 quickly, never a hang (0 would be no bound).
    dbConnectTimeoutMs: int(env, 'DB_CONNECT_TIMEOUT_MS', 2000, 1),
    dbStatementTimeoutMs: int(env, 'DB_STATEMENT_TIMEOUT_MS', 5000, 1),
    dbSilenceMs: int(env, 'DB_SILENCE_MS', 1000, 0),
  });
}
