// GET /v1/event/stream: a project's audit trail followed live as Server-Sent Events. One LISTEN
// connection a process hears the audit writer's `<project>:<last sequence>` as it commits, and one
// fetch a project fans the new events out to its streams; a stream resuming from further back reads
// its own way up first. Each passes on only what lies past the last sequence it passed, so every
// event comes once and in order; the followed heads are read each second too, for notices lost.
import type pg from 'pg';
import type { Response } from 'restify';
import type { StreamQuery } from '../domain/events.ts';
import { EVENTS_CHANNEL } from '../domain/audit.ts';
import type { Config } from '../lib/config.ts';
import { KEEPALIVE_IDLE_MS, queryFile, type Queryable } from '../lib/pool.ts';
import { SocketClient } from '../lib/pg-internals.ts';
import { errorFields, type Logger } from '../lib/log.ts';
import { SharedBody, sharedBodyWriter, writeSharedBody } from './node-http-internals.ts';
import type { GatewayRequest } from './types.ts';
import { keepsOwnStallRule } from './unread-output.ts';

/** Events read per round trip, by a feed or a catching-up stream. */
const PAGE = 500;
/** How often the keys of open streams are checked and the followed projects' heads read. */
const SWEEP_MS = 1000;
const LISTEN_RETRY_MS = 1000;

interface Stream {
  res: Response;
  projectId: string;
  keyId: string;
  types: ReadonlySet<string> | null;
  actors: ReadonlySet<string> | null;
  /** The last sequence passed on (or passed over, not matching): only what lies beyond goes out. */
  position: number;
  /** Fed by its project's fetches; until then it reads its own way up. */
  live: boolean;
  closed: boolean;
}

interface Feed {
  streams: Set<Stream>;
  /** Events up to here have been fetched and handed to the live streams. */
  cursor: number;
  fetching: boolean;
  again: boolean;
}

/** What a stream reads of an event (sql/queries/event_stream_page.sql): what it filters on, and its JSON as stored. */
interface StreamRow {
  sequence: number;
  type_name: string;
  /** The key of a change made through the API; null for any other. */
  actor: string | null;
  body: string;
}

/** An event as one Server-Sent Event: id its sequence, event its type's name, data the event object. */
function frame(row: StreamRow): string {
  return `id: ${row.sequence}\nevent: ${row.type_name}\ndata: ${row.body}\n\n`;
}

const KEEP_ALIVE = new SharedBody(': keep-alive\n\n');

export class EventStreams {
  private readonly feeds = new Map<string, Feed>();
  private readonly streams = new Set<Stream>();
  /** Streams between their place taken and their head written (open), in all and by project. */
  private opening = 0;
  private readonly openingFor = new Map<string, number>();
  private readonly pool: Queryable;
  private readonly databaseUrl: string;
  private readonly config: Config;
  private readonly log: Logger;
  private listener: pg.Client | undefined;
  private listening = false;
  private stopped = false;
  private sweeping = false;
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(pool: Queryable, databaseUrl: string, config: Config, log: Logger) {
    this.pool = pool;
    this.databaseUrl = databaseUrl;
    this.config = config;
    this.log = log;
    this.timers.push(setInterval(() => this.heartbeat(), config.eventStreamHeartbeatMs).unref());
    this.timers.push(setInterval(() => void this.sweep(), SWEEP_MS).unref());
  }

  /** Streams open now (the metrics' gauge). */
  get openCount(): number {
    return this.streams.size;
  }

