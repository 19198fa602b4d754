// gateway/wait-until.ts: a key's refusal floor ends at its deadline, never before it, however far
// into a millisecond the wait began. setTimeout alone wakes up to a millisecond early now and then
// (measured: a 2 ms timer after 1.2 ms, begun late in a millisecond), so a floor built on it alone
// would answer some refusals early.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import { waitUntil } from '../../gateway/wait-until.ts';

/** Spends `ms` turn by turn, so that the next wait begins at another point of a millisecond. */
function drift(ms: number): Promise<void> {
  const until = performance.now() + ms;
  return new Promise((resolve) => {
    const turn = () => (performance.now() >= until ? resolve() : setImmediate(turn));
    turn();
  });
}

test('a wait ends no sooner than its deadline, begun anywhere in a millisecond, for whole and fractional spans', async () => {
  const early: string[] = [];
  for (let i = 0; i < 300; i++) {
    await drift((i * 0.37) % 1);
    const span = 0.2 + (i % 7) * 0.55;
    const deadline = performance.now() + span;
    await waitUntil(deadline);
    const ended = performance.now();
    if (ended < deadline) early.push(`${span.toFixed(2)} ms span ended ${(deadline - ended).toFixed(3)} ms early`);
  }
  assert.deepEqual(early, []);
});

test('a deadline already past ends at once, on the next turn of a promise', async () => {
  const order: string[] = [];
  const waited = waitUntil(performance.now() - 5).then(() => order.push('waited'));
  setImmediate(() => order.push('immediate'));
  await waited;
  assert.deepEqual(order, ['waited']);
});

test('a deadline that is not a moment (NaN, infinite) ends at once rather than holding its answer', { timeout: 5000 }, async () => {
  for (const deadline of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
    const order: string[] = [];
    const waited = waitUntil(deadline).then(() => order.push('waited'));
    setImmediate(() => order.push('immediate'));
    await waited;
    assert.deepEqual(order, ['waited'], String(deadline));
  }
});

test('waits in flight together each end no sooner than their own deadline', async () => {
  for (let round = 0; round < 50; round++) {
    const start = performance.now();
    const early: string[] = [];
    await Promise.all([3.6, 0.4, 2.2, 1.1, 2.9, 1.0, 2.0].map((span) => waitUntil(start + span).then(() => {
      const ended = performance.now() - start;
      if (ended < span) early.push(`the ${span} ms wait ended after ${ended.toFixed(3)} ms`);
    })));
    assert.deepEqual(early, [], `round ${round}`);
    await drift(0.37);
  }
});
