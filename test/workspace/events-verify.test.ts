// `workspace events verify <proj_id>` (decisions.md, "Running it"): recomputes a project's whole
// hash chain from its stored events; an event edited with SQL afterwards is caught and named.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { runWorkspace, workspaceOk } from '../support/cli.ts';
import { createKey } from '../support/keys.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { waitFor } from '../support/wait.ts';

let service: TestService;
let p: TestProject;
/** The sequence of the project's one checkpoint (the next is an interval, 60 s, away). */
let signed: number;

before(async () => {
  service = await TestService.start();
  p = await service.createProject('Verified');
  for (let i = 0; i < 3; i++) await createKey(service, p.key, { name: `verified ${i}`, scope: ['key:read'] });
  await service.waitForEvents(p.projectId, 5);
  await service.waitForJobsDrained();
  signed = await waitFor('the first checkpoint', async () => {
    const { rows } = await service.db.query('SELECT sequence::int AS s FROM audit_checkpoints WHERE project_id = $1', [p.projectId]);
    return rows[0]?.s as number | undefined;
  }, 10_000, 100);
});
after(() => service.stop());


/** The constraint an error names: Citus passes a shard's error on without its constraint field. */
const constraintOf = (err: { constraint?: string; message: string }) => err.constraint ?? /constraint "(\w+)"/.exec(err.message)?.[1];

test('an untouched trail verifies, its latest checkpoint too', async () => {
  assert.deepEqual(await workspaceOk(service, ['events', 'verify', p.projectId]), { project: { id: p.projectId }, events: 5, verified: true, checkpoint: signed });
});

test('a checkpoint whose signature does not verify is named, exit 1', async () => {
  const [{ signature }] = (await service.db.query('SELECT signature FROM audit_checkpoints WHERE project_id = $1', [p.projectId])).rows;
  await service.db.query('UPDATE audit_checkpoints SET created_at = created_at + 1 WHERE project_id = $1', [p.projectId]);
  try {
    const outcome = await runWorkspace(service, ['events', 'verify', p.projectId]);
    assert.equal(outcome.code, 1, outcome.stderr);
    assert.deepEqual(JSON.parse(outcome.stdout), {
      project: { id: p.projectId }, events: 5, verified: false, sequence: signed, reason: `checkpoint ${signed}: its signature does not verify`, checkpoint: signed,
    });
    assert.equal(outcome.stderr, `the chain breaks at sequence ${signed}: checkpoint ${signed}: its signature does not verify.\n`);
  } finally {
    await service.db.query('UPDATE audit_checkpoints SET created_at = created_at - 1, signature = $2 WHERE project_id = $1', [p.projectId, signature]);
  }
});

test('an event edited with SQL is caught: the first sequence that breaks is named, exit 1', async () => {
  await service.db.query(`UPDATE events SET ip_address = '203.0.113.66' WHERE project_id = $1 AND sequence = 4`, [p.projectId]);
  const outcome = await runWorkspace(service, ['events', 'verify', p.projectId]);
  assert.equal(outcome.code, 1, outcome.stderr);
  assert.deepEqual(JSON.parse(outcome.stdout), {
    project: { id: p.projectId }, events: 3, verified: false, sequence: 4,
    reason: 'its hash does not match its content and the previous hash', checkpoint: signed,
  });
  assert.equal(outcome.stderr, 'the chain breaks at sequence 4: its hash does not match its content and the previous hash.\n');
});

test('an edited event cannot shed its hash, so no command (each runs release, which hashes what has none) hashes the edit anew; nor move within its second', async () => {
  const other = await service.createProject('Laundered');
  await createKey(service, other.key, { name: 'to be edited', scope: ['key:read'] });
  await service.waitForEvents(other.projectId, 3);
  await service.waitForJobsDrained();
  await assert.rejects(
    service.db.query(`UPDATE events SET details = jsonb_set(details, '{name}', '"evil"'), hash = NULL WHERE project_id = $1 AND sequence = 3`, [other.projectId]),
    (err: { code?: string; constraint?: string; message: string }) => err.code === '23514' && constraintOf(err) === 'events_hash_written',
  );
  // Nor gain a fraction of a second, which the hash (whole seconds) would not see and the feed's
  // order within the second would.
  await assert.rejects(
    // From numbers: Citus takes no STABLE operator (timestamptz + interval) over a column in an UPDATE.
    service.db.query(`UPDATE events SET created_at = to_timestamp(unix_seconds(created_at) + 0.9) WHERE project_id = $1 AND sequence = 2`, [other.projectId]),
    (err: { code?: string; constraint?: string; message: string }) => err.code === '23514' && constraintOf(err) === 'events_created_whole_second',
  );
  await service.db.query(`UPDATE events SET details = jsonb_set(details, '{name}', '"evil"') WHERE project_id = $1 AND sequence = 3`, [other.projectId]);
  for (let i = 0; i < 2; i++) {
    const outcome = await runWorkspace(service, ['events', 'verify', other.projectId]);
    assert.equal(outcome.code, 1, `run ${i}: ${outcome.stdout}`);
    assert.equal(JSON.parse(outcome.stdout).sequence, 3);
  }
});

test('an unknown project: one line, exit 1', async () => {
  const outcome = await runWorkspace(service, ['events', 'verify', 'proj_00000000000000000000']);
  assert.deepEqual([outcome.code, outcome.stdout, outcome.stderr], [1, '', 'No project proj_00000000000000000000.\n']);
});
