// What lib/pg-internals.ts takes from pg beneath its documented API still works as it does on the
// version installed: an upgrade that moved it would otherwise leave a silent server unbounded and
// a stuck lane uncut, with nothing failing until a database went quiet in production.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { PipeliningClient, queryInFlight, SocketClient, socketOf } from '../../lib/pg-internals.ts';
import { createTestDatabase } from '../support/service.ts';

const PG = `pg ${createRequire(import.meta.url)('pg/package.json').version as string}`;
const ADAPTER = 'lib/pg-internals.ts';

let connectionString: string;
const clients: pg.Client[] = [];

before(async () => {
  connectionString = await createTestDatabase();
});
after(() => Promise.all(clients.map((client) => client.end().catch(() => undefined))));

async function connected(Client: typeof SocketClient): Promise<SocketClient> {
  const client = new Client({ connectionString });
  // A connection cut under a client is an error event too; the query's own failure is the test's.
  client.on('error', () => {});
  clients.push(client);
  await client.connect();
  return client;
}

test('pg connects on the socket handed to it, and a query in flight fails once it is destroyed', async () => {
  const client = await connected(SocketClient);
  const socket = (() => {
    try {
      return socketOf(client);
    } catch (err) {
      assert.fail(`${PG} no longer asks for its socket through ClientConfig.stream, as ${ADAPTER} has it: ${(err as Error).message}`);
    }
  })();
  assert.equal(socket.readyState, 'open', `${PG} connected on another socket than the one ${ADAPTER} made`);
  const sleeping = client.query('SELECT pg_sleep(5)');
  socket.destroy();
  await assert.rejects(sleeping, Error, `${PG}: destroying the socket ${ADAPTER} made did not fail the query in flight`);
});

for (const Client of [SocketClient, PipeliningClient]) {
  test(`${Client.name}: a query in flight is seen as in flight until it is answered, and only then`, async () => {
    const client = await connected(Client);
    const meaning = `${PG}: Client#readyForQuery, which ${ADAPTER} reads, no longer says whether a query is in flight`;
    assert.equal(queryInFlight(client), false, meaning);
    const first = client.query('SELECT pg_sleep(0.05)');
    const second = client.query('SELECT pg_sleep(0.05)');
    assert.equal(queryInFlight(client), true, meaning);
    await first;
    assert.equal(queryInFlight(client), true, meaning);
    await second;
    assert.equal(queryInFlight(client), false, meaning);
  });
}
