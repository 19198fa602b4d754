// The test run's databases on a Citus coordinator (DATABASE_URL's database has the extension and
// its workers): each exists on every node. The template is made on all and joined; a test file's
// copy is cloned on all, so its shards come with it. Elsewhere these do what they did before.
import pg from 'pg';
import { joinNodes } from './cluster.ts';

/** The workers of the coordinator `admin` is connected to, as URLs of its database; none off Citus. */
export async function citusWorkers(admin: pg.ClientBase, adminUrl: string): Promise<URL[]> {
  const { rows: [citus] } = await admin.query("SELECT 1 AS present FROM pg_extension WHERE extname = 'citus'");
  if (!citus) return [];
  const { rows } = await admin.query("SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary' ORDER BY nodeid");
  return rows.map((row) => {
    const url = new URL(adminUrl);
    url.hostname = row.nodename;
    url.port = String(row.nodeport);
    return url;
  });
}

function onDatabase(url: URL | string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

async function onNode(url: URL, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** Whether the database of `adminUrl` is a Citus coordinator's (the tests' PostgreSQL is one). */
export async function onCitus(adminUrl: string | undefined): Promise<boolean> {
  if (!adminUrl) return false;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    return (await admin.query("SELECT 1 FROM pg_extension WHERE extname = 'citus'")).rowCount === 1;
  } finally {
    await admin.end();
  }
}

/** After CREATE DATABASE (the template's) on the coordinator: the same on each worker, joined. */
export async function databaseMade(admin: pg.ClientBase | string, adminUrl: string, database: string): Promise<void> {
  if (typeof admin === 'string') {
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    try {
      return await databaseMade(client, adminUrl, database);
    } finally {
      await client.end();
    }
  }
  const workers = await citusWorkers(admin, adminUrl);
  if (workers.length === 0) return;
  for (const worker of workers) await onNode(worker, `CREATE DATABASE ${pg.escapeIdentifier(database)}`);
  await joinNodes(onDatabase(adminUrl, database), workers.map((w) => onDatabase(w, database)));
}

const CLONE_ATTEMPTS = 10;

/**
 * CREATE DATABASE … TEMPLATE, on every node. Citus keeps sessions of its own on a database it
 * has used (its maintenance daemon, connections between nodes); they are ended before each copy.
 */
export async function cloneDatabase(admin: pg.ClientBase, adminUrl: string, database: string, template: string): Promise<void> {
  const create = `CREATE DATABASE ${pg.escapeIdentifier(database)} TEMPLATE ${pg.escapeIdentifier(template)}`;
  const workers = await citusWorkers(admin, adminUrl);
  if (workers.length === 0) {
    await admin.query(create);
    return;
  }
  const end = `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${pg.escapeLiteral(template)} AND pid <> pg_backend_pid()`;
  for (const node of [new URL(adminUrl), ...workers]) {
    for (let attempt = 1; ; attempt++) {
      await onNode(node, end);
      try {
        await onNode(node, create);
        break;
      } catch (err) {
        // 55006: the template is in use (a session came back between the two statements).
        if ((err as { code?: string }).code !== '55006' || attempt === CLONE_ATTEMPTS) throw err;
      }
    }
  }
}

/** The run's databases on the workers, dropped at its end as the coordinator's are. */
export async function dropOnWorkers(admin: pg.ClientBase, adminUrl: string, prefix: string): Promise<string[]> {
  const failed: string[] = [];
  for (const worker of await citusWorkers(admin, adminUrl)) {
    const client = new pg.Client({ connectionString: worker.toString() });
    await client.connect();
    try {
      const { rows } = await client.query('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [prefix]);
      for (const { datname } of rows) {
        await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`)
          .catch((err: Error) => failed.push(`database ${datname} on ${worker.host} (${err.message})`));
      }
    } finally {
      await client.end();
    }
  }
  return failed;
}
