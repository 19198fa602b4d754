// A Citus cluster on loopback for the suites: a coordinator and two workers, each a Debian
// PostgreSQL 15 with citus preloaded, in one temporary directory that stop() removes. Run as root
// (the servers run as `postgres`). Without citus.so it runs CITUS_BUILD_SCRIPT once first.
//   node test/citus/cluster.ts                  prints DATABASE_URL, serves until Ctrl-C
//   node test/citus/cluster.ts -- npm test      runs the command with DATABASE_URL set, then stops
//   node test/citus/cluster.ts --single -- …    the same with one PostgreSQL 15 set alike, no Citus
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../support/ports.ts';

const execFileAsync = promisify(execFile);

/** Debian's PostgreSQL 15, the one the Citus build installs into. */
export const PG_BINDIR = process.env.CITUS_PG_BINDIR ?? '/usr/lib/postgresql/15/bin';
const READY_MS = 60_000;
/**
 * Where the cluster's directory is made: a place `postgres` can reach, which a test run's own
 * TMPDIR (private, root's) is not. Debian's initdb needs a path to its data directory it may walk.
 */
const PARENT_DIR = process.env.CITUS_CLUSTER_PARENT ?? '/tmp';
const STOP_MS = 20_000;

/**
 * Throwaway servers: no durability. Citus commits across nodes by two-phase commit, which needs
 * prepared transactions; 8 shards a table (Citus's default is 32) keep a database per test file
 * small on two cores. pg_stat_statements lets a test count the service's lookups.
 */
const SETTINGS: Record<string, string> = {
  shared_preload_libraries: "'citus,pg_stat_statements'",
  listen_addresses: "'127.0.0.1'",
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  max_connections: '400',
  max_prepared_transactions: '400',
  'citus.shard_count': process.env.CITUS_SHARD_COUNT ?? '8',
  'citus.max_adaptive_executor_pool_size': '4',
  // Loopback between the nodes of one machine: no TLS to set up.
  'citus.node_conninfo': "'sslmode=disable'",
  log_min_messages: 'warning',
};

export interface CitusNode {
  port: number;
  dir: string;
  url: string;
  server?: ChildProcess;
  /** Runs its server again on its data directory and port, after stopNode. */
  start(): Promise<void>;
}

export interface CitusCluster {
  /** The coordinator's database `postgres`, as the superuser `postgres` (trust on loopback). */
  coordinatorUrl: string;
  coordinator: CitusNode;
  workers: CitusNode[];
  /** Stops every node and removes the cluster. */
  stop(): Promise<void>;
}

function urlOf(port: number, database = 'postgres'): string {
  return `postgres://postgres@127.0.0.1:${port}/${database}`;
}

