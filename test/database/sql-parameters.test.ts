// Statements that take their parameters by name (lib/sql-files.ts numberParameters): the names are
// numbered once, in the text only, and nothing that merely looks like one is touched.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { composeQuery, numberParameters, parameterValues, queryNames, queryStatement } from '../../lib/sql-files.ts';

test('names are numbered in the order they first come, and a name used twice keeps its number', () => {
  assert.deepEqual(numberParameters('SELECT :b, :a, :b'), { text: 'SELECT $1, $2, $1', names: ['b', 'a'] });
});

test('casts stay casts, on a parameter and on a column', () => {
  assert.deepEqual(numberParameters('SELECT :ids::text[], details::jsonb, :n::int'), {
    text: 'SELECT $1::text[], details::jsonb, $2::int',
    names: ['ids', 'n'],
  });
});

test('string literals, quoted identifiers and comments are left as they are', () => {
  const sql = [
    "SELECT ':x', 'it''s :y', E'\\' :z', 'a\\' || :after_standard_string, $$ :dollar $$, $tag$ :t $tag$,",
    '  "col:umn", :kept -- :line comment',
    '/* :block /* :nested */ :still */ FROM t WHERE a := 1',
  ].join('\n');
  const { text, names } = numberParameters(sql);
  assert.deepEqual(names, ['after_standard_string', 'kept']);
  assert.equal(text, sql.replace(':after_standard_string', '$1').replace(':kept', '$2'));
});

test('a statement with $n parameters is left alone; one that mixes both kinds, or never closes a literal, is refused', () => {
  assert.deepEqual(numberParameters('SELECT $1::text, $2'), { text: 'SELECT $1::text, $2', names: [] });
  assert.throws(() => numberParameters('SELECT $1, :a'), /both \$n and :name/);
  assert.throws(() => numberParameters("SELECT ':a"), /unterminated '/);
  assert.throws(() => numberParameters('SELECT /* :a'), /unterminated comment/);
});

test('every file of sql/queries that takes $n parameters is sent exactly as written', () => {
  for (const name of queryNames()) {
    const { text, names } = queryStatement(name);
    if (names.length > 0) continue;
    assert.equal(text, readFileSync(path.join(import.meta.dirname, '..', '..', 'sql', 'queries', `${name}.sql`), 'utf8'), name);
  }
});

/** More than this many parameters, and a statement names them. */
const MOST_IN_ORDER = 6;

test('the statements of many parameters take them by name', () => {
  const named = queryNames().filter((name) => queryStatement(name).names.length > 0);
  assert.deepEqual(named, [
    'app_create', 'app_delete', 'app_edit', 'file_insert', 'key_insert', 'key_revoke', 'key_roll', 'request_lease', 'run_insert',
    'webhook_attempts_record', 'webhook_create', 'webhook_delete', 'webhook_edit', 'webhook_rotate',
  ]);
  // A PREPARE's $n are its own statement's: it is run by EXECUTE with its values in order.
  const positional = queryNames().filter((name) => name !== 'audit_outbox_prepare' && !named.includes(name))
    .map((name) => [name, new Set(queryStatement(name).text.replace(/--.*$/gm, '').match(/\$\d+/g)).size] as const);
  assert.deepEqual(positional.filter(([, count]) => count > MOST_IN_ORDER), [], `more than ${MOST_IN_ORDER} parameters in order`);
  assert.deepEqual(composeQuery('key_create', { insert: 'key_insert' }).names, [
    'id', 'project_id', 'created_by', 'name', 'secret_hash', 'key_preview', 'scope', 'expires_at', 'rate_limit', 'checked_key',
    'caller_rate_limit', 'event_id', 'origin', 'actor_id', 'ip_address', 'details',
  ]);
});

test('values by name are sent in number order, each name given and no other', () => {
  const statement = numberParameters('SELECT :b, :a, :b');
  assert.deepEqual(parameterValues(statement, { a: 1, b: null }, 'probe'), [null, 1]);
  assert.deepEqual(parameterValues(statement, { a: undefined, b: 2 }, 'probe'), [2, undefined]);
  assert.throws(() => parameterValues(statement, { a: 1 }, 'probe'), /probe: no value for :b/);
  assert.throws(() => parameterValues(statement, { a: 1, b: 2, c: 3 }, 'probe'), /probe has no parameter c/);
  assert.throws(() => parameterValues(statement, [1, 2], 'probe'), /probe takes its parameters by name: b, a/);
  assert.throws(() => parameterValues(numberParameters('SELECT $1'), { a: 1 }, 'probe'), /in order, not by name/);
  assert.deepEqual(parameterValues(numberParameters('SELECT $1'), ['x'], 'probe'), ['x']);
});
