// fault: a job handler that met an unreachable database failed at once, and its failure could not be
// recorded either, so its jobs sat `active` until their expiry. Handlers now wait the outage out.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rideOutFromNow, rideOutOutage } from '../../workers/ride-out.ts';

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

test('fault: a handler meeting an unreachable database retries until it answers', async () => {
  let calls = 0;
  const result = await rideOutOutage(async () => {
    calls += 1;
    if (calls < 4) throw refused();
    return 'written';
  }, rideOutFromNow(new AbortController().signal));
  assert.equal(result, 'written');
  assert.equal(calls, 4);
});

test('an error that is not an outage is thrown at once, not retried', async () => {
  let calls = 0;
  const fault = Object.assign(new Error('null value in column "type_id"'), { code: '23502' });
  await assert.rejects(rideOutOutage(async () => { calls += 1; throw fault; }, rideOutFromNow(new AbortController().signal)), fault);
  assert.equal(calls, 1);
});

test('a worker that is stopping gives the job back instead of waiting for the database', async () => {
  const stopping = new AbortController();
  let calls = 0;
  const riding = rideOutOutage(async () => { calls += 1; throw refused(); }, rideOutFromNow(stopping.signal));
  setTimeout(() => stopping.abort(), 250);
  const started = Date.now();
  await assert.rejects(riding, { code: 'ECONNREFUSED' });
  assert.ok(Date.now() - started < 2000, 'gave up soon after the stop');
  assert.ok(calls >= 2, 'retried before the stop');
});

test('retrying stops at the deadline: no try starts after it', async () => {
  let calls = 0;
  const started = Date.now();
  await assert.rejects(rideOutOutage(async () => { calls += 1; throw refused(); }, { until: Date.now() + 400, signal: new AbortController().signal }),
    { code: 'ECONNREFUSED' });
  assert.ok(Date.now() - started < 1500, 'gave up at the deadline');
  assert.ok(calls >= 2 && calls <= 4, `${calls} tries in 400 ms (100, 200 ms apart)`);
});
