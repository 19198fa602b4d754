// Signed checkpoints of the audit trail: made by the worker for each project whose chain moved,
// at most once per interval; served by GET /v1/event/checkpoint; checkable by anyone with the
// public key from /.well-known/audit-keys.json; checked by `workspace events verify`.
import assert from 'node:assert/strict';
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { verifyCheckpoint } from '../../client/index.ts';
import { ApiError, Client } from '../../client/node.ts';
import { loadSigner } from '../../domain/checkpoints.ts';
import { verifyProjectChain } from '../../domain/projects.ts';
import { readConfig } from '../../lib/config.ts';
import { StartupError } from '../../lib/startup-error.ts';
import { assertError, assertSuccess, MESSAGES } from '../support/assertions.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { tempDir } from '../support/tmp.ts';
import { sleep, waitFor } from '../support/wait.ts';

const signingKey = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
const rawPublic = Buffer.from(createPublicKey(createPrivateKey(signingKey)).export({ format: 'jwk' }).x!, 'base64url');
const KEY_ID = createHash('sha256').update(rawPublic).digest('hex');
const CHECKPOINT_MEMBERS = ['object', 'project', 'sequence', 'hash', 'created_at', 'key_id', 'signature'];

let service: TestService;
before(async () => {
  service = await TestService.start({ env: { AUDIT_SIGNING_KEY: signingKey } });
});
after(() => service.stop());

const checkpoint = (p: TestProject, query = '') => service.request('GET', `/v1/event/checkpoint${query}`, { key: p.key });

/** Waits for the project's latest checkpoint to reach `sequence`. */
async function checkpointAt(p: TestProject, sequence: number): Promise<any> {
  return waitFor(`a checkpoint at sequence ${sequence}`, async () => {
    const reply = await checkpoint(p);
    return reply.status === 200 && reply.body.response.sequence === sequence ? reply.body.response : undefined;
  }, 10_000, 100);
}

/** What a third party does with a kept checkpoint and the published key. */
function signatureHolds(c: any, publicKeyBase64: string): boolean {
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKeyBase64, 'base64').toString('base64url') }, format: 'jwk' });
  const text = `pms-audit-checkpoint/v1\n${c.project}\n${c.sequence}\n${c.hash}\n${c.created_at}\n`;
  return verify(null, Buffer.from(text, 'utf8'), key, Buffer.from(c.signature, 'base64'));
}

async function addEvents(p: TestProject, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    assertSuccess(await service.request('POST', '/v1/key', { key: p.key, body: { name: `k${i}`, scope: ['key:read'] } }), 201);
  }
}

test('a new project\'s head is signed at once, and the signature verifies under the published key', async () => {
  const p = await service.createProject('Signed');
  const made = await checkpointAt(p, 2);
  assert.deepEqual(Object.keys(made), CHECKPOINT_MEMBERS);
  assert.equal(made.object, 'checkpoint');
  assert.equal(made.project, p.projectId);
  assert.equal(made.key_id, KEY_ID);
  assert.ok(Number.isInteger(made.created_at) && Math.abs(made.created_at - Date.now() / 1000) < 30);
  const feed = assertSuccess(await service.request('GET', '/v1/event', { key: p.key }));
  assert.equal(made.hash, feed.data.find((e: any) => e.sequence === 2).hash, 'the hash of the event at its sequence');

  const keys = await service.request('GET', '/.well-known/audit-keys.json');
  assert.equal(keys.status, 200);
  assert.match(String(keys.headers['content-type']), /^application\/json/);
  assert.deepEqual(keys.body, { keys: [{ id: KEY_ID, algorithm: 'ed25519', public_key: rawPublic.toString('base64'), created_at: keys.body.keys[0].created_at }] });
  assert.ok(Number.isInteger(keys.body.keys[0].created_at));
  assert.ok(signatureHolds(made, keys.body.keys[0].public_key));
  assert.ok(!signatureHolds({ ...made, sequence: made.sequence + 1 }, keys.body.keys[0].public_key), 'another head does not verify');
});

test('?sequence=n answers the checkpoint made at exactly n; none there is 404, a bad n 422', async () => {
  const p = await service.createProject('By sequence');
  const first = await checkpointAt(p, 2);
  assert.deepEqual(assertSuccess(await checkpoint(p, '?sequence=2')), first);
  assertError(await checkpoint(p, '?sequence=1'), 404, 'Checkpoint not found.');
  assertError(await checkpoint(p, '?sequence=99999'), 404, 'Checkpoint not found.');
  for (const bad of ['0', '-1', '1.5', 'abc', '', '99999999999999999999']) {
    assertError(await checkpoint(p, `?sequence=${bad}`), 422, 'sequence must be a positive integer.', bad);
  }
  assertError(await checkpoint(p, '?sequence=1&sequence=2'), 422, 'sequence must be a positive integer.');
});

