// GET /v1/event/stream (decisions.md, "Events"): the audit trail followed live as Server-Sent
// Events. Errors answer in the envelope before any stream starts; each matching event arrives
// exactly once, in sequence order, with `id:` its sequence; resuming by Last-Event-ID or ?after
// misses nothing; the stream ends when its key stops authenticating; it is bounded.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import tls from 'node:tls';
import pg from 'pg';
import { after, before, describe, test } from 'node:test';
import { writeEvents } from '../../domain/audit.ts';
import type { AuditJob } from '../../domain/jobs.ts';
import { disableProject } from '../../domain/projects.ts';
import { WEBHOOK_LISTENER } from '../../domain/webhook-delivery.ts';
import { newId } from '../../lib/ids.ts';
import { assertError, assertSuccess, MESSAGES } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { EventStreamReader } from '../support/sse.ts';
import { changeTriggers } from '../support/triggers.ts';
import { sleep } from '../support/wait.ts';

const HEARTBEAT_MS = 300;

/**
 * The ids of every event after `after` up to `last`, read from `first` and, whenever the service
 * cuts the stream, from a new one resuming by the last id read, as a client does (closed at the end).
 */
async function readThrough(service: TestService, key: string, first: EventStreamReader, after: number, last: number, timeoutMs = 30_000): Promise<number[]> {
  const ids: number[] = [];
  const deadline = Date.now() + timeoutMs;
  let reader = first;
  try {
    for (;;) {
      while ((reader.events.at(-1)?.id ?? 0) < last && !reader.isClosed) {
        assert.ok(Date.now() < deadline, `events up to ${last} within ${timeoutMs} ms: ${ids.length + reader.events.length} arrived`);
        await sleep(10);
      }
      ids.push(...reader.events.map((e) => e.id));
      if ((ids.at(-1) ?? 0) >= last) return ids;
      reader.close();
      reader = await EventStreamReader.open(service, '/v1/event/stream', key, { 'last-event-id': String(ids.at(-1) ?? after) });
    }
  } finally {
    reader.close();
  }
}

function jobs(p: TestProject, count: number, padding = 0): AuditJob[] {
  const now = Math.floor(Date.now() / 1000);
  return Array.from({ length: count }, (_, i) => ({
    id: newId('evnt'), project_id: p.projectId, type: 'app.updated', related_table: 'app', related_id: newId('mapp'),
    origin: 'api', actor_id: p.keyId, ip_address: '127.0.0.1',
    details: { changes: { name: { from: `n${i}`, to: `m${i}${'x'.repeat(padding)}` } } }, created_at: now,
  }));
}

/** A raw TLS connection to the service: every byte it receives, and whether the service closed it. */
class RawConnection {
  bytes = Buffer.alloc(0);
  closed = false;
  private readonly socket: tls.TLSSocket;

  constructor(service: TestService, request: string) {
    this.socket = tls.connect({ host: '127.0.0.1', port: Number(new URL(service.baseUrl).port), ca: readFileSync(service.config.tlsCertFile!), servername: 'localhost' });
    this.socket.on('data', (chunk: Buffer) => { this.bytes = Buffer.concat([this.bytes, chunk]); });
    this.socket.on('error', () => {});
    this.socket.on('close', () => { this.closed = true; });
    this.socket.once('secureConnect', () => this.socket.write(request));
  }

  get text(): string {
    return this.bytes.toString('utf8');
  }

