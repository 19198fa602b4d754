// The bench's verdict (bench/targets.ts) on given figures: no service, no timing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exitCode, judge, TARGETS, verdictTable, type Check } from '../../bench/targets.ts';

const one = (check: Check) => judge([check])[0]!;

test('a throughput target is a floor on the ratio to its reference, inclusive', () => {
  assert.equal(one({ row: 'r', target: 'readThroughput', figure: 600, reference: 1000 }).met, true);
  assert.equal(one({ row: 'r', target: 'readThroughput', figure: 599, reference: 1000 }).met, false);
  assert.equal(one({ row: 'r', target: 'currentThroughput', figure: 8000, reference: 10000 }).ratio, 0.8);
});

test('a p99 target is a ceiling on the ratio to the twin in the same run, whatever the absolute figures', () => {
  // The same ratio on a fast run and a slow one: the same verdict.
  assert.equal(one({ row: 'r', target: 'readP99', figure: 6, reference: 5 }).met, true);
  assert.equal(one({ row: 'r', target: 'readP99', figure: 60, reference: 50 }).met, true);
  assert.equal(one({ row: 'r', target: 'readP99', figure: 61, reference: 50 }).met, false);
  assert.equal(one({ row: 'w', target: 'writeP99', figure: 65, reference: 50 }).met, true);
  assert.equal(one({ row: 'w', target: 'writeP99', figure: 66, reference: 50 }).met, false);
});

test("the event parts are held to POST /v1/key's twin's p99", () => {
  assert.equal(TARGETS.eventVisibilityP99.against, 'POST /v1/key twin');
  assert.equal(one({ row: 'v', target: 'eventVisibilityP99', figure: 30, reference: 20 }).met, true);
  assert.equal(one({ row: 'v', target: 'eventVisibilityP99', figure: 31, reference: 20 }).met, false);
  assert.equal(one({ row: 's', target: 'streamDeliveryP99', figure: 60, reference: 20 }).met, true);
  assert.equal(one({ row: 's', target: 'streamDeliveryP99', figure: 61, reference: 20 }).met, false);
});

test('memory is bounded absolutely, with no ratio', () => {
  const met = one({ row: 'web peak RSS', target: 'webPeakRss', figure: 300 });
  assert.equal(met.met, true);
  assert.equal(met.ratio, undefined);
  assert.equal(one({ row: 'web peak RSS', target: 'webPeakRss', figure: 301 }).met, false);
  assert.equal(one({ row: 'streams RSS', target: 'streamsWebRss', figure: 401 }).met, false);
});

test('a figure or reference not measured misses, whichever way the bound points', () => {
  assert.equal(one({ row: 'r', target: 'readP99', figure: 5 }).met, false);
  assert.equal(one({ row: 'r', target: 'readP99', figure: 5, reference: 0 }).met, false);
  assert.equal(one({ row: 'r', target: 'readThroughput', figure: 500, reference: NaN }).met, false);
  assert.equal(one({ row: 'v', target: 'eventVisibilityP99', figure: NaN, reference: 20 }).met, false);
  assert.equal(one({ row: 'm', target: 'webPeakRss', figure: NaN }).met, false);
});

test('the exit code: 0 only with every target met and no measurement gone wrong', () => {
  const met = judge([{ row: 'a', target: 'readP99', figure: 5, reference: 5 }, { row: 'b', target: 'webPeakRss', figure: 200 }]);
  const missed = judge([{ row: 'a', target: 'readP99', figure: 5, reference: 5 }, { row: 'b', target: 'webPeakRss', figure: 400 }]);
  assert.equal(exitCode(met, []), 0);
  assert.equal(exitCode(missed, []), 1);
  assert.equal(exitCode(met, ['GET /v1/key: 3 non-2xx, 0 errors']), 1);
  assert.equal(exitCode([], []), 0);
});

test('the table: row, figure, the figure against, ratio, target by name, met or missed', () => {
  const table = verdictTable(judge([
    { row: 'GET /v1/key p99', target: 'readP99', figure: 15, reference: 10 },
    { row: 'web peak RSS', target: 'webPeakRss', figure: 212.4 },
  ]));
  assert.deepEqual(table.split('\n'), [
    '| row | figure | against | ratio | target | verdict |',
    '|---|---:|---:|---:|---|---|',
    '| GET /v1/key p99 | 15.0 ms | 10.0 ms | 1.50x | at most 1.2x twin (readP99) | **missed** |',
    '| web peak RSS | 212 MB | - | - | at most 300 MB (webPeakRss) | met |',
  ]);
});