test('a project is signed again only once its latest checkpoint is an interval old', async () => {
  const p = await service.createProject('Interval');
  await checkpointAt(p, 2);
  await addEvents(p, 2);
  await service.waitForEvents(p.projectId, 4);
  await sleep(2500);
  assert.equal(assertSuccess(await checkpoint(p)).sequence, 2, 'within the interval (60 s) no new checkpoint');
  await service.db.query('UPDATE audit_checkpoints SET created_at = created_at - 60 WHERE project_id = $1', [p.projectId]);
  const next = await checkpointAt(p, 4);
  assert.equal(assertSuccess(await checkpoint(p, '?sequence=2')).sequence, 2, 'the earlier one is kept');
  assert.equal(next.key_id, KEY_ID);
});

test('a project sees only its own checkpoints; the endpoint needs event:read', async () => {
  const a = await service.createProject('Mine');
  const b = await service.createProject('Theirs');
  const mine = await checkpointAt(a, 2);
  const theirs = await checkpointAt(b, 2);
  assert.equal(mine.project, a.projectId);
  assert.equal(theirs.project, b.projectId);
  assert.deepEqual(assertSuccess(await checkpoint(b, '?sequence=2')), theirs);
  const narrow = assertSuccess(await service.request('POST', '/v1/key', { key: a.key, body: { name: 'keys only', scope: ['key:read'] } }), 201);
  assertError(await service.request('GET', '/v1/event/checkpoint', { key: narrow.key }), 403, MESSAGES.missingScope('event:read'));
  assertError(await service.request('GET', '/v1/event/checkpoint'), 401, MESSAGES.noKey);
});

test('workspace events verify checks the latest checkpoint, and names one that does not hold', async () => {
  const p = await service.createProject('Verified');
  await checkpointAt(p, 2);
  assert.deepEqual(await verifyProjectChain(service.services, p.projectId), { project: { id: p.projectId }, events: 2, verified: true, checkpoint: 2 });

  const [{ signature }] = (await service.db.query('SELECT signature FROM audit_checkpoints WHERE project_id = $1', [p.projectId])).rows;
  const forged = Buffer.from(signature, 'base64');
  forged[0] ^= 1;
  await service.db.query('UPDATE audit_checkpoints SET signature = $2 WHERE project_id = $1', [p.projectId, forged.toString('base64')]);
  assert.deepEqual(await verifyProjectChain(service.services, p.projectId), {
    project: { id: p.projectId }, events: 2, verified: false, sequence: 2, reason: 'checkpoint 2: its signature does not verify', checkpoint: 2,
  });
  await service.db.query('UPDATE audit_checkpoints SET signature = $2, hash = $3 WHERE project_id = $1', [p.projectId, signature, '0'.repeat(64)]);
  assert.equal((await verifyProjectChain(service.services, p.projectId) as { reason: string }).reason, 'checkpoint 2: its signature does not verify',
    'a rewritten hash breaks the signature');

  const q = await service.createProject('No checkpoint yet');
  await service.db.query('DELETE FROM audit_checkpoints WHERE project_id = $1', [q.projectId]);
  const verdict = await verifyProjectChain(service.services, q.projectId);
  assert.ok(verdict.checkpoint === null || verdict.checkpoint === 2, 'null until the worker signs');
});

test('without AUDIT_SIGNING_KEY a key is made once under DATA_DIR, readable by its owner alone; a bad key stops the start', () => {
  const dataDir = tempDir('pms-signing-');
  const first = loadSigner(readConfig({ DATA_DIR: dataDir }));
  const again = loadSigner(readConfig({ DATA_DIR: dataDir }));
  assert.equal(again.keyId, first.keyId);
  assert.equal(statSync(path.join(dataDir, 'audit-signing-key.pem')).mode & 0o777, 0o600);
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
  for (const bad of ['not a key', rsa]) {
    assert.throws(() => loadSigner(readConfig({ AUDIT_SIGNING_KEY: bad })),
      (err) => err instanceof StartupError && err.message === 'AUDIT_SIGNING_KEY must be an Ed25519 private key in PKCS#8 PEM.');
  }
});

test('the typed client reads a checkpoint and verifyCheckpoint checks it with the public key alone', async () => {
  const p = await service.createProject('Client verifies');
  await checkpointAt(p, 2);
  const client = new Client({ baseUrl: service.baseUrl, apiKey: p.key, ca: readFileSync(service.config.tlsCertFile!) });
  try {
    const kept = await client.events.checkpoint();
    assert.deepEqual(await client.events.checkpoint(2), kept);
    const published = rawPublic.toString('base64');
    assert.equal(await verifyCheckpoint(kept, published), true);
    assert.equal(await verifyCheckpoint({ ...kept, hash: '0'.repeat(64) }, published), false, 'a rewritten head');
    const other = Buffer.from(generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!, 'base64url');
    assert.equal(await verifyCheckpoint(kept, other.toString('base64')), false, 'another key');
    await assert.rejects(client.events.checkpoint(99_999), (err: unknown) => err instanceof ApiError && err.status === 404 && err.message === 'Checkpoint not found.');
  } finally {
    client.close();
  }
});