  /**
   * Starts a stream for an authenticated request whose query has been checked; resolves true once
   * its head is written (it then catches up and follows on its own) or its client has gone, or
   * what is full: the process holds all the streams it may, or the caller's project does (one
   * tenant cannot take every place, and so the streams of all the others). Its place is taken
   * before anything is awaited, so that streams opening at once cannot pass a bound together.
   */
  async open(req: GatewayRequest, res: Response, query: StreamQuery): Promise<true | string> {
    if (this.stopped) throw new Error('the process is stopping');
    const caller = req.caller!;
    const projectId = caller.project_id;
    if (this.streams.size + this.opening >= this.config.maxEventStreams) return 'event streams';
    const projectOpening = this.openingFor.get(projectId) ?? 0;
    if ((this.feeds.get(projectId)?.streams.size ?? 0) + projectOpening >= this.config.maxEventStreamsPerProject) {
      return "a project's event streams";
    }
    this.countOpening(projectId, 1);
    this.listen();
    const projectHead = await this.head(projectId).finally(() => this.countOpening(projectId, -1));
    // A client gone while the head was read (or its key checked) would hold a place for good: no
    // 'close' is left to come.
    if (res.destroyed) return true;
    // Stopping began meanwhile: stop() has ended the streams it knew, and no heartbeat would come.
    if (this.stopped) throw new Error('the process is stopping');
    // No Connection header: Node keeps the connection or closes it after the stream as the request
    // asked (`Connection: close`, HTTP/1.0); naming keep-alive here would override that.
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      // Proxies (nginx) must pass each event on at once.
      'X-Accel-Buffering': 'no',
    });
    res.write(': following the audit trail\n\n');
    keepsOwnStallRule(res);
    const stream: Stream = {
      res, projectId: caller.project_id, keyId: caller.id, position: query.after ?? projectHead, live: false, closed: false,
      types: query.types && new Set(query.types), actors: query.actors && new Set(query.actors),
    };
    this.streams.add(stream);
    let feed = this.feeds.get(stream.projectId);
    if (!feed) {
      feed = { streams: new Set(), cursor: projectHead, fetching: false, again: false };
      this.feeds.set(stream.projectId, feed);
    }
    feed.streams.add(stream);
    res.once('close', () => this.forget(stream));
    void this.catchUp(stream, feed);
    return true;
  }

  /** A place taken (1) or its head written (-1): the streams opening, in all and for the project. */
  private countOpening(projectId: string, by: 1 | -1): void {
    this.opening += by;
    const left = (this.openingFor.get(projectId) ?? 0) + by;
    if (left === 0) this.openingFor.delete(projectId);
    else this.openingFor.set(projectId, left);
  }

  /** Ends every stream (the process is stopping); clients resume elsewhere by their last id. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearInterval(timer);
    for (const stream of this.streams) this.end(stream);
    await this.listener?.end().catch(() => {});
  }

  private async head(projectId: string): Promise<number> {
    const [row] = await queryFile<{ last_sequence: string }>(this.pool, 'event_chain_heads', [[projectId]]);
    return Number(row?.last_sequence ?? 0);
  }

  /**
   * Reads a stream's own way from its position up to its feed's cursor, then joins the feed. It
   * reads at its reader's pace: the next page is fetched once the last has gone out, so a reader
   * far behind on a slow link catches up on one connection, holding one page at most, instead of
   * being cut off by pages the service itself wrote faster than it could read them.
   */
  private async catchUp(stream: Stream, feed: Feed): Promise<void> {
    try {
      // Each page waits for the one before to go out, the last one too: a stream joins its feed
      // (and the live backlog bound) only once what it caught up on has been taken.
      while (await this.drained(stream) && stream.position < feed.cursor) {
        const upTo = feed.cursor;
        const rows = await queryFile<StreamRow>(this.pool, 'event_stream_page', [
          stream.projectId, stream.position, upTo, stream.types && [...stream.types], stream.actors && [...stream.actors], PAGE]);
        this.pass(stream, rows, rows.map(frame));
        if (rows.length < PAGE) stream.position = Math.max(stream.position, upTo);
      }
      if (!stream.closed) stream.live = true;
    } catch (err) {
      this.log.warn({ err: errorFields(err), projectId: stream.projectId }, 'event stream could not catch up; closed');
      this.end(stream);
    }
  }

  /** Fetches a project's new events once and hands them to each of its live streams. */
  private async fetch(feed: Feed, projectId: string): Promise<void> {
    if (feed.fetching) {
      feed.again = true;
      return;
    }
    feed.fetching = true;
    try {
      do {
        feed.again = false;
        const rows = await queryFile<StreamRow>(this.pool, 'event_stream_page', [projectId, feed.cursor, Number.MAX_SAFE_INTEGER, null, null, PAGE]);
        for (const stream of feed.streams) this.behind(stream);
        if (rows.length > 0) {
          // Each event is serialised once however many streams follow the project, and a stream
          // that takes every event (no filter, nothing of these passed on yet: the common case)
          // gets the one buffer of them all, in one write.
          const frames = rows.map(frame);
          const first = rows[0]!.sequence;
          const last = rows[rows.length - 1]!.sequence;
          let all: SharedBody | undefined;
          for (const stream of feed.streams) {
            if (!stream.live || stream.closed) continue;
            if (!stream.types && !stream.actors && stream.position < first) {
              writeSharedBody(stream.res, all ??= new SharedBody(frames.join('')));
              stream.position = last;
            } else {
              this.pass(stream, rows, frames);
            }
          }
          feed.cursor = last;
        }
        if (rows.length === PAGE) feed.again = true;
      } while (feed.again && feed.streams.size > 0);
    } catch (err) {
      // The next notice or sweep fetches again from the same cursor.
      this.log.warn({ err: errorFields(err), projectId }, 'event stream fetch failed');
    } finally {
      feed.fetching = false;
    }
  }

  /**
   * Passes on, in one write, the events of `rows` (oldest first, `frames` their frames) that lie
   * beyond the stream's position and match its filters; its position moves past all of them.
   */
  private pass(stream: Stream, rows: StreamRow[], frames: string[]): void {
    if (stream.closed) return;
    let text = '';
    for (const [i, row] of rows.entries()) {
      const { sequence } = row;
      if (sequence <= stream.position) continue;
      stream.position = sequence;
      if (stream.types && !stream.types.has(row.type_name)) continue;
      if (stream.actors && (row.actor === null || !stream.actors.has(row.actor))) continue;
      text += frames[i];
    }
    if (text) writeSharedBody(stream.res, new SharedBody(text));
  }

  /**
   * A live reader that has left more than the backlog bound unread since the last page is cut off
   * (it resumes by the last id it read); checked before each page, so a stream's memory stays
   * within the bound and one page. A stream catching up holds one page at most (catchUp).
   */
  private behind(stream: Stream): boolean {
    if (!stream.live || stream.res.writableLength <= this.config.eventStreamBacklogBytes) return false;
    this.end(stream, true);
    return true;
  }

  /**
   * Resolves true once what was written to the stream has gone out, false if it closes first. A
   * reader that has not taken it within two heartbeat intervals is cut off, freeing its place (it
   * resumes by its last id).
   */
  private drained(stream: Stream): Promise<boolean> {
    const { res } = stream;
    const writer = sharedBodyWriter(res);
    if (stream.closed || !writer.writableNeedDrain) return Promise.resolve(!stream.closed);
    return new Promise((resolve) => {
      const stalled = setTimeout(() => this.end(stream, true), this.stallMs);
      const done = () => {
        clearTimeout(stalled);
        writer.off('drain', done);
        res.off('close', done);
        resolve(!stream.closed);
      };
      writer.on('drain', done);
      res.on('close', done);
    });
  }

  /** How long a reader may take nothing of what is waiting for it before it is cut off: two heartbeat intervals. */
  private get stallMs(): number {
    return 2 * this.config.eventStreamHeartbeatMs;
  }

  private heartbeat(): void {
    for (const stream of this.streams) if (!this.behind(stream)) writeSharedBody(stream.res, KEEP_ALIVE);
  }

  /** Once a second: streams of keys that no longer authenticate end; projects behind their head fetch. */
  private async sweep(): Promise<void> {
    if (this.sweeping || this.streams.size === 0) return;
    this.sweeping = true;
    try {
      const keyIds = [...new Set([...this.streams].map((s) => s.keyId))];
      const usable = new Set((await queryFile<{ id: string }>(this.pool, 'key_usable', [keyIds])).map((r) => r.id));
      for (const stream of this.streams) if (!usable.has(stream.keyId)) this.end(stream);
      const heads = await queryFile<{ project_id: string; last_sequence: string }>(this.pool, 'event_chain_heads', [[...this.feeds.keys()]]);
      for (const { project_id: projectId, last_sequence: last } of heads) {
        const feed = this.feeds.get(projectId);
        if (feed && Number(last) > feed.cursor) void this.fetch(feed, projectId);
      }
    } catch (err) {
      this.log.warn({ err: errorFields(err) }, 'event stream sweep failed');
    } finally {
      this.sweeping = false;
    }
  }

  /** The one LISTEN connection of this process, made when the first stream opens, remade when lost. */
  private listen(): void {
    if (this.listening || this.stopped) return;
    this.listening = true;
    // Its socket is cut with the others when the host goes silent; keepalives find a quieter loss.
    const client = new SocketClient({
      connectionString: this.databaseUrl, keepAlive: true, keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
      connectionTimeoutMillis: this.config.dbConnectTimeoutMs,
    });
    const lost = () => {
      if (this.listener !== client) return;
      this.listener = undefined;
      this.listening = false;
      client.end().catch(() => {});
      if (!this.stopped) setTimeout(() => this.listen(), LISTEN_RETRY_MS).unref();
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (message) => {
      const [projectId, last] = (message.payload ?? '').split(':');
      const feed = this.feeds.get(projectId ?? '');
      if (feed && Number(last) > feed.cursor) void this.fetch(feed, projectId!);
    });
    this.listener = client;
    client.connect().then(() => client.query(`LISTEN ${EVENTS_CHANNEL}`)).then(() => {
      // Notices sent while this connection was away are lost; the heads tell what they said.
      for (const [projectId, feed] of this.feeds) void this.fetch(feed, projectId);
    }, lost);
  }

  /**
   * Ends a stream: destroyed at once (a reader cut off), or ended in order (its last chunk after
   * what was written). A reader that does not take what is left within two heartbeat intervals is
   * then cut off too: its place is already free, so nothing else would ever let go of the
   * connection and the bytes held for it.
   */
  private end(stream: Stream, destroy = false): void {
    if (stream.closed) return;
    stream.closed = true;
    const { res } = stream;
    if (destroy) {
      res.destroy();
    } else {
      res.end();
      if (!res.writableFinished) {
        const cut = setTimeout(() => {
          this.log.warn({ projectId: stream.projectId, unsentBytes: res.writableLength }, 'event stream ended, its reader took nothing of the rest; connection closed');
          res.destroy();
        }, this.stallMs).unref();
        const done = () => clearTimeout(cut);
        res.once('finish', done);
        res.once('close', done);
      }
    }
    this.forget(stream);
  }

  private forget(stream: Stream): void {
    stream.closed = true;
    this.streams.delete(stream);
    const feed = this.feeds.get(stream.projectId);
    if (!feed) return;
    feed.streams.delete(stream);
    if (feed.streams.size === 0) this.feeds.delete(stream.projectId);
  }
}
