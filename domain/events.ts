// The audit trail's read side: the newest 100, and one by id.
import { isId } from '../lib/ids.ts';
import { queryFile, type Database } from '../lib/pool.ts';
import { errors } from './errors.ts';
import { FeedPages } from './feed-pages.ts';
import { list, listJson, okJson, type DomainRequest } from './requests.ts';
import { EVENT_TYPES, type Origin } from './jobs.ts';

const FEED_SIZE = 100;

/** An event as event_view reads it. */
export interface EventRow {
  id: string;
  type_id: string;
  type_name: string;
  related_table: string;
  related_id: string;
  origin: Origin;
  ip_address: string;
  details: unknown;
  created_at: number;
  /** bigint: node-postgres reads it as a string. */
  sequence: number | string;
  actor_id: string | null;
  hash: string | null;
}

const ACTOR_TYPES = { api: 'key', workspace: 'workspace', system: 'system' } as const;

/** The event object, as the API answers it and as its hash covers it (without `hash`). */
export function eventView(row: EventRow) {
  return {
    id: row.id,
    object: 'event' as const,
    type: { id: row.type_id, name: row.type_name },
    related: { table: row.related_table, id: row.related_id },
    origin: row.origin,
    ip_address: row.ip_address,
    details: row.details,
    created_at: row.created_at,
    sequence: Number(row.sequence),
    actor: { type: ACTOR_TYPES[row.origin], id: row.origin === 'api' ? row.actor_id : null },
    hash: row.hash,
  };
}

export type EventObject = ReturnType<typeof eventView>;

/** The event's JSON with `hash`, stored beside its columns and sent as it is. */
export const eventJson = (event: EventObject, hash: string | null): string => JSON.stringify({ ...event, hash });

// Reads answer each event's stored JSON: an event never changes, so it is not rebuilt per reader.

const feedPages = new FeedPages();

interface PageRead {
  /** The version the reading request asked first: a request that asked the same one shares the read. */
  asked: string;
  page: Promise<{ version: string | null; json: string }>;
}

/** Page reads in flight, by project. */
const pageReads = new Map<string, PageRead>();

/** The page kept from the last read if the project's version has not moved; concurrent reads share one. */
export async function listEvents(db: Database, req: DomainRequest) {
  const project = req.caller.project_id;
  const [now] = await queryFile<{ version: string }>(db, 'event_list_version', [project]);
  const kept = now && feedPages.get(project, now.version);
  if (kept) return okJson<FeedPage>(kept);
  const inFlight = now && pageReads.get(project);
  if (inFlight && inFlight.asked === now.version) {
    const shared = await inFlight.page.catch(() => undefined);
    if (shared?.version === now.version) return okJson<FeedPage>(shared.json);
  }
  const read: PageRead = { asked: now?.version ?? '', page: readPage(db, project) };
  pageReads.set(project, read);
  try {
    const page = await read.page;
    if (page.version !== null) feedPages.set(project, page.version, page.json);
    return okJson<FeedPage>(page.json);
  } finally {
    if (pageReads.get(project) === read) pageReads.delete(project);
  }
}

async function readPage(db: Database, project: string) {
  const [page] = await queryFile<{ total: number | string; version: string | null; data: string | null }>(db, 'event_list', [project, FEED_SIZE]);
  return { version: page!.version, json: listJson(page!.data ?? '[]', Number(page!.total)) };
}

type FeedPage = ReturnType<typeof list<EventObject>>;

export async function getEvent(db: Database, req: DomainRequest) {
  const id = req.params.event_id ?? '';
  if (!isId('evnt', id)) throw errors.eventNotFound();
  const [row] = await queryFile<{ body: string }>(db, 'event_find', [id, req.caller.project_id]);
  if (!row) throw errors.eventNotFound();
  return okJson<EventObject>(row.body);
}

/** What a client asks of GET /v1/event/stream. */
export interface StreamQuery {
  /** Events after this sequence; null: those recorded after the stream opens. */
  after: number | null;
  /** Only these type names; null: all. */
  types: string[] | null;
  /** Only events of these keys; null: all; empty: none (no value named a key). */
  actors: string[] | null;
}

const SEQUENCE = /^\d+$/;
const KNOWN_TYPES: ReadonlySet<string> = new Set(EVENT_TYPES);
const all = (value: string | string[] | undefined) => (value === undefined ? [] : [value].flat());

/** The stream's query, checked before any stream starts; Last-Event-ID (a reconnect) wins over ?after. */
export function parseStreamQuery(query: DomainRequest['query'], lastEventId: string | undefined): StreamQuery {
  const afterValues = lastEventId !== undefined ? [lastEventId] : all(query.after);
  if (afterValues.length > 1 || (afterValues.length === 1 && !SEQUENCE.test(afterValues[0]!))) throw errors.streamAfter();
  const types = all(query.type);
  for (const name of types) if (!KNOWN_TYPES.has(name)) throw errors.streamUnknownType(name);
  const actors = all(query.actor);
  return {
    // Past the largest sequence a number holds exactly there is no event: as good as that one.
    after: afterValues.length === 1 ? Math.min(Number(afterValues[0]), Number.MAX_SAFE_INTEGER) : null,
    types: types.length ? [...new Set(types)] : null,
    // A value that cannot be a key id matches nothing; dropped so a NUL cannot fail the query.
    actors: actors.length ? [...new Set(actors.filter((actor) => isId('papi', actor)))] : null,
  };
}