  async waitUntil(what: string, done: () => boolean): Promise<void> {
    for (const deadline = Date.now() + 5000; !done();) {
      assert.ok(Date.now() < deadline, `${what}; received: ${JSON.stringify(this.text)}`);
      await sleep(10);
    }
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/**
 * A chunked body decoded strictly: each chunk's size in hex, CRLF, exactly that many bytes, CRLF.
 * Returns the body so far and whether its last chunk (size 0) has come; throws at any misframing.
 */
function dechunk(body: Buffer): { text: string; last: boolean } {
  const parts: Buffer[] = [];
  let at = 0;
  while (at < body.length) {
    const eol = body.indexOf('\r\n', at, 'latin1');
    if (eol < 0) break;
    const sizeLine = body.toString('latin1', at, eol);
    assert.match(sizeLine, /^[0-9a-f]+$/, `a chunk size line at byte ${at}`);
    const size = parseInt(sizeLine, 16);
    if (size === 0) {
      assert.equal(body.toString('latin1', eol + 2), '\r\n', 'the last chunk ends the body');
      return { text: Buffer.concat(parts).toString('utf8'), last: true };
    }
    if (eol + 2 + size + 2 > body.length) break;
    parts.push(body.subarray(eol + 2, eol + 2 + size));
    assert.equal(body.toString('latin1', eol + 2 + size, eol + 4 + size), '\r\n', `CRLF after the chunk at byte ${at}`);
    at = eol + 4 + size;
  }
  return { text: Buffer.concat(parts).toString('utf8'), last: false };
}

/** The events of an SSE text (comments skipped): each one's id, type and related record's id. */
function sseEvents(text: string): Array<{ id: number; event: string; related: string }> {
  return text.split('\n\n').filter((block) => block && !block.startsWith(':')).map((block) => {
    const lines = Object.fromEntries(block.split('\n').map((line) => [line.slice(0, line.indexOf(': ')), line.slice(line.indexOf(': ') + 2)]));
    return { id: Number(lines.id), event: lines.event!, related: JSON.parse(lines.data!).related.id };
  });
}

describe('the event stream', () => {
  let service: TestService;
  let p: TestProject;
  const readers: EventStreamReader[] = [];
  const open = async (path: string, key = p.key, headers: Record<string, string> = {}) => {
    const reader = await EventStreamReader.open(service, path, key, headers);
    readers.push(reader);
    return reader;
  };

  before(async () => {
    service = await TestService.start({ env: { EVENT_STREAM_HEARTBEAT_MS: String(HEARTBEAT_MS) } });
    p = await service.createProject('Streamed');
    await service.waitForEvents(p.projectId, 2);
    await service.waitForJobsDrained();
  });
  after(async () => {
    for (const reader of readers) reader.close();
    await service.stop();
  });

  test('errors answer in the envelope before any stream starts', async () => {
    assertError(await service.request('GET', '/v1/event/stream'), 401, MESSAGES.noKey);
    const keyReader = await createKey(service, p.key, { name: 'no events', scope: ['key:read'] });
    assertError(await service.request('GET', '/v1/event/stream', { key: keyReader.key }), 403, MESSAGES.missingScope('event:read'));
    for (const query of ['after=-1', 'after=abc', 'after=1.5', 'after=', 'after=1&after=2']) {
      assertError(await service.request('GET', `/v1/event/stream?${query}`, { key: p.key }), 422, 'after must be a non-negative integer.', query);
    }
    assertError(await service.request('GET', '/v1/event/stream', { key: p.key, headers: { 'last-event-id': 'x' } }), 422,
      'after must be a non-negative integer.', 'Last-Event-ID');
    // Every non-negative integer is a position, however large (past the largest event, nothing yet).
    for (const after of ['1000000000000000', '9007199254740993', '123456789012345678901234567890']) {
      const reader = await open(`/v1/event/stream?after=${after}`);
      assert.equal(reader.status, 200, `after=${after}`);
      reader.close();
    }
    assertError(await service.request('GET', '/v1/event/stream?type=key.created&type=key.renamed', { key: p.key }), 422,
      'Unknown event type: key.renamed.');
    assertError(await service.request('GET', '/v1/event/stream?type=key%0Arenamed', { key: p.key }), 422,
      'Unknown event type: key\nrenamed.', 'a type name with a line break, echoed as sent');
  });

  test('from now on: the events recorded after it opened, as SSE with id = sequence', async () => {
    // The test before made a key, whose event is written asynchronously: had it been written after
    // the stream opened, it would be the stream's first (a failure seen with the machine loaded).
    await service.waitForJobsDrained();
    const reader = await open('/v1/event/stream');
    assert.equal(reader.status, 200);
    assert.match(String(reader.headers['content-type']), /^text\/event-stream/);
    assert.equal(reader.headers['cache-control'], 'no-store');
    const before = (await service.request('GET', '/v1/event', { key: p.key })).body.response.total as number;
    const made = await createKey(service, p.key, { name: 'streamed key', scope: ['key:read'] });
    const [event] = await reader.waitFor(1);
    assert.equal(event!.event, 'key.created');
    assert.equal(event!.data.related.id, made.id);
    assert.equal(event!.id, before + 1);
    const byId = await service.request('GET', `/v1/event/${event!.data.id}`, { key: p.key });
    assert.deepEqual(event!.data, byId.body.response, 'the streamed object is the event object');
  });

  test('resume: ?after=0 from the first event, Last-Event-ID wins over ?after; filters keep each event\'s own sequence', async () => {
    const doomed = await createKey(service, p.key, { name: 'to revoke', scope: ['key:read'] });
    await service.request('DELETE', `/v1/key/${doomed.id}`, { key: p.key });
    await service.waitForJobsDrained();
    const n = (await service.request('GET', '/v1/event', { key: p.key })).body.response.total as number;
    const all = await open('/v1/event/stream?after=0');
    assert.deepEqual((await all.waitFor(n)).map((e) => e.id), Array.from({ length: n }, (_, i) => i + 1));
    const resumed = await open('/v1/event/stream?after=0', p.key, { 'last-event-id': String(n - 2) });
    assert.deepEqual((await resumed.waitFor(2)).map((e) => [e.id, e.event]), [[n - 1, 'key.created'], [n, 'key.revoked']]);
    const revocations = await open(`/v1/event/stream?after=0&type=key.revoked&type=project.created&actor=${p.keyId}`);
    await revocations.waitFor(1);
    await sleep(300);
    // project.created was the workspace's change, not this key's: only the revocation matches both.
    assert.deepEqual(revocations.events.map((e) => [e.id, e.event]), [[n, 'key.revoked']]);
    await sleep(HEARTBEAT_MS * 2);
    assert.ok(revocations.comments >= 2, `comment lines keep the stream alive (${revocations.comments})`);
  });

  test('an actor that is no key\'s id matches nothing, whatever it holds, and the stream stays open', async () => {
    const own = await open(`/v1/event/stream?after=0&actor=${p.keyId}`);
    const ownEvents = (await own.waitFor(1)).length;
    const nobody = await open('/v1/event/stream?after=0&actor=nobody');
    const nul = await open('/v1/event/stream?after=0&actor=%00');
    const mixed = await open(`/v1/event/stream?after=0&actor=%00&actor=${p.keyId}`);
    await mixed.waitFor(ownEvents);
    await sleep(300);
    for (const [reader, what] of [[nobody, 'nobody'], [nul, 'a NUL']] as const) {
      assert.equal(reader.status, 200, what);
      assert.deepEqual(reader.events, [], what);
      assert.equal(reader.isClosed, false, `the stream of ${what} is open`);
    }
    assert.deepEqual(mixed.events.map((e) => e.id), own.events.map((e) => e.id), 'a NUL beside a key: that key\'s events');
    assert.equal(mixed.isClosed, false);
  });

  test('the actor filter goes by the actor as served: a change not made through the API never matches a key, whatever its row holds', async () => {
    const q = await service.createProject('Actors as served');
    await service.waitForEvents(q.projectId, 2);
    await service.waitForJobsDrained();
    const live = await open(`/v1/event/stream?actor=${q.keyId}`, q.key);
    // A workspace change whose row names the key, as an edit with SQL would leave it: the column
    // is outside the hash for such a change, whose served actor is the workspace's.
    await service.db.query(`CREATE FUNCTION stream_test_actor_${q.projectId}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.project_id = '${q.projectId}' AND NEW.origin = 'workspace' THEN NEW.actor_id := '${q.keyId}'; END IF; RETURN NEW; END $$`);
    await changeTriggers(service.db, [`CREATE TRIGGER actor_${q.projectId} BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION stream_test_actor_${q.projectId}()`]);
    try {
      await writeEvents(service.db, [{ ...jobs(q, 1)[0]!, origin: 'workspace', actor_id: null }]);
    } finally {
      await changeTriggers(service.db, [`DROP TRIGGER actor_${q.projectId} ON events`]);
      await service.db.query(`DROP FUNCTION stream_test_actor_${q.projectId}()`);
    }
    const { rows: [edited] } = await service.db.query(`SELECT actor_id FROM events WHERE project_id = $1 AND origin = 'workspace' ORDER BY sequence DESC LIMIT 1`, [q.projectId]);
    assert.equal(edited.actor_id, q.keyId, 'the row names the key');
    const made = await createKey(service, q.key, { name: 'made by the key', scope: ['key:read'] });
    await live.waitFor(1);
    const caughtUp = await open(`/v1/event/stream?after=0&actor=${q.keyId}`, q.key);
    await caughtUp.waitFor(1);
    await sleep(300);
    for (const [reader, what] of [[live, 'live'], [caughtUp, 'caught up']] as const) {
      assert.deepEqual(reader.events.map((e) => [e.event, e.data.related.id, e.data.actor]), [['key.created', made.id, { type: 'key', id: q.keyId }]], what);
    }
  });

  test('changes made concurrently reach every stream exactly once, in sequence order, with no gap', async () => {
    const start = (await service.request('GET', '/v1/event', { key: p.key })).body.response.total as number;
    const streams = await Promise.all([0, 1, 2].map(() => open(`/v1/event/stream?after=${start}`)));
    const late = await open(`/v1/event/stream?after=${start}`);
    // Writers racing, as several worker processes would, besides changes through the API.
    await Promise.all([
      ...Array.from({ length: 6 }, () => writeEvents(service.db, jobs(p, 20))),
      ...Array.from({ length: 10 }, (_, i) => createKey(service, p.key, { name: `concurrent ${i}`, scope: ['key:read'] })),
    ]);
    const expected = Array.from({ length: 130 }, (_, i) => start + i + 1);
    for (const reader of [...streams, late]) {
      assert.deepEqual((await reader.waitFor(130)).map((e) => e.id), expected);
    }
    await sleep(300);
    for (const reader of streams) assert.equal(reader.events.length, 130, 'nothing twice');
  });

  test('one database listener per web process, whatever the number of streams', async () => {
    // The job workers running beside it listen once too, for webhooks.
    const { rows } = await service.db.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND query ILIKE 'LISTEN pms_events%' AND application_name <> $2",
      [new URL(service.databaseUrl).pathname.slice(1), WEBHOOK_LISTENER]);
    assert.ok(readers.length >= 8);
    assert.equal(rows[0].n, 1);
  });

  test('on the wire: events in well-formed chunks over HTTP/1.1, as they are over HTTP/1.0 until the connection ends, and behind another request on a connection', async () => {
    const streamer = await createKey(service, p.key, { name: 'wire', scope: ['event:read', 'key:read'] });
    await service.waitForJobsDrained();
    const ask = (version: string, extra = '') => `GET /v1/event/stream ${version}\r\nHost: localhost\r\nAuthorization: Bearer ${streamer.key}\r\n${extra}\r\n`;
    const current = `GET /v1/key/current HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${streamer.key}\r\n\r\n`;
    const chunked = new RawConnection(service, ask('HTTP/1.1'));
    const plain = new RawConnection(service, ask('HTTP/1.0'));
    const behind = new RawConnection(service, current + ask('HTTP/1.1'));
    const closing = new RawConnection(service, ask('HTTP/1.1', 'Connection: close\r\n'));
    const connections = [chunked, plain, behind, closing];
    const heads = (c: RawConnection) => c.text.split('\r\n\r\n').length - 1;
    try {
      await chunked.waitUntil('the HTTP/1.1 stream\'s head', () => heads(chunked) >= 1);
      await plain.waitUntil('the HTTP/1.0 stream\'s head', () => heads(plain) >= 1);
      await behind.waitUntil('both heads on the shared connection', () => heads(behind) >= 2);
      await closing.waitUntil('the head of the stream asked to close', () => heads(closing) >= 1);
      const made = [
        await createKey(service, p.key, { name: 'on the wire 1', scope: ['key:read'] }),
        await createKey(service, p.key, { name: 'on the wire 2', scope: ['key:read'] }),
      ];
      const wanted = made.map((k) => k.id);

      /** The stream's response on a connection: its head, and its body's bytes after it. */
      const stream = (c: RawConnection) => {
        const at = c.bytes.lastIndexOf('HTTP/1.1 200 ');
        const end = c.bytes.indexOf('\r\n\r\n', at);
        return { head: c.bytes.toString('latin1', at, end), body: c.bytes.subarray(end + 4) };
      };
      const related = (text: string) => sseEvents(text).map((e) => e.related);
      for (const c of [chunked, behind, closing]) {
        await c.waitUntil('both events, chunked', () => related(dechunk(stream(c).body).text).length >= 2);
        assert.match(stream(c).head, /\r\ntransfer-encoding: chunked/i);
        const text = dechunk(stream(c).body).text;
        assert.ok(text.startsWith(': following the audit trail\n\n'), text);
        const events = sseEvents(text);
        assert.deepEqual(events.map((e) => e.related), wanted);
        assert.deepEqual(events.map((e) => e.event), ['key.created', 'key.created']);
        assert.equal(events[1]!.id, events[0]!.id + 1);
      }
      const first = JSON.parse(behind.text.slice(behind.text.indexOf('\r\n\r\n') + 4, behind.text.indexOf('HTTP/1.1 200 ', 20)));
      assert.equal(first.response.id, streamer.id, 'the request before the stream answered first, whole');

      await plain.waitUntil('both events, unframed', () => related(plain.text.slice(plain.text.indexOf('\r\n\r\n') + 4)).length >= 2);
      assert.match(plain.text, /^HTTP\/1\.1 200 /);
      const plainHead = plain.text.slice(0, plain.text.indexOf('\r\n\r\n'));
      assert.doesNotMatch(plainHead, /transfer-encoding|content-length/i);
      // Its end is the connection's: it may not be kept.
      assert.doesNotMatch(plainHead, /connection: keep-alive/i);
      assert.match(stream(chunked).head, /\r\nconnection: keep-alive/i);
      assert.match(stream(closing).head, /\r\nconnection: close/i, 'a request asking to close is told so');
      const plainBody = plain.text.slice(plainHead.length + 4);
      assert.ok(plainBody.startsWith(': following the audit trail\n\n'), plainBody);
      assert.deepEqual(related(plainBody), wanted);

      // Ended by the service (its key revoked): the chunked body gets its last chunk, the HTTP/1.0
      // body its connection's end.
      assertSuccess(await service.request('DELETE', `/v1/key/${streamer.id}`, { key: p.key }), 200);
      await chunked.waitUntil('the last chunk', () => dechunk(stream(chunked).body).last);
      await plain.waitUntil('the connection closed', () => plain.closed);
      await closing.waitUntil('the last chunk, then the connection closed', () => dechunk(stream(closing).body).last && closing.closed);
      assert.equal(chunked.closed, false, 'a kept connection stays for the next request');
      // The revocation's own event may come before the end.
      const all = sseEvents(dechunk(stream(chunked).body).text);
      assert.deepEqual(all.slice(0, 2).map((e) => e.related), wanted);
      for (const extra of all.slice(2)) assert.deepEqual([extra.event, extra.related], ['key.revoked', streamer.id]);
    } finally {
      for (const c of connections) c.destroy();
    }
  });

  test('a stream ends within 2 s of its key being revoked, and of its project being disabled', async () => {
    const streamer = await createKey(service, p.key, { name: 'streamer', scope: ['event:read'] });
    const reader = await open('/v1/event/stream', streamer.key);
    assertSuccess(await service.request('DELETE', `/v1/key/${streamer.id}`, { key: p.key }), 200);
    const revokedAt = Date.now();
    await Promise.race([reader.closed, sleep(2500)]);
    assert.ok(reader.ended, 'the stream ended');
    assert.ok(Date.now() - revokedAt < 2500, `ended after ${Date.now() - revokedAt} ms`);

    const other = await service.createProject('Disabled while streaming');
    const doomed = await open('/v1/event/stream', other.key);
    await disableProject(service.services, { origin: 'workspace', ip: '127.0.0.1' }, other.projectId);
    await Promise.race([doomed.closed, sleep(2500)]);
    assert.ok(doomed.ended, 'the stream of a disabled project ended');
  });
});

describe('the event stream\'s bounds', () => {
  /** A reader catching up that takes nothing for twice this is cut off. */
  const BOUNDS_HEARTBEAT_MS = 1000;
  let service: TestService;
  let p: TestProject;
  let paced: TestProject;

  before(async () => {
    service = await TestService.start({
      jobWorkers: false, env: { MAX_EVENT_STREAMS: '2', EVENT_STREAM_BACKLOG_BYTES: '100000', EVENT_STREAM_HEARTBEAT_MS: String(BOUNDS_HEARTBEAT_MS) },
    });
    p = await service.createProject('Bounded');
  });
  after(() => service.stop());

  test('past the process\'s streams, 503 in the envelope; a slow reader\'s backlog is capped, and it resumes by its last id', async () => {
    await writeEvents(service.db, jobs(p, 2));
    const slow = await EventStreamReader.open(service, '/v1/event/stream', p.key, {}, true);
    const other = await EventStreamReader.open(service, '/v1/event/stream', p.key);
    try {
      const full = await service.request('GET', '/v1/event/stream', { key: p.key });
      assertError(full, 503, MESSAGES.streamsFull);
      assert.equal(full.headers['retry-after'], '5');
      // The slow reader reads nothing while thousands of events pile up behind it: the service cuts
      // it off (a reader that reads nothing cannot notice; the freed place shows it).
      for (let i = 0; i < 10; i++) await writeEvents(service.db, jobs(p, 500, 1000));
      const third = await openOnceFree();
      assert.ok(third, 'the slow reader\'s place was freed');
      third.close();
      // The other reader has every event after the two it opened behind; resuming from its last id
      // (none read: from the start) misses nothing. Each reads as a client does: a page of 500
      // events is more than this service's 100 kB bound, so a reader the machine holds up for a
      // moment can be cut too, and then resumes by its last id.
      assert.deepEqual(await readThrough(service, p.key, other, 2, 5002), Array.from({ length: 5000 }, (_, i) => i + 3));
      const resumed = await EventStreamReader.open(service, '/v1/event/stream', p.key, { 'last-event-id': '0' });
      assert.deepEqual(await readThrough(service, p.key, resumed, 0, 5002), Array.from({ length: 5002 }, (_, i) => i + 1));
    } finally {
      slow.close();
      other.close();
    }
  });

  test('a reader catching up goes at its own pace: paused, it is not cut off, and then reads every event on the one connection', async () => {
    paced = await service.createProject('Paced');
    // 5,000 events of ~1.4 kB: a page of 500 is seven times the 100 kB bound, the whole 70 times.
    for (let i = 0; i < 10; i++) await writeEvents(service.db, jobs(paced, 500, 1000));
    const reader = await openOnceFree(paced.key, { 'last-event-id': '0' }, true);
    assert.ok(reader, 'a place for the stream');
    try {
      // Reading nothing for a while (less than the stall bound) while the service has pages to
      // send: they wait for it, one at a time.
      await sleep(BOUNDS_HEARTBEAT_MS / 2);
      reader.resume();
      for (const deadline = Date.now() + 30_000; (reader.events.at(-1)?.id ?? 0) < 5000 && !reader.isClosed;) {
        assert.ok(Date.now() < deadline, `5,000 events within 30 s: ${reader.events.length} arrived`);
        await sleep(10);
      }
      assert.equal(reader.isClosed, false, `the stream was not cut off (${reader.events.length} events arrived)`);
      assert.deepEqual(reader.events.map((e) => e.id), Array.from({ length: 5000 }, (_, i) => i + 1));
    } finally {
      reader.close();
    }
  });

  test('a reader catching up is held to its pace to the end: its last page unread for a heartbeat is not the live backlog', async () => {
    const large = await service.createProject('One large page');
    // 400 events of ~12 kB: one page of ~5 MB, more than the kernel's socket buffers take in for a
    // reader that reads nothing, fifty times the 100 kB live bound.
    await writeEvents(service.db, jobs(large, 400, 12_000));
    const reader = await openOnceFree(large.key, { 'last-event-id': '0' }, true);
    assert.ok(reader, 'a place for the stream');
    try {
      // Past a heartbeat (when the live bound is checked), short of the stall bound of two.
      await sleep(1.5 * BOUNDS_HEARTBEAT_MS);
      reader.resume();
      for (const deadline = Date.now() + 15_000; (reader.events.at(-1)?.id ?? 0) < 400 && !reader.isClosed;) {
        assert.ok(Date.now() < deadline, `400 events within 15 s: ${reader.events.length} arrived`);
        await sleep(10);
      }
      assert.equal(reader.isClosed, false, `the stream was not cut off (${reader.events.length} events arrived)`);
      assert.deepEqual(reader.events.map((e) => e.id), Array.from({ length: 400 }, (_, i) => i + 1));
    } finally {
      reader.close();
    }
  });

  test('a reader catching up that takes nothing for two heartbeat intervals is cut off, and its place freed', async () => {
    const opened = Date.now();
    const stalled = await openOnceFree(paced.key, { 'last-event-id': '0' }, true);
    assert.ok(stalled, 'a place for the stream');
    const beside = await openOnceFree(paced.key);
    try {
      assert.ok(beside, 'a place for the second stream');
      assertError(await service.request('GET', '/v1/event/stream', { key: paced.key }), 503, MESSAGES.streamsFull);
      const third = await openOnceFree(paced.key);
      assert.ok(third, 'the stalled reader\'s place was freed');
      third.close();
      const after = Date.now() - opened;
      assert.ok(after >= 2 * BOUNDS_HEARTBEAT_MS, `freed after ${after} ms: the stall bound, not at once`);
    } finally {
      stalled.close();
      beside?.close();
    }
  });

  /**
   * Holds the table the streams read their project's head from, so that each stream opening waits
   * on it with its place taken. Taken before the streams are asked for: a head read before the hold
   * would open its stream at once, and the wait for `waiting` streams would never end.
   */
  async function holdHeads(on: TestService): Promise<{ waitFor: (waiting: number) => Promise<void>; release: () => Promise<void> }> {
    const client = await on.db.connect();
    const release = () => client.query('ROLLBACK').finally(() => client.release()).then(() => undefined);
    await client.query('BEGIN');
    await client.query('LOCK TABLE project_event_counts IN ACCESS EXCLUSIVE MODE');
    /** Resolves once `waiting` streams wait on the head (and lets go if they do not within 5 s). */
    const waitFor = async (waiting: number) => {
      try {
        for (const deadline = Date.now() + 5000; ; await sleep(20)) {
          const { rows: [{ n }] } = await on.db.query(`SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'project_event_counts'::regclass AND NOT granted`);
          if (n >= waiting) break;
          assert.ok(Date.now() < deadline, `${waiting} streams wait on the head within 5 s: ${n} do`);
        }
      } catch (err) {
        await release();
        throw err;
      }
    };
    return { waitFor, release };
  }

  /**
   * A service of the test's own holding two streams: its places are all free when the test starts
   * (a stream another test closed is freed only once its service sees it go). Without lanes: each
   * stream's read of its head waits on the held table on a connection of its own, where on a lane
   * it could wait behind another's instead, unseen by waitFor.
   */
  async function withTwoPlaces(test: (own: TestService, project: TestProject) => Promise<void>): Promise<void> {
    const own = await TestService.start({ jobWorkers: false, env: { MAX_EVENT_STREAMS: '2', DB_LANES: '0' } });
    try {
      await test(own, await own.createProject('Two places'));
    } finally {
      await own.stop();
    }
  }

  test('streams opening at once cannot pass the bound together', () => withTwoPlaces(async (own, project) => {
    const { waitFor, release } = await holdHeads(own);
    const opening = Array.from({ length: 5 }, () => EventStreamReader.open(own, '/v1/event/stream', project.key));
    await waitFor(2);
    await sleep(200);
    await release();
    const readers = await Promise.all(opening);
    try {
      assert.deepEqual(readers.map((r) => r.status).sort(), [200, 200, 503, 503, 503]);
    } finally {
      for (const reader of readers) reader.close();
    }
  }));

  test('one project holds at most its share of the places, whatever its keys and however many open at once; other projects keep theirs', async () => {
    const own = await TestService.start({ jobWorkers: false, env: { MAX_EVENT_STREAMS: '10', MAX_EVENT_STREAMS_PER_PROJECT: '2', DB_LANES: '0' } });
    const readers: EventStreamReader[] = [];
    try {
      const greedy = await own.createProject('Greedy');
      const second = await createKey(own, greedy.key, { name: 'second streamer', scope: ['event:read'] });
      const other = await own.createProject('Other tenant');
      const { waitFor, release } = await holdHeads(own);
      const opening = Array.from({ length: 5 }, (_, i) => EventStreamReader.open(own, '/v1/event/stream', i % 2 === 0 ? greedy.key : second.key));
      await waitFor(2);
      await sleep(200);
      await release();
      readers.push(...await Promise.all(opening));
      assert.deepEqual(readers.map((r) => r.status).sort(), [200, 200, 503, 503, 503]);
      assertError(await own.request('GET', '/v1/event/stream', { key: second.key }), 503, MESSAGES.streamsFull);
      for (let i = 0; i < 2; i++) readers.push(await EventStreamReader.open(own, '/v1/event/stream', other.key));
      assert.deepEqual(readers.slice(5).map((r) => r.status), [200, 200], 'the other project opens its own');
      // A place given back is the project's again.
      readers.find((r) => r.status === 200)!.close();
      let again: EventStreamReader | undefined;
      for (const deadline = Date.now() + 5000; !again && Date.now() < deadline; await sleep(50)) {
        const attempt = await EventStreamReader.open(own, '/v1/event/stream', greedy.key);
        if (attempt.status === 200) again = attempt;
        else attempt.close();
      }
      assert.ok(again, 'the project opens a stream once one of its own has closed');
      readers.push(again);
    } finally {
      for (const reader of readers) reader.close();
      await own.stop();
    }
  });

  test('a client that leaves while its stream opens gives its place back', () => withTwoPlaces(async (own, project) => {
    const { waitFor, release } = await holdHeads(own);
    const leaving = Array.from({ length: 2 }, () => {
      const req = https.request(new URL('/v1/event/stream', own.baseUrl), {
        headers: { authorization: `Bearer ${project.key}` }, agent: false, ca: readFileSync(own.config.tlsCertFile!),
      });
      req.on('error', () => {});
      req.end();
      return req;
    });
    await waitFor(2);
    for (const req of leaving) req.destroy();
    await sleep(300);
    await release();
    await sleep(300);
    const readers = [await EventStreamReader.open(own, '/v1/event/stream', project.key), await EventStreamReader.open(own, '/v1/event/stream', project.key)];
    try {
      assert.deepEqual(readers.map((r) => r.status), [200, 200]);
    } finally {
      for (const reader of readers) reader.close();
    }
  }));

  test('with every place taken, a known key revoked since is refused (403), not told to wait (503)', async () => {
    const project = await service.createProject('Full, then revoked');
    const made = await createKey(service, project.key, { name: 'revoked behind the process', scope: ['event:read', 'key:read'] });
    assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }), 200, 'the process learns the key');
    const first = await openOnceFree(project.key);
    const second = await openOnceFree(project.key);
    try {
      assert.ok(first && second, 'both places taken');
      await service.db.query(`UPDATE api_keys SET status = 'revoked' WHERE id = $1`, [made.id]);
      assertError(await service.request('GET', '/v1/event/stream', { key: made.key }), 403, MESSAGES.refused);
      assertError(await service.request('GET', '/v1/event/stream', { key: project.key }), 503, MESSAGES.streamsFull);
    } finally {
      first?.close();
      second?.close();
    }
  });

  /** A stream opened once a place is free (the process holds two here, and a closed one's is freed when the service sees it go). */
  async function openOnceFree(key = p.key, headers: Record<string, string> = {}, paused = false): Promise<EventStreamReader | undefined> {
    for (const deadline = Date.now() + 15_000; Date.now() < deadline; await sleep(100)) {
      const attempt = await EventStreamReader.open(service, '/v1/event/stream', key, headers, paused);
      if (attempt.status === 200) return attempt;
      attempt.close();
    }
    return undefined;
  }
});



