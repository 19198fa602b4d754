// The typed client's `webhooks` group against the real service: each method reaches its endpoint
// and answers what it returns; a failure is an ApiError with the envelope's message.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { ApiError, Client } from '../../client/node.ts';
import { TestService } from '../support/service.ts';

let service: TestService;
let client: Client;

before(async () => {
  service = await TestService.start({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  const project = await service.createProject('Client webhooks');
  client = new Client({ baseUrl: service.baseUrl, apiKey: project.key, ca: readFileSync(service.config.tlsCertFile!) });
});
after(async () => {
  client?.close();
  await service?.stop();
});

test('create, list, get, update, rotate, deliveries, replay, delete', async () => {
  const made = await client.webhooks.create({ url: 'https://127.0.0.1:9/client', types: ['app.deleted'] });
  assert.match(made.secret, /^whsec_/);
  assert.deepEqual((await client.webhooks.list({ limit: 5 })).data.map((w) => w.id), [made.id]);
  assert.equal((await client.webhooks.get(made.id)).url, 'https://127.0.0.1:9/client');
  const edited = await client.webhooks.update(made.id, { description: 'Edited', status: 'disabled' });
  assert.deepEqual([edited.description, edited.status, edited.disabled_reason], ['Edited', 'disabled', 'manual']);
  const rotated = await client.webhooks.rotateSecret(made.id);
  assert.notEqual(rotated.secret, made.secret);
  assert.deepEqual(await client.webhooks.deliveries(made.id), { object: 'list', data: [], total: 0 });
  await assert.rejects(client.webhooks.replay(made.id, 0), (err: unknown) => err instanceof ApiError && err.status === 422 && err.message === 'The webhook endpoint is disabled.');
  await client.webhooks.update(made.id, { status: 'enabled' });
  assert.deepEqual(await client.webhooks.replay(made.id, 0), { queued: 0 });
  assert.deepEqual(await client.webhooks.delete(made.id), { deleted: true, id: made.id });
  await assert.rejects(client.webhooks.get(made.id), (err: unknown) => err instanceof ApiError && err.status === 404 && err.message === 'Webhook endpoint not found.');
});
