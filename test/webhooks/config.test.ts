// The webhook settings (lib/config.ts): the retry schedule, its override, the bounds and the
// sealing key, each refused with one line when a process cannot use it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readConfig } from '../../lib/config.ts';
import { StartupError } from '../../lib/startup-error.ts';

test('defaults: the schedule of decisions.md, 15 s per attempt, private addresses refused', () => {
  const config = readConfig({});
  assert.deepEqual(config.webhookRetryScheduleS, [5, 300, 1800, 7200, 18_000, 36_000, 50_400, 72_000, 86_400]);
  assert.equal(config.webhookTimeoutMs, 15_000);
  assert.equal(config.webhookAllowPrivate, false);
  assert.deepEqual([config.webhookMaxInFlight, config.webhookMaxInFlightPerEndpoint], [128, 8]);
  assert.equal(config.sealingKey, undefined);
});

test('overrides are read as meant', () => {
  const key = Buffer.alloc(32, 3).toString('base64');
  const config = readConfig({ WEBHOOK_RETRY_SCHEDULE_S: '1, 2,30', WEBHOOK_ALLOW_PRIVATE: 'true', SEALING_KEY: key });
  assert.deepEqual(config.webhookRetryScheduleS, [1, 2, 30]);
  assert.equal(config.webhookAllowPrivate, true);
  assert.equal(config.sealingKey, key);
});

test('values a process cannot use are refused with their one line, the key never echoed', () => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ WEBHOOK_RETRY_SCHEDULE_S: '5,,10' }, 'WEBHOOK_RETRY_SCHEDULE_S must be whole seconds separated by commas, such as 5,300,1800, got "5,,10".'],
    [{ WEBHOOK_RETRY_SCHEDULE_S: '1.5' }, 'WEBHOOK_RETRY_SCHEDULE_S must be whole seconds separated by commas, such as 5,300,1800, got "1.5".'],
    [{ WEBHOOK_RETRY_SCHEDULE_S: '999999' }, 'WEBHOOK_RETRY_SCHEDULE_S must be whole seconds separated by commas, such as 5,300,1800, got "999999".'],
    [{ WEBHOOK_ALLOW_PRIVATE: 'yes' }, 'WEBHOOK_ALLOW_PRIVATE must be true or false, got "yes".'],
    [{ WEBHOOK_MAX_IN_FLIGHT: '0' }, 'WEBHOOK_MAX_IN_FLIGHT must be a whole number from 1 to 10000, got "0".'],
    [{ SEALING_KEY: 'c2hvcnQ=' }, 'SEALING_KEY must be the base64 of 32 random bytes, such as `openssl rand -base64 32` prints.'],
  ];
  for (const [env, message] of cases) {
    assert.throws(() => readConfig(env), (err: Error) => err instanceof StartupError && err.message === message, JSON.stringify(env));
  }
});
