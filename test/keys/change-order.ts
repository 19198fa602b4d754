// Every API change is one statement whose key must be checked and held before it locks or writes
// any row. A probe trigger fails any write by a backend not yet holding the key's change lock.
// Registered twice: with the planner's usual choices and with the genetic optimizer on every join,
// which reorders what a statement's text cannot pin.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { appBody } from '../apps/helpers.ts';
import { assertError, assertSuccess, MESSAGES } from '../support/assertions.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { changeTriggers } from '../support/triggers.ts';

export function changeOrderTests(label: string): void {
  let service: TestService;
  let probed: TestProject;

  before(async () => {
    service = await TestService.start();
    probed = await service.createProject('Probed');
    await service.db.query(`CREATE FUNCTION test_written_after_check() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND classid = 1801 AND granted) THEN
          RAISE EXCEPTION 'test probe: % % written before the change''s key check', TG_OP, TG_TABLE_NAME;
        END IF;
        RETURN NEW;
      END $$`);
    const when = `WHEN (NEW.project_id = '${probed.projectId}')`;
    await changeTriggers(service.db, [
      `CREATE TRIGGER test_written_after_check BEFORE INSERT OR UPDATE ON apps FOR EACH ROW ${when} EXECUTE FUNCTION test_written_after_check()`,
      `CREATE TRIGGER test_written_after_check BEFORE INSERT OR UPDATE ON api_keys FOR EACH ROW ${when} EXECUTE FUNCTION test_written_after_check()`,
      `CREATE TRIGGER test_written_after_check BEFORE INSERT ON audit_outbox FOR EACH ROW ${when} EXECUTE FUNCTION test_written_after_check()`,
    ]);
  });
  after(() => service.stop());

  /** The log's probe lines, to say which write came first when a change fails. */
  const probeLines = () => service.logText().split('\n').filter((line) => line.includes('test probe')).join('\n');

  test(`${label}: every change writes its rows only after its key is checked and held`, async () => {
    const key = await service.request('POST', '/v1/key', { key: probed.key, body: { name: 'probed key', scope: ['key:read'] } });
    assert.equal(key.status, 201, `POST /v1/key: ${key.text}\n${probeLines()}`);
    const app = await service.request('POST', '/v1/app/create', { key: probed.key, body: appBody({ name: 'probed app' }) });
    assert.equal(app.status, 200, `POST /v1/app/create: ${app.text}\n${probeLines()}`);
    const appId = assertSuccess(app).id;
    const edited = await service.request('PATCH', `/v1/app/detail/${appId}`, { key: probed.key, body: { name: 'probed, renamed' } });
    assert.equal(edited.status, 200, `PATCH: ${edited.text}\n${probeLines()}`);
    const deleted = await service.request('DELETE', `/v1/app/detail/${appId}`, { key: probed.key });
    assert.equal(deleted.status, 200, `DELETE app: ${deleted.text}\n${probeLines()}`);
    let latest = assertSuccess(key, 201).id;
    for (const grace of [60, 0]) {
      const rolled = await service.request('POST', `/v1/key/${latest}/roll`, { key: probed.key, body: { grace_s: grace } });
      assert.equal(rolled.status, 201, `roll, grace_s ${grace}: ${rolled.text}\n${probeLines()}`);
      latest = assertSuccess(rolled, 201).id;
    }
    const revoked = await service.request('DELETE', `/v1/key/${latest}`, { key: probed.key });
    assert.equal(revoked.status, 200, `DELETE key: ${revoked.text}\n${probeLines()}`);
  });

  /** A key the process knows from memory, revoked since behind its back (as through another web process). */
  async function revokedKnownKey() {
    const project = await service.createProject('Revoked known key');
    const made = await createKey(service, project.key, { name: 'soon revoked', scope: ['*'] });
    assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }));
    await service.db.query(`UPDATE api_keys SET status = 'revoked' WHERE id = $1`, [made.id]);
    return made;
  }

  test(`${label}: a change that finds nothing still checks its key: a revoked key gets 403, not 404`, async () => {
    const calls: Array<[string, string, object?]> = [
      ['DELETE', '/v1/key/papi_00000000000000000000'],
      ['DELETE', '/v1/app/detail/mapp_00000000000000000000'],
      ['PATCH', '/v1/app/detail/mapp_00000000000000000000', { name: 'x' }],
      ['POST', '/v1/key/papi_00000000000000000000/roll', {}],
    ];
    for (const [method, path, body] of calls) {
      const revoked = await revokedKnownKey();
      assertError(await service.request(method, path, { key: revoked.key, ...(body ? { body } : {}) }), 403, MESSAGES.refused, `${method} ${path}`);
    }
  });
}