describe('an ended stream whose reader takes nothing', () => {
  const HEARTBEAT_MS = 500;
  let service: TestService;

  before(async () => {
    // A backlog bound far above what is written: the reader is never cut off for falling behind,
    // so only the end itself can let go of its connection.
    service = await TestService.start({ jobWorkers: false, env: { EVENT_STREAM_BACKLOG_BYTES: '100000000', EVENT_STREAM_HEARTBEAT_MS: String(HEARTBEAT_MS) } });
  });
  after(() => service.stop());

  test('is cut off two heartbeat intervals after its end, instead of holding its connection and its unsent bytes for good', async () => {
    const q = await service.createProject('Ended, unread');
    const streamer = await createKey(service, q.key, { name: 'stalled reader', scope: ['event:read'] });
    const stalled = await EventStreamReader.open(service, '/v1/event/stream', streamer.key, {}, true);
    try {
      // Several MB: more than the sockets' buffers hold, so some stays in the service.
      for (let i = 0; i < 10; i++) await writeEvents(service.db, jobs(q, 500, 1000));
      await sleep(500);
      assertSuccess(await service.request('DELETE', `/v1/key/${streamer.id}`, { key: q.key }), 200);
      const cut = 'event stream ended, its reader took nothing of the rest; connection closed';
      const logged = () => readFileSync(service.logFile, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line))
        .find((entry) => entry.msg === cut && entry.projectId === q.projectId);
      // The sweep ends it within a second; the cut comes two heartbeat intervals later.
      for (const deadline = Date.now() + 1000 + 2 * HEARTBEAT_MS + 3000; !logged(); await sleep(50)) {
        assert.ok(Date.now() < deadline, 'the ended stream\'s connection was not cut off');
      }
      assert.ok(logged().unsentBytes > 0, 'bytes were still held for it');
    } finally {
      stalled.close();
    }
  });
});

