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
  /** The HTTPS origin clients reach (the 301's Location); absent: the HTTPS listener's own. */
  publicUrl: string | undefined;
  /** A connection that has not finished its TLS handshake by then is destroyed. */
  tlsHandshakeTimeoutMs: number;
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
  /** Refused authentications one client address may cause per minute before 429 (0: no bound). */
  authRefusalsPerMinute: number;
  /** How long a 429 for too many refusals is held before it is answered. */
  authRefusalDelayMs: number;
  /** Keys a web process recognises from memory (gateway/known-keys.ts); 0: every call looks its key up. */
  keyMemorySize: number;
  /** Event streams one web process holds at once; past it, 503. */
  maxEventStreams: number;
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

/** PUBLIC_URL: an https origin (scheme, host, optional port), without path, query or credentials. */
function publicOrigin(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`PUBLIC_URL must be an https origin such as https://api.example.com, got ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'https:' || url.username || url.password || url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) {
    throw new Error(`PUBLIC_URL must be an https origin such as https://api.example.com, got ${JSON.stringify(raw)}`);
  }
  return url.origin;
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
    publicUrl: publicOrigin(env.PUBLIC_URL),
    // Long enough for a slow mobile handshake (a few round trips), short enough that a flood of
    // sockets that never speak is gone in seconds, not Node's 120 s.
    tlsHandshakeTimeoutMs: int(env, 'TLS_HANDSHAKE_TIMEOUT_MS', 10_000),
    headersTimeoutMs: int(env, 'HEADERS_TIMEOUT_MS', 10_000),
    // The largest body is 200,000 bytes: 30 s is 6.7 kB/s, slower than any honest client.
    requestTimeoutMs: int(env, 'REQUEST_TIMEOUT_MS', 30_000),
    // One descriptor each: well under a production open-file limit, with room for the database
    // pools and log files; far above what one 2-core process serves well.
    maxConnections: Math.max(1, int(env, 'MAX_CONNECTIONS', 4096)),
    // An API client needs a handful; a NAT of many clients a few hundred. Behind a proxy
    // (TRUST_PROXY) every connection comes from the proxy, so this bound does not apply there.
    maxConnectionsPerAddress: int(env, 'MAX_CONNECTIONS_PER_ADDRESS', 256),
    // HTTP/1.1 clients rarely pipeline at all; 8 keeps the pool fed without letting one socket
    // queue unbounded work.
    maxPipelinedRequests: Math.max(1, int(env, 'MAX_PIPELINED_REQUESTS', 8)),
    // Half of what one pool thread runs at once (TASKS_PER_THREAD): one address alone still keeps
    // the process busy, and it starts no more than this in a turn of the event loop, which an
    // honest client elsewhere waits out at most.
    maxRequestsPerAddress: int(env, 'MAX_REQUESTS_PER_ADDRESS', 16),
    // An honest client with a bad key stops after a few refusals; a guesser at thousands a second
    // is held to one database lookup per second or so after its first 60.
    authRefusalsPerMinute: int(env, 'AUTH_REFUSALS_PER_MINUTE', 60),
    // A guesser waiting for each answer then guesses once a second per connection; an honest
    // client past the budget is told to wait longer than that anyway (Retry-After).
    authRefusalDelayMs: int(env, 'AUTH_REFUSAL_DELAY_MS', 1000),
    // Far more keys than one process sees called in a while, at well under a kB each (about
    // 5 MB); a key forgotten for the bound is looked up on its next call, nothing more.
    keyMemorySize: int(env, 'KEY_MEMORY_SIZE', 10_000),
    // A stream costs a socket and a few kB; 2,000 leave room under MAX_CONNECTIONS for requests.
    maxEventStreams: int(env, 'MAX_EVENT_STREAMS', 2000),
    // About 1,000 events: a reader that far behind is better served resuming from its last id.
    eventStreamBacklogBytes: Math.max(1, int(env, 'EVENT_STREAM_BACKLOG_BYTES', 1_048_576)),
    // Proxies commonly drop a connection silent for 30-60 s.
    eventStreamHeartbeatMs: Math.max(1, int(env, 'EVENT_STREAM_HEARTBEAT_MS', 15_000)),
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
