// The audit trail's hash chain: each event's `hash` is the hex SHA-256 of the previous event's
// hash (64 zeros before the first) followed by the RFC 8785 canonical JSON of the event object
// as the API answers it, without `hash`.
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type pg from 'pg';
import { queryFile, withTransaction } from '../lib/pool.ts';
import { eventJson, eventView, type EventObject, type EventRow } from './events.ts';

export const GENESIS_HASH = '0'.repeat(64);
/** Events read per round trip when a whole chain is walked. */
const CHAIN_PAGE = 1000;

export function chainHash(previousHash: string, event: EventObject): string {
  const { hash: _hash, ...hashed } = event;
  return createHash('sha256').update(previousHash + canonicalize(hashed), 'utf8').digest('hex');
}

/** An event's columns, and the JSON the API answers for it (null before release gives it one). */
type ChainRow = EventRow & { body: string | null };

/** Every event of a project in sequence order, a page per round trip. */
async function* chainOf(db: pg.Pool | pg.PoolClient, projectId: string): AsyncGenerator<ChainRow> {
  let after = 0;
  for (;;) {
    const rows = await queryFile<ChainRow>(db, 'event_chain_page', [projectId, after, CHAIN_PAGE]);
    yield* rows;
    if (rows.length < CHAIN_PAGE) return;
    after = Number(rows.at(-1)!.sequence);
  }
}

export type Verdict =
  | { events: number; verified: true }
  | { events: number; verified: false; sequence: number; reason: string };

/** Recomputes a project's chain and checks each stored JSON byte for byte; names the first break. */
export async function verifyChain(pool: pg.Pool, projectId: string): Promise<Verdict> {
  // The head is read before the walk: events written meanwhile lie beyond it, and are walked too.
  const [head] = await queryFile<{ last_sequence: number; last_hash: string | null }>(pool, 'event_chain_heads', [[projectId]]);
  const headSequence = Number(head!.last_sequence);
  let previous = GENESIS_HASH;
  let expected = 1;
  for await (const row of chainOf(pool, projectId)) {
    const event = eventView(row);
    if (event.sequence !== expected) return { events: expected - 1, verified: false, sequence: expected, reason: `sequence ${expected} is missing` };
    const hash = chainHash(previous, event);
    if (event.hash !== hash) return { events: expected - 1, verified: false, sequence: expected, reason: 'its hash does not match its content and the previous hash' };
    if (!answersAs(row.body, event)) return { events: expected - 1, verified: false, sequence: expected, reason: 'the JSON the API answers for it does not match its content' };
    if (expected === headSequence && head!.last_hash !== hash) {
      return { events: expected - 1, verified: false, sequence: expected, reason: "its hash is not the one the chain's head recorded" };
    }
    previous = hash;
    expected++;
  }
  if (expected <= headSequence) return { events: expected - 1, verified: false, sequence: expected, reason: `sequence ${expected} is missing` };
  return { events: expected - 1, verified: true };
}

/** Whether stored JSON is, to the byte, what the writer makes of the event (clients get those bytes). */
function answersAs(body: string | null, event: EventObject): boolean {
  return body === eventJson(event, event.hash);
}

/** Release step: hashes and stores JSON for events older than either, under each chain head's lock. */
export async function backfillChains(pool: pg.Pool): Promise<number> {
  const projects = await queryFile<{ project_id: string }>(pool, 'event_chain_unhashed', []);
  for (const { project_id: projectId } of projects) {
    await withTransaction(pool, async (client) => {
      await queryFile(client, 'event_chain_lock', [[projectId]]);
      let previous = GENESIS_HASH;
      let ids: string[] = [];
      let hashes: string[] = [];
      let bodies: string[] = [];
      const flush = async () => {
        await queryFile(client, 'event_hash_set', [ids, hashes, bodies]);
        [ids, hashes, bodies] = [[], [], []];
      };
      let hashed = false;
      for await (const row of chainOf(client, projectId)) {
        const event = eventView(row);
        const hash = chainHash(previous, event);
        hashed ||= row.hash === null;
        if (row.hash === null || row.body === null) {
          const kept = row.hash ?? hash;
          ids.push(row.id);
          hashes.push(kept);
          bodies.push(eventJson(event, kept));
          if (ids.length === CHAIN_PAGE) await flush();
        }
        previous = hash;
      }
      await flush();
      // A chain that only lacked its JSON keeps its head as it was.
      if (hashed) await queryFile(client, 'event_chain_head_set', [projectId, previous]);
    });
  }
  return projects.length;
}
