// Checksummed secrets (using-the-api.md, "Key secrets"): `sk-project-`, 43 random base62
// characters, the project in 14, then the CRC32 of those 57 as 6 base62 characters. A bearer value
// of another shape, or whose checksum fails, is refused with the unknown key's 403 without a
// database lookup; secrets made before the checksum, or before the project part, keep working.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { after, before, test } from 'node:test';
import { LookupCounter } from '../support/lookups.ts';
import { assertError, assertSuccess, MESSAGES } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
let service: TestService;
let p: TestProject;
let lookups: LookupCounter;

/** The CRC32 of the text as 6 base62 characters, most significant first. */
function checksum(text: string): string {
  let value = crc32(text);
  let out = '';
  for (let i = 0; i < 6; i++, value = Math.floor(value / 62)) out = BASE62[value % 62] + out;
  return out;
}

before(async () => {
  service = await TestService.start({ jobWorkers: false, env: { AUTH_REFUSALS_PER_MINUTE: '0' } });
  p = await service.createProject('Secrets');
  lookups = await LookupCounter.open(service.databaseUrl);
});
after(async () => {
  await lookups?.close();
  await service?.stop();
});

test('a new secret is the prefix, 43 random base62 characters, the project in 14 and their CRC32 in 6', async () => {
  for (const secret of [p.key, (await createKey(service, p.key, { name: 'checksummed' })).key]) {
    const match = /^sk-project-([0-9A-Za-z]{43}([0-9A-Za-z]{14}))([0-9A-Za-z]{6})$/.exec(secret);
    assert.ok(match, secret.slice(0, 14));
    const project = [...match[2]!].reduce((value, c) => value * 62n + BigInt(BASE62.indexOf(c)), 0n);
    assert.equal(`proj_${project.toString(16).padStart(20, '0')}`, p.projectId);
    const checksum = [...match[3]!].reduce((value, c) => value * 62 + BASE62.indexOf(c), 0);
    assert.equal(checksum, crc32(match[1]!));
  }
});

test('a secret whose project part names another project is refused as an unknown one', async () => {
  const other = await service.createProject('Other');
  const made = await createKey(service, p.key, { name: 'named elsewhere', scope: ['key:read'] });
  const body = made.key.slice('sk-project-'.length, -6);
  const elsewhere = body.slice(0, 43) + other.key.slice('sk-project-'.length + 43, -6);
  const forged = `sk-project-${elsewhere}${checksum(elsewhere)}`;
  await service.db.query('UPDATE api_keys SET secret_hash = $2 WHERE id = $1', [made.id, createHash('sha256').update(forged).digest()]);
  assertError(await service.request('GET', '/v1/key/current', { headers: { authorization: `Bearer ${forged}` } }), 403, MESSAGES.refused);
});

test('a wrong checksum or shape: the unknown key\'s 403, without a database lookup', async (t) => {
  const last = p.key.at(-1)!;
  const wrongChecksum = p.key.slice(0, -1) + (last === 'a' ? 'b' : 'a');
  const before = lookups.available ? await lookups.count() : 0;
  for (const value of [wrongChecksum, p.key.slice(0, -1), `${p.key}0`, 'sk-project-short', `${p.key.slice(0, -2)}-_`, 'pk-project-' + p.key.slice(11)]) {
    assertError(await service.request('GET', '/v1/key/current', { headers: { authorization: `Bearer ${value}` } }), 403, MESSAGES.refused, JSON.stringify(value.slice(0, 16)));
  }
  if (lookups.available) assert.equal(await lookups.count(), before, 'no lookup was made for any of them');
  else t.diagnostic('pg_stat_statements is not available: the lookup count was not checked');
  assertSuccess(await service.request('GET', '/v1/key/current', { key: p.key }), 200);
});

test('secrets made before checksums (43 characters alone), or before the project part, keep working', async () => {
  const random = 'Legacy0'.repeat(6) + 'X';
  for (const legacy of [`sk-project-${random}`, `sk-project-${random}${checksum(random)}`]) {
    const made = await createKey(service, p.key, { name: 'made before', scope: ['key:read'] });
    const hash = createHash('sha256').update(legacy).digest();
    await service.db.query('UPDATE api_keys SET secret_hash = $2 WHERE id = $1', [made.id, hash]);
    // On Citus, release wrote the keys there were into api_key_routes when it distributed (a
    // view of api_keys elsewhere): a key of before has its route there.
    await service.db.query(`DO $$ BEGIN
      IF EXISTS (SELECT FROM pg_tables WHERE tablename = 'api_key_routes') THEN
        INSERT INTO api_key_routes (secret_hash, project_id) VALUES (decode('${hash.toString('hex')}', 'hex'), '${p.projectId}');
      END IF; END $$`);
    const current = assertSuccess(await service.request('GET', '/v1/key/current', { key: legacy }), 200);
    assert.equal(current.id, made.id);
  }
});
