// The pace of a process's audit drains (domain/drain-pace.ts): one batch at a time, and under a
// heavy stream of changes batches spaced to gather more events each; a backlog, a slow stream or a
// burst of a few changes goes on at once. Then a drain with a pace over a real stream of changes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { drainOutbox, onEventsDrained, recordEvent } from '../../domain/audit.ts';
import { DrainPace } from '../../domain/drain-pace.ts';
import { change } from '../../domain/services.ts';
import { newId } from '../../lib/ids.ts';
import { TestService } from '../support/service.ts';
import { nowSeconds, sleep } from '../support/wait.ts';

const GATHER_MS = 80;
const FROM_RATE = 400;
const FROM_EVENTS = 8;
const STREAM_RATE = 100;

/** How long `pace`'s next begin() waits after a batch of `events` (full or not), begun `sinceMs` after the one before. */
async function nextWait(pace: DrainPace, events: number, full = false, sinceMs = 10): Promise<number> {
  (await pace.begin())(0, false);
  await sleep(sinceMs);
  const ended = await pace.begin();
  ended(events, full);
  const started = performance.now();
  (await pace.begin())(0, false);
  return performance.now() - started;
}

test('after a batch of a heavy stream the next begins gatherMs after it began; a backlog, a slow stream or a few events go on at once', async () => {
  const pace = () => new DrainPace(GATHER_MS, FROM_RATE, FROM_EVENTS);
  // 20 events 10 ms after the batch before: 2,000 a second.
  const stream = await nextWait(pace(), 20);
  assert.ok(stream >= GATHER_MS - 15 && stream < GATHER_MS + 100, `a heavy stream waits about ${GATHER_MS} ms, waited ${stream.toFixed(1)}`);
  assert.ok(await nextWait(pace(), 500, true) < 15, 'a full batch (a backlog) goes on at once');
  // 10 events 100 ms after the batch before: 100 a second.
  assert.ok(await nextWait(pace(), 10, false, 100) < 15, 'a slow stream goes on at once');
  assert.ok(await nextWait(pace(), FROM_EVENTS - 1, false, 1) < 15, 'a burst of a few changes goes on at once');
  assert.ok(await nextWait(pace(), 0) < 15, 'an empty batch goes on at once');
});

test('one batch at a time: a second drain of the process begins once the first batch ended', async () => {
  const pace = new DrainPace(GATHER_MS, FROM_RATE, FROM_EVENTS);
  const first = await pace.begin();
  let secondBegan = false;
  const second = pace.begin().then((ended) => { secondBegan = true; return ended; });
  await sleep(30);
  assert.equal(secondBegan, false, 'the second waits while the first batch is under way');
  first(0, false);
  (await second)(0, false);
  assert.equal(secondBegan, true);
});

test('a drain told to stop does not wait for its pace', async () => {
  const pace = new DrainPace(60_000, 1, 1);
  (await pace.begin())(0, false);
  (await pace.begin())(100, false);
  const stop = new AbortController();
  const started = performance.now();
  const waiting = pace.begin(stop.signal);
  setTimeout(() => stop.abort(), 50);
  (await waiting)(0, false);
  const waited = performance.now() - started;
  assert.ok(waited >= 40 && waited < 1000, `paced until the signal, then ended by it, not the 60 s pace (${waited.toFixed(1)} ms)`);
});

test('a clock that moves between readings never asks for a negative wait (Node would warn, TimeoutNegativeWarning)', async () => {
  const pace = new DrainPace(GATHER_MS, FROM_RATE, FROM_EVENTS);
  (await pace.begin())(0, false);
  await sleep(10);
  (await pace.begin())(20, false);
  // Each reading 60 ms after the one before: the first 30 ms before the next batch is due, the second 30 ms after.
  const realNow = Date.now;
  let clock = realNow() + GATHER_MS - 90;
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.name);
  process.on('warning', onWarning);
  Date.now = () => (clock += 60);
  try {
    (await pace.begin())(0, false);
    await sleep(20);
  } finally {
    Date.now = realNow;
    process.off('warning', onWarning);
  }
  assert.deepEqual(warnings, []);
});

let idle: TestService;
before(async () => { idle = await TestService.start({ jobWorkers: false }); });
after(() => idle.stop());

test('a paced drain over a stream of changes writes every event once, in order, in fewer and larger batches', async () => {
  const p = await idle.createProject('Paced drain');
  const batches: number[] = [];
  onEventsDrained(idle.db, (events) => batches.push(events.length));
  // Paced from 100 events a second, which eight writers make even on a loaded machine.
  const pace = new DrainPace(GATHER_MS, STREAM_RATE, FROM_EVENTS);
  const stop = new AbortController();
  const draining = drainOutbox(idle.db, Infinity, 500, { ms: 60_000, pace, signal: stop.signal });
  // Eight writers, one change after another each, for about a second.
  const related: string[] = [];
  const until = performance.now() + 1000;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (performance.now() < until) {
      const id = newId('papi');
      await change(idle.services, (tx) => recordEvent(tx, { origin: 'workspace', ip: '127.0.0.1' }, {
        projectId: p.projectId, type: 'plan.changed', related: { table: 'key', id }, details: {}, at: nowSeconds(),
      }));
      related.push(id);
    }
  }));
  const { rows: [{ n }] } = await idle.db.query('SELECT count(*)::int AS n FROM events WHERE project_id = $1', [p.projectId]);
  await sleep(GATHER_MS * 3);
  stop.abort();
  await draining;
  const { rows } = await idle.db.query<{ related_id: string; sequence: string }>(
    'SELECT related_id, sequence FROM events WHERE project_id = $1 ORDER BY sequence', [p.projectId]);
  const written = rows.map((r) => r.related_id).filter((id) => related.includes(id));
  assert.equal(written.length, related.length, `every change's event written once (${related.length} changes)`);
  assert.deepEqual(new Set(written), new Set(related));
  assert.ok(rows.every((r, i) => Number(r.sequence) === i + 1), 'sequences 1..n');
  assert.ok(n > 0, 'the stream was drained while it ran, not only at its end');
  assert.ok(related.length >= 2 * STREAM_RATE, `the stream was heavy enough to be paced: ${related.length} changes in a second`);
  const streamBatches = batches.length;
  assert.ok(streamBatches <= 1000 / GATHER_MS + 5, `${related.length} events in ${streamBatches} batches, at most one per ${GATHER_MS} ms and a few more`);
});
