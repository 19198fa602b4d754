// What a PgBouncer pool keeps of a session, probed with node-postgres as the service uses it: named
// prepared statements (every sql/queries file), a session advisory lock held across statements
// (an idempotent request's), LISTEN (pg-boss's wake-ups, the event streams) and the
// statement_timeout the service sends at connection.
import pg from 'pg';

export interface PoolingProbes {
  /** A named statement prepared in one transaction runs again in the next. */
  preparedStatements: string;
  /** A second session cannot take a session advisory lock the first holds. */
  advisoryLock: string;
  /** A LISTEN on one client hears a NOTIFY sent from another. */
  listen: string;
  /** What SHOW statement_timeout says to a client that asked for 1 s at connection. */
  statementTimeout: string;
}

async function connected(config: pg.ClientConfig): Promise<pg.Client> {
  const client = new pg.Client(config);
  client.on('error', () => {});
  await client.connect();
  return client;
}

const outcome = async (probe: () => Promise<boolean>): Promise<string> => {
  try {
    return (await probe()) ? 'works' : 'broken';
  } catch (err) {
    return `broken: ${(err as Error).message}`;
  }
};

/** Each probe on its own clients of `config`'s pool; 'works' or 'broken: why'. */
export async function probePooling(config: pg.ClientConfig): Promise<PoolingProbes> {
  const clients: pg.Client[] = [];
  const client = async () => {
    const made = await connected(config);
    clients.push(made);
    return made;
  };
  try {
    const preparedStatements = await outcome(async () => {
      const [a, b] = [await client(), await client()];
      const statement = { name: 'fleet_probe', text: 'SELECT $1::int AS n', values: [1] };
      await a.query(statement);
      // Another client's transaction holds the server connection a prepared on, if it is free.
      await b.query('BEGIN');
      await b.query('SELECT 1');
      const { rows } = await a.query(statement);
      await b.query('COMMIT');
      return rows[0]?.n === 1;
    });
    const advisoryLock = await outcome(async () => {
      const [a, b] = [await client(), await client()];
      const take = 'SELECT pg_try_advisory_lock(77077) AS locked';
      const first = (await a.query(take)).rows[0].locked as boolean;
      const second = (await b.query(take)).rows[0].locked as boolean;
      await a.query('SELECT pg_advisory_unlock_all()');
      await b.query('SELECT pg_advisory_unlock_all()');
      return first && !second;
    });
    const listen = await outcome(async () => {
      const [a, b] = [await client(), await client()];
      const heard: string[] = [];
      a.on('notification', (message) => heard.push(message.payload ?? ''));
      await a.query('LISTEN fleet_probe');
      await b.query("SELECT pg_notify('fleet_probe', 'hello')");
      // A LISTEN's client hears the notification once it reads from its connection again.
      for (let i = 0; i < 20 && heard.length === 0; i++) {
        await a.query('SELECT 1');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return heard.includes('hello');
    });
    const statementTimeout = await (async () => {
      const a = await connected({ ...config, statement_timeout: 1000 });
      clients.push(a);
      return String((await a.query('SHOW statement_timeout')).rows[0].statement_timeout);
    })().catch((err: Error) => `refused: ${err.message}`);
    return { preparedStatements, advisoryLock, listen, statementTimeout };
  } finally {
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  }
}
