// The OpenAPI document lints clean with Redocly's recommended rules, as redocly.yaml narrows them
// (the reserved operations, which answer no 2XX, are exempt from the 2XX rule): not one warning.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { openApiDocument, openApiText } from '../../gateway/openapi.ts';
import { ROOT, runNode, serviceEnv } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

const REDOCLY = path.join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');

interface Report { totals: Record<string, number>; problems: Array<{ ruleId: string; message: string; location: Array<{ pointer: string }> }> }

async function lint(text: string): Promise<{ code: number | null; stderr: string; report: Report }> {
  const file = path.join(tempDir('openapi-lint-'), 'openapi.json');
  writeFileSync(file, text);
  // No usage report sent, no check for a newer version.
  const env = serviceEnv({ REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' });
  const outcome = await runNode([REDOCLY, 'lint', '--config', path.join(ROOT, 'redocly.yaml'), '--format', 'json', file], { env });
  return { code: outcome.code, stderr: outcome.stderr, report: JSON.parse(outcome.stdout) };
}

const named = (report: Report) => report.problems.map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);

test('`redocly lint` finds no problem in the generated document', async () => {
  const { code, stderr, report } = await lint(openApiText());
  assert.deepEqual(named(report), []);
  assert.deepEqual(report.totals, { errors: 0, warnings: 0, ignored: 0 });
  assert.equal(code, 0, stderr);
});

test('the 2XX rule still holds every operation not marked x-reserved', async () => {
  const doc = openApiDocument() as any;
  delete doc.paths['/v1/run'].get['x-reserved'];
  delete doc.paths['/v1/key'].get.responses['200'];
  const { report } = await lint(JSON.stringify(doc));
  assert.deepEqual(report.problems.map((p) => [p.ruleId, p.location[0]?.pointer]).sort(), [
    ['rule/operation-2xx-response', '#/paths/~1v1~1key/get/responses'],
    ['rule/operation-2xx-response', '#/paths/~1v1~1run/get/responses'],
  ]);
});