async function asPostgresUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const [uid, gid] = await Promise.all([execFileAsync('id', ['-u', 'postgres']), execFileAsync('id', ['-g', 'postgres'])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** The path of citus.so in the PostgreSQL the cluster runs, built first when it is missing. */
export async function ensureCitus(): Promise<string> {
  const { stdout } = await execFileAsync(path.join(PG_BINDIR, 'pg_config'), ['--pkglibdir']).catch(() => ({ stdout: '' }));
  const library = path.join(stdout.trim() || path.join(PG_BINDIR, '..', 'lib'), 'citus.so');
  if (existsSync(library)) return library;
  const script = process.env.CITUS_BUILD_SCRIPT;
  if (!script) throw new Error(`${library} is missing: set CITUS_BUILD_SCRIPT to the script that builds Citus into ${PG_BINDIR}/..`);
  await execFileAsync(script, [], { maxBuffer: 64 * 1024 * 1024 });
  if (!existsSync(library)) throw new Error(`${script} ran but ${library} is still missing`);
  return library;
}

async function waitReady(node: CitusNode, output: () => string): Promise<void> {
  const deadline = Date.now() + READY_MS;
  for (;;) {
    if (node.server?.exitCode !== null) throw new Error(`PostgreSQL on port ${node.port} exited: ${output().trim().slice(-2000)}`);
    const client = new pg.Client({ connectionString: node.url });
    try {
      await client.connect();
      await client.end();
      return;
    } catch {
      await client.end().catch(() => {});
      if (Date.now() > deadline) throw new Error(`PostgreSQL on port ${node.port} not ready after ${READY_MS} ms: ${output().trim().slice(-2000)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** No socket: the nodes talk TCP. */
async function startNode(root: string, name: string, user: { uid: number; gid: number } | undefined, settings = SETTINGS): Promise<CitusNode> {
  const dir = path.join(root, name);
  const port = await freePort();
  const node: CitusNode = { port, dir, url: urlOf(port), start: () => runServer(node, root, user) };
  await execFileAsync(path.join(PG_BINDIR, 'initdb'), ['-D', dir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8'],
    { ...user, cwd: root });
  appendFileSync(path.join(dir, 'postgresql.conf'),
    Object.entries({ ...settings, port: String(port), unix_socket_directories: "''" }).map(([k, v]) => `${k} = ${v}\n`).join(''));
  await node.start();
  return node;
}

async function runServer(node: CitusNode, root: string, user: { uid: number; gid: number } | undefined): Promise<void> {
  const { dir } = node;
  let output = '';
  // HOME: libpq inside the server (Citus's connections between nodes) looks there for client certificates.
  const server = spawn(path.join(PG_BINDIR, 'postgres'), ['-D', dir],
    { ...user, cwd: root, env: { ...process.env, HOME: root }, stdio: ['ignore', 'pipe', 'pipe'] });
  // The server's log, beside its data directory: what failed on which node, for looking into.
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-16_384);
    appendFileSync(`${dir}.log`, chunk);
  };
  server.stdout!.on('data', keep);
  server.stderr!.on('data', keep);
  server.on('error', (err) => keep(Buffer.from(String(err))));
  node.server = server;
  await waitReady(node, () => output);
}

/** A fast shutdown of the node's server (its data stays). */
export async function stopNode(node: CitusNode): Promise<void> {
  const server = node.server;
  if (!server || server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  server.kill('SIGINT'); // fast shutdown
  const timer = setTimeout(() => server.kill('SIGKILL'), STOP_MS);
  await exited;
  clearTimeout(timer);
}

/** On a fresh database of every node: the extension, and on the coordinator the nodes. */
export async function joinNodes(coordinatorUrl: string, workerUrls: string[]): Promise<void> {
  for (const url of workerUrls) await sql(url, 'CREATE EXTENSION IF NOT EXISTS citus');
  const coordinator = new URL(coordinatorUrl);
  await sql(coordinatorUrl, 'CREATE EXTENSION IF NOT EXISTS citus');
  await sql(coordinatorUrl, 'SELECT citus_set_coordinator_host($1, $2)', [coordinator.hostname, Number(coordinator.port)]);
  for (const url of workerUrls) {
    const worker = new URL(url);
    await sql(coordinatorUrl, 'SELECT citus_add_node($1, $2)', [worker.hostname, Number(worker.port)]);
  }
}

export async function sql(url: string, text: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text, values);
  } finally {
    await client.end();
  }
}

export async function startCitusCluster(workerCount = 2): Promise<CitusCluster> {
  await ensureCitus();
  const user = await asPostgresUser();
  const root = mkdtempSync(path.join(PARENT_DIR, 'pms-citus-'));
  if (user) chownSync(root, user.uid, user.gid);
  const nodes: CitusNode[] = [];
  const stop = async () => {
    await Promise.all(nodes.map(stopNode));
    rmSync(root, { recursive: true, force: true });
  };
  try {
    nodes.push(await startNode(root, 'coordinator', user));
    for (let i = 1; i <= workerCount; i++) nodes.push(await startNode(root, `worker${i}`, user));
    const [coordinator, ...workers] = nodes as [CitusNode, ...CitusNode[]];
    await joinNodes(coordinator.url, workers.map((w) => w.url));
    return { coordinatorUrl: coordinator.url, coordinator, workers, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * One PostgreSQL 15 as the cluster's nodes are set, without Citus: the single server a measure of
 * the cluster is set beside (bench), so that only the distribution differs.
 */
export async function startSingle(): Promise<CitusCluster> {
  const user = await asPostgresUser();
  const root = mkdtempSync(path.join(PARENT_DIR, 'pms-single-'));
  if (user) chownSync(root, user.uid, user.gid);
  const settings = Object.fromEntries(Object.entries(SETTINGS).filter(([name]) => !name.startsWith('citus.')));
  settings.shared_preload_libraries = "'pg_stat_statements'";
  let node: CitusNode | undefined;
  const stop = async () => {
    if (node) await stopNode(node);
    rmSync(root, { recursive: true, force: true });
  };
  try {
    node = await startNode(root, 'single', user, settings);
    return { coordinatorUrl: node.url, coordinator: node, workers: [], stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

if (import.meta.main) {
  const separator = process.argv.indexOf('--');
  const command = separator >= 0 ? process.argv.slice(separator + 1) : [];
  // --single: one PostgreSQL 15 set as the nodes are, no Citus (the bench's side-by-side).
  const single = process.argv.slice(2, separator >= 0 ? separator : undefined).includes('--single');
  const cluster = single ? await startSingle() : await startCitusCluster();
  if (single) {
    console.log(`# one PostgreSQL 15 without Citus on port ${cluster.coordinator.port}; its log in ${path.dirname(cluster.coordinator.dir)}`);
  } else {
    const { rows: [version] } = await sql(cluster.coordinatorUrl, "SELECT extversion FROM pg_extension WHERE extname = 'citus'");
    console.log(`# Citus ${version.extversion}: coordinator ${cluster.coordinator.port}, workers ${cluster.workers.map((w) => w.port).join(', ')}; ` +
      `servers' logs in ${path.dirname(cluster.coordinator.dir)}`);
  }
  console.log(`DATABASE_URL=${cluster.coordinatorUrl}`);
  let code = 0;
  let stopping = false;
  const finish = async () => {
    if (stopping) return;
    stopping = true;
    await cluster.stop();
    console.log(single ? '# PostgreSQL stopped and removed' : '# Citus cluster stopped and removed');
    process.exit(code);
  };
  let child: ReturnType<typeof spawn> | undefined;
  // A signal (a CI step's timeout) goes to the command first, which then cleans up after itself;
  // the cluster stops once it has exited.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
      else void finish();
    });
  }
  if (command.length > 0) {
    child = spawn(command[0]!, command.slice(1), { stdio: 'inherit', env: { ...process.env, DATABASE_URL: cluster.coordinatorUrl } });
    code = await new Promise<number>((resolve) => child!.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
    await finish();
  } else {
    setInterval(() => {}, 1 << 30);
  }
}
