// The environment a process reads (lib/config.ts, README "Configuration"): a value it cannot use
// stops every process at start with one line on stderr naming the variable, exit 1, no stack;
// `Number()`'s leniency (" " as 0, "0x1F", "1e3") and out-of-range values that would lift a bound
// or break a timer are refused alike. The workspace command line says in one line that the
// database cannot be reached.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readConfig } from '../../lib/config.ts';
import { StartupError } from '../../lib/startup-error.ts';
import { runNode, serviceEnv } from '../support/cli.ts';

const REFUSED: Array<[Record<string, string>, string]> = [
  [{ PORT: 'abc' }, 'PORT must be a whole number from 0 to 65535, got "abc".'],
  [{ PORT: ' ' }, 'PORT must be a whole number from 0 to 65535, got " ".'],
  [{ PORT: '0x4A3B' }, 'PORT must be a whole number from 0 to 65535, got "0x4A3B".'],
  [{ PORT: '70000' }, 'PORT must be a whole number from 0 to 65535, got "70000".'],
  [{ HTTP_PORT: '1e3' }, 'HTTP_PORT must be a whole number from 0 to 65535, got "1e3".'],
  [{ MAX_CONNECTIONS: '0' }, 'MAX_CONNECTIONS must be a whole number from 1 to 2147483647, got "0".'],
  [{ MAX_CONNECTIONS: '-1' }, 'MAX_CONNECTIONS must be a whole number from 1 to 2147483647, got "-1".'],
  [{ HEADERS_TIMEOUT_MS: '0' }, 'HEADERS_TIMEOUT_MS must be a whole number from 1 to 2147483647, got "0".'],
  [{ DB_CONNECT_TIMEOUT_MS: '0' }, 'DB_CONNECT_TIMEOUT_MS must be a whole number from 1 to 2147483647, got "0".'],
  [{ DB_STATEMENT_TIMEOUT_MS: '99999999999' }, 'DB_STATEMENT_TIMEOUT_MS must be a whole number from 1 to 2147483647, got "99999999999".'],
  [{ EVENT_STREAM_HEARTBEAT_MS: '3000000000' }, 'EVENT_STREAM_HEARTBEAT_MS must be a whole number from 1 to 1073741823, got "3000000000".'],
  [{ DB_POOL_SIZE: 'x' }, 'DB_POOL_SIZE must be a whole number from 1 to 1000, got "x".'],
  [{ MAX_EVENT_STREAMS_PER_PROJECT: '0' }, 'MAX_EVENT_STREAMS_PER_PROJECT must be a whole number from 1 to 2147483647, got "0".'],
  [{ UNREAD_OUTPUT_TIMEOUT_MS: '0' }, 'UNREAD_OUTPUT_TIMEOUT_MS must be a whole number from 1 to 2147483647, got "0".'],
  [{ UNREAD_OUTPUT_MAX_BYTES: '64MB' }, 'UNREAD_OUTPUT_MAX_BYTES must be a whole number from 1 to 9007199254740991, got "64MB".'],
  [{ TRUST_PROXY: 'TRUE' }, 'TRUST_PROXY must be true or false, got "TRUE".'],
  [{ TRUST_PROXY: '1' }, 'TRUST_PROXY must be true or false, got "1".'],
  [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose".'],
  [{ LOG_FILE: '/nonexistent/dir/x.log' }, 'LOG_FILE "/nonexistent/dir/x.log" is in a directory that does not exist.'],
  [{ TLS_CERT_FILE: '/tmp/cert.pem' }, 'TLS_CERT_FILE and TLS_KEY_FILE go together: TLS_KEY_FILE is not set.'],
  [{ TLS_KEY_FILE: '/tmp/key.pem' }, 'TLS_CERT_FILE and TLS_KEY_FILE go together: TLS_CERT_FILE is not set.'],
  [{ DATABASE_URL: 'notaurl' }, 'DATABASE_URL must be a postgres:// URL such as postgres://user:password@host:5432/database.'],
  [{ DATABASE_URL: 'postgress://u:secret@db/pms' }, 'DATABASE_URL must be a postgres:// URL such as postgres://user:password@host:5432/database.'],
  [{ PUBLIC_URL: 'http://x' }, 'PUBLIC_URL must be an https origin such as https://api.example.com, got "http://x".'],
];

test('each value a process cannot use is refused with its one line', () => {
  for (const [env, message] of REFUSED) {
    assert.throws(() => readConfig(env), (err: Error) => err instanceof StartupError && err.message === message, JSON.stringify(env));
  }
});

test('the values it can use are read as they are meant', () => {
  const config = readConfig({ PORT: '0', TRUST_PROXY: 'false', LOG_LEVEL: 'WARN', MAX_CONNECTIONS_PER_ADDRESS: '0', EVENT_STREAM_HEARTBEAT_MS: '1073741823' });
  assert.deepEqual([config.httpsPort, config.trustProxy, config.logLevel, config.maxConnectionsPerAddress, config.eventStreamHeartbeatMs], [0, false, 'warn', 0, 1_073_741_823]);
  assert.equal(readConfig({ TRUST_PROXY: 'true' }).trustProxy, true);
  assert.equal(readConfig({}).httpsPort, 8443);
});

test('every process stops at start on a bad value with one line on stderr, exit 1', async () => {
  const outcomes = await Promise.all(['web', 'worker', 'release'].map((name) =>
    runNode([`bin/${name}.ts`], { env: serviceEnv({ PORT: 'abc' }), timeoutMs: 30_000 }).then((outcome) => [name, outcome] as const)));
  for (const [name, outcome] of outcomes) {
    assert.deepEqual([outcome.code, outcome.stderr], [1, `${name}: PORT must be a whole number from 0 to 65535, got "abc".\n`], name);
  }
});

test('the workspace command line, with the database unreachable: one line, exit 1', async () => {
  const outcome = await runNode(['bin/workspace.ts', 'project', 'create', '--name', 'x'], {
    env: serviceEnv({ DATABASE_URL: 'postgres://nobody:secret@127.0.0.1:1/pms', LOG_LEVEL: 'warn' }), timeoutMs: 30_000,
  });
  assert.equal(outcome.code, 1);
  assert.match(outcome.stderr, /^the database cannot be reached: [^\n]+\n$/);
  assert.doesNotMatch(outcome.stderr, /secret/, 'not the URL\'s password');
});
