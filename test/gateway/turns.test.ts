// The bounds on requests in progress once authenticated (gateway/turns.ts), on their own with fake
// requests and responses: per key, per project and per process; those waiting started as places
// free, projects in turn and within one its keys in turn; a client gone while waiting never starts.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import { releaseTurn, takeTurns, type TurnOptions } from '../../gateway/turns.ts';
import type { GatewayRequest } from '../../gateway/types.ts';

/** A turn of the event loop: places freed are handed on in the next one. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

function harness(options: TurnOptions) {
  const take = takeTurns(options);
  const started: string[] = [];
  const responses = new Map<string, EventEmitter & { end(): void }>();
  return {
    started,
    /** A request of `key` in `project`, named `name`. */
    send(name: string, key: string, project: string) {
      const res = Object.assign(new EventEmitter(), { end() {} });
      responses.set(name, res);
      const req = { caller: { id: key, project_id: project } } as unknown as GatewayRequest;
      take(req, res as never, (result) => {
        assert.equal(result, undefined);
        started.push(name);
      });
    },
    /** The answer written (restify's send ends the response). */
    finish(name: string) {
      responses.get(name)!.end();
    },
    close(name: string) {
      responses.get(name)!.emit('close');
    },
    release(name: string) {
      releaseTurn(responses.get(name) as unknown as ServerResponse);
    },
  };
}

test('a key has at most its bound in progress; the next starts once one is answered', async () => {
  const h = harness({ maxPerKey: 2, maxPerProject: 0, maxInProgress: 0, maxPerProjectShared: 0 });
  for (const name of ['a1', 'a2', 'a3', 'a4']) h.send(name, 'papi_a', 'proj_p');
  h.send('b1', 'papi_b', 'proj_p');
  assert.deepEqual(h.started, ['a1', 'a2', 'b1']);
  h.finish('a1');
  // Not within the turn that freed it: a place is handed on in the next turn.
  assert.deepEqual(h.started, ['a1', 'a2', 'b1']);
  await nextTurn();
  assert.deepEqual(h.started, ['a1', 'a2', 'b1', 'a3']);
  h.finish('a2');
  h.close('a2');
  await nextTurn();
  assert.deepEqual(h.started, ['a1', 'a2', 'b1', 'a3', 'a4'], 'one place for an answer, however many events end it');
  h.send('a5', 'papi_a', 'proj_p');
  h.finish('a2');
  await nextTurn();
  assert.deepEqual(h.started, ['a1', 'a2', 'b1', 'a3', 'a4'], 'an answer ended twice gives its place back once');
});

test('a project has at most its bound over all its keys, its keys served in turn', async () => {
  const h = harness({ maxPerKey: 0, maxPerProject: 2, maxInProgress: 0, maxPerProjectShared: 0 });
  for (const name of ['a1', 'a2', 'a3', 'a4']) h.send(name, 'papi_a', 'proj_p');
  for (const name of ['b1', 'b2']) h.send(name, 'papi_b', 'proj_p');
  h.send('other', 'papi_c', 'proj_q');
  assert.deepEqual(h.started, ['a1', 'a2', 'other']);
  h.finish('a1');
  await nextTurn();
  h.finish('a2');
  await nextTurn();
  h.finish('a3');
  await nextTurn();
  assert.deepEqual(h.started, ['a1', 'a2', 'other', 'a3', 'b1', 'a4'], 'keys a and b in turn');
});

test('past the process bound, the projects waiting are served in turn, whatever each has queued', async () => {
  const h = harness({ maxPerKey: 0, maxPerProject: 0, maxInProgress: 2, maxPerProjectShared: 0 });
  for (let i = 1; i <= 6; i++) h.send(`p${i}`, 'papi_p', 'proj_p');
  for (let i = 1; i <= 3; i++) h.send(`q${i}`, 'papi_q', 'proj_q');
  h.send('r1', 'papi_r', 'proj_r');
  assert.deepEqual(h.started, ['p1', 'p2']);
  for (const name of ['p1', 'p2']) h.finish(name);
  await nextTurn();
  assert.deepEqual(h.started.slice(2), ['p3', 'q1'], 'two places: one project each');
  for (const name of ['p3', 'q1']) h.finish(name);
  await nextTurn();
  assert.deepEqual(h.started.slice(4), ['r1', 'p4']);
  for (const name of ['r1', 'p4']) h.finish(name);
  await nextTurn();
  assert.deepEqual(h.started.slice(6), ['q2', 'p5']);
});

test('a request whose client left while it waited never starts; a released place (a stream begun) is given back', async () => {
  const h = harness({ maxPerKey: 1, maxPerProject: 0, maxInProgress: 0, maxPerProjectShared: 0 });
  for (const name of ['a1', 'a2', 'a3']) h.send(name, 'papi_a', 'proj_p');
  h.close('a2');
  h.release('a1');
  await nextTurn();
  assert.deepEqual(h.started, ['a1', 'a3']);
  // a1's answer later gives nothing back twice.
  h.finish('a1');
  h.send('a4', 'papi_a', 'proj_p');
  await nextTurn();
  assert.deepEqual(h.started, ['a1', 'a3']);
  h.finish('a3');
  await nextTurn();
  assert.deepEqual(h.started, ['a1', 'a3', 'a4']);
});

