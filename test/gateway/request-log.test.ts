// A flood of refusals costs a bounded number of log lines per client address and second; what was
// left out is counted in a line of its own, and successes are always logged.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { REFUSAL_LINES_PER_SECOND } from '../../gateway/request-log.ts';
import { TestService } from '../support/service.ts';
import { sleep } from '../support/wait.ts';

let service: TestService;
before(async () => {
  service = await TestService.start({ jobWorkers: false });
});
after(() => service.stop());

function logLines(): Array<Record<string, any>> {
  return service.logText().split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

test('refusals past the bound are counted, not logged; the count adds up to every refusal', async () => {
  const project = await service.createProject('Logged');
  const started = Date.now();
  const flood = 60;
  for (let i = 0; i < flood; i++) {
    const reply = await service.request('GET', `/v1/key?n=${i}`);
    assert.equal(reply.status, 401);
  }
  const seconds = Math.ceil((Date.now() - started) / 1000) + 1;
  assert.equal((await service.request('GET', '/v1/key/current', { key: project.key })).status, 200);
  await sleep(1500);
  const lines = logLines();
  const logged = lines.filter((l) => l.msg === 'request' && l.status === 401 && l.clientIp === '127.0.0.1').length;
  const omitted = lines.filter((l) => l.msg === 'refused requests not logged' && l.clientIp === '127.0.0.1')
    .reduce((sum, l) => sum + l.omitted, 0);
  assert.equal(logged + omitted, flood, `logged ${logged} + omitted ${omitted}`);
  assert.ok(logged <= REFUSAL_LINES_PER_SECOND * seconds, `${logged} lines in ${seconds} s`);
  assert.ok(omitted > 0);
  assert.equal(lines.filter((l) => l.msg === 'request' && l.status === 200 && l.path === '/v1/key/current').length, 1, 'a success is logged');
  assert.ok(lines.every((l) => !JSON.stringify(l).includes(project.key)), 'no secret in the log');
});