describe('a stream opening while the process stops', () => {
  test('is refused (503) instead of left open without heartbeats, and the stop does not wait for it', async () => {
    const service = await TestService.start({ jobWorkers: false });
    const p = await service.createProject('Stopping');
    const locker = new pg.Client({ connectionString: service.databaseUrl });
    await locker.connect();
    let stopping: Promise<void> | undefined;
    try {
      // The stream's head waits on a table the test holds.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE project_event_counts IN ACCESS EXCLUSIVE MODE');
      // On a connection of its own: stopping the test's service ends its agent's connections.
      const opening = new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = https.request(new URL('/v1/event/stream', service.baseUrl), {
          headers: { authorization: `Bearer ${p.key}` }, agent: false, ca: readFileSync(service.config.tlsCertFile!),
        }, (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => { body += chunk; });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end();
      });
      for (const deadline = Date.now() + 5000; ; await sleep(20)) {
        const { rows: [{ n }] } = await locker.query(`SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'project_event_counts'::regclass AND NOT granted`);
        if (n >= 1) break;
        assert.ok(Date.now() < deadline, 'the stream waits on its head');
      }
      const started = Date.now();
      stopping = service.stop();
      await sleep(200);
      await locker.query('ROLLBACK');
      const answer = await opening;
      assert.equal(answer.status, 503, answer.body);
      assert.deepEqual(JSON.parse(answer.body), { code: 503, title: 'Service Unavailable', response: MESSAGES.unavailable });
      await stopping;
      assert.ok(Date.now() - started < 4000, `stopped in ${Date.now() - started} ms`);
    } finally {
      await locker.end();
      if (!stopping) await service.stop();
    }
  });
});