test('requests without a key (health, the document) pass untouched', () => {
  const take = takeTurns({ maxPerKey: 1, maxPerProject: 1, maxInProgress: 1, maxPerProjectShared: 1 });
  let passed = 0;
  for (let i = 0; i < 5; i++) take({} as GatewayRequest, new EventEmitter() as never, () => { passed++; });
  assert.equal(passed, 5);
});

test('while another project is served, a project holds only its shared bound; alone again, its whole bound', async () => {
  const h = harness({ maxPerKey: 0, maxPerProject: 8, maxInProgress: 0, maxPerProjectShared: 2 });
  for (let i = 1; i <= 4; i++) h.send(`p${i}`, 'papi_p', 'proj_p');
  assert.deepEqual(h.started, ['p1', 'p2', 'p3', 'p4'], 'alone: up to its bound');
  h.send('q1', 'papi_q', 'proj_q');
  for (let i = 5; i <= 8; i++) h.send(`p${i}`, 'papi_p', 'proj_p');
  assert.deepEqual(h.started.slice(4), ['q1'], 'another project in progress: no more than the shared bound');
  for (const name of ['p1', 'p2', 'p3']) h.finish(name);
  await nextTurn();
  assert.deepEqual(h.started.slice(5), ['p5'], 'back under the shared bound of 2');
  h.finish('q1');
  h.finish('p4');
  await nextTurn();
  assert.deepEqual(h.started.slice(6), ['p6'], 'the other asked lately: still shared, two in progress');
  await new Promise((resolve) => setTimeout(resolve, 300));
  h.finish('p5');
  await nextTurn();
  assert.deepEqual(h.started.slice(7), ['p7', 'p8'], 'alone again: its whole bound');
});

test('a request in progress for sharedHoldMs stops holding its project\'s shared place: a slow one does not hold up the rest', async () => {
  const h = harness({ maxPerKey: 0, maxPerProject: 8, maxInProgress: 0, maxPerProjectShared: 1, sharedHoldMs: 100 });
  h.send('q1', 'papi_q', 'proj_q');
  h.send('p1', 'papi_p', 'proj_p');
  h.send('p2', 'papi_p', 'proj_p');
  h.send('p3', 'papi_p', 'proj_p');
  assert.deepEqual(h.started, ['q1', 'p1'], 'shared: one in progress');
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(h.started, ['q1', 'p1'], 'p1 still holds the place before sharedHoldMs');
  await new Promise((resolve) => setTimeout(resolve, 150));
  assert.deepEqual(h.started.slice(0, 3), ['q1', 'p1', 'p2'], 'p1, in progress for sharedHoldMs, gave the place to p2');
  h.finish('q1');
  h.finish('p1');
  h.finish('p2');
  h.finish('p3');
});

test('slow requests beside the shared bound are bounded too: a load that makes every request slow gives a flood no more', async () => {
  const h = harness({ maxPerKey: 0, maxPerProject: 8, maxInProgress: 0, maxPerProjectShared: 1, sharedHoldMs: 20 });
  h.send('q1', 'papi_q', 'proj_q');
  for (let i = 1; i <= 6; i++) h.send(`p${i}`, 'papi_p', 'proj_p');
  await new Promise((resolve) => setTimeout(resolve, 250));
  assert.deepEqual(h.started, ['q1', 'p1', 'p2', 'p3', 'p4'], 'one holding and three slow, none more however long they take');
  h.finish('p1');
  await nextTurn();
  assert.deepEqual(h.started.slice(5), ['p5'], 'one done: the next starts');
  for (const name of ['q1', 'p2', 'p3', 'p4', 'p5']) h.finish(name);
});

test('a request started by a place given back is looked at again once old, though no timer ran before it', async () => {
  const h = harness({ maxPerKey: 0, maxPerProject: 8, maxInProgress: 0, maxPerProjectShared: 1, sharedHoldMs: 30 });
  h.send('q1', 'papi_q', 'proj_q');
  for (let i = 1; i <= 6; i++) h.send(`p${i}`, 'papi_p', 'proj_p');
  await new Promise((resolve) => setTimeout(resolve, 250));
  assert.deepEqual(h.started, ['q1', 'p1', 'p2', 'p3', 'p4'], 'all slow, at the bound of slow ones: nothing left to time');
  h.finish('p1');
  await nextTurn();
  assert.deepEqual(h.started.slice(5), ['p5'], 'a place given back: p5 starts');
  h.finish('p2');
  await nextTurn();
  assert.deepEqual(h.started.slice(6), [], 'p5 holds the shared place');
  await new Promise((resolve) => setTimeout(resolve, 150));
  assert.deepEqual(h.started.slice(6), ['p6'], 'p5 grew old: p6 starts, without waiting for an answer');
  for (const name of ['q1', 'p3', 'p4', 'p5', 'p6']) h.finish(name);
});

test('a project alone keeps its whole bound, though it falls idle between its requests', async () => {
  const h = harness({ maxPerKey: 0, maxPerProject: 8, maxInProgress: 0, maxPerProjectShared: 2 });
  h.send('p1', 'papi_p', 'proj_p');
  h.finish('p1');
  await nextTurn();
  for (let i = 2; i <= 5; i++) h.send(`p${i}`, 'papi_p', 'proj_p');
  assert.deepEqual(h.started, ['p1', 'p2', 'p3', 'p4', 'p5']);
});
