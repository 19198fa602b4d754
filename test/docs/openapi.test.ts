// The API describes itself: the OpenAPI 3.1 document derived from the endpoint registry is valid,
// served at GET /openapi.json without a key, committed at docs/ exactly as generated (with the
// Markdown reference), and every reply any test receives is checked against it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { openApiDocument, openApiText } from '../../gateway/openapi.ts';
import { referenceText } from '../../gateway/reference.ts';
import { ENDPOINTS } from '../../gateway/endpoints/registry.ts';
import { checkReplyAgainstDocument } from '../support/openapi-check.ts';
import { TestService } from '../support/service.ts';

const DOCS = path.join(import.meta.dirname, '..', '..', 'docs');

test('the document passes an OpenAPI 3.1 validator', async () => {
  const validated = await SwaggerParser.validate(structuredClone(openApiDocument()) as never) as { openapi: string };
  assert.equal(validated.openapi, '3.1.0');
});

test('docs/openapi.json and docs/reference.md are what the registry generates (run `npm run docs` after changing an endpoint)', () => {
  assert.equal(readFileSync(path.join(DOCS, 'openapi.json'), 'utf8'), openApiText(), 'docs/openapi.json is stale');
  assert.equal(readFileSync(path.join(DOCS, 'reference.md'), 'utf8'), referenceText(), 'docs/reference.md is stale');
});

test('the reference names a type for every member and parameter (none left `undefined`)', () => {
  const rows = referenceText().split('\n').filter((line) => line.startsWith('| '));
  assert.deepEqual(rows.filter((row) => row.split(' | ').includes('undefined')), []);
});

test('every endpoint of the registry is an operation, with its scope and the scope\'s exact 403', () => {
  const doc = openApiDocument() as any;
  for (const [name, endpoint] of Object.entries(ENDPOINTS)) {
    const op = doc.paths[endpoint.path][endpoint.method.toLowerCase()];
    assert.equal(op.operationId, name);
    assert.equal(op['x-scope'], endpoint.scope);
    const forbidden = op.responses['403'].content['application/json'].schema.properties.response;
    assert.ok(forbidden.enum.includes(`The API key is missing the required scope: ${endpoint.scope}`), name);
  }
  assert.equal(doc.paths['/v1/run-usage/summary'].get['x-scope'], 'usage:read');
});

test('every path parameter of a path template is declared by each of its operations (OpenAPI 3.1, 4.8.2)', () => {
  const doc = openApiDocument() as any;
  for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    for (const [method, op] of Object.entries(operations)) {
      const declared = (op.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => p.name);
      assert.deepEqual(declared, names, `${method.toUpperCase()} ${path}`);
    }
  }
});

test('a concrete path offers what its template does, where the service answers it: DELETE /v1/key/current', () => {
  const doc = openApiDocument() as any;
  const refused = doc.paths['/v1/key/current'].delete;
  assert.equal(refused['x-scope'], 'key:write');
  assert.deepEqual(refused.responses['422'].content['application/json'].schema.properties.response, { const: 'Cannot revoke the API key currently in use.' });
  assert.equal(refused.responses['200'], undefined, 'it never succeeds');
});

test('health, readiness and this document list the 413 a body over the limit gets there too', () => {
  const doc = openApiDocument() as any;
  for (const path of ['/healthz', '/readyz', '/openapi.json']) {
    assert.deepEqual(doc.paths[path].get.responses['413'], { $ref: '#/components/responses/PayloadTooLarge' }, path);
  }
});

test('bodies the service refuses for their form the document refuses too (blank text, a scope no key can hold, an expiry past 9999, a PATCH with nothing to change)', () => {
  const doc = openApiDocument() as any;
  const ajv = new Ajv2020({ strict: false });
  ajv.addSchema(doc, 'doc');
  const body = (path: string, method: string) => ajv.compile({ $ref: `doc#/paths/${path.replace(/\//g, '~1')}/${method}/requestBody/content/application~1json/schema` });
  const keyBody = body('/v1/key', 'post');
  const appBody = body('/v1/app/create', 'post');
  const patchBody = body('/v1/app/detail/{app_id}', 'patch');
  const app = { name: 'A', description: 'D', data: [{ type: 'input', name: 'n', required: true }], instruction: [{ type: 'system', instruction: 'I' }] };
  assert.ok(keyBody({ name: 'a', scope: ['key:read', 'event:*', '*'], expires_at: 253_402_300_799 }));
  assert.ok(appBody(app));
  assert.ok(patchBody({ name: 'x', other: 1 }));
  for (const refused of [{ name: '   ' }, { name: '\t' }, { name: 'a', scope: ['key:delete'] }, { name: 'a', expires_at: 253_402_300_800 }, { name: 'a', expires_at: -5 }]) {
    assert.equal(keyBody(refused), false, JSON.stringify(refused));
  }
  for (const refused of [
    { ...app, name: ' ' }, { ...app, description: '' }, { ...app, data: [{ type: ' ', name: 'n' }] }, { ...app, data: [{ type: 'input', name: '' }] },
    { ...app, instruction: [{ type: 'system', instruction: ' ' }] }, { ...app, instruction: [{ type: 'system' }] },
    { ...app, instruction: [{ type: 'system', instruction: '', prompt: 'P' }] },
  ]) {
    assert.equal(appBody(refused), false, JSON.stringify(refused));
  }
  for (const refused of [{ status: 'draft' }, { foo: 1 }, { name: '  ' }]) assert.equal(patchBody(refused), false, JSON.stringify(refused));
});

describe('the check every test\'s replies go through', () => {
  const envelope = (code: number | string, title: string, response: unknown) => ({ code, title, response });
  const reply = (status: number, body: unknown) => ({ status, headers: { 'content-type': 'application/json' }, text: JSON.stringify(body), body });

  test('passes what the document describes', () => {
    checkReplyAgainstDocument('GET', '/v1/key/papi_00000000000000000000', reply(404, envelope(404, 'Not Found', 'API key not found.')));
    checkReplyAgainstDocument('GET', '/nowhere', reply(404, envelope('404', 'Not Found', 'The requested resource was not found.')));
    checkReplyAgainstDocument('PUT', '/v1/key', reply(405, envelope(405, 'Method Not Allowed', 'The request method is not allowed.')));
  });

  test('fails a status, a message or a member the document does not describe', () => {
    assert.throws(() => checkReplyAgainstDocument('GET', '/v1/key', reply(418, envelope(418, "I'm a teapot", 'no'))), /describes no such answer/);
    assert.throws(() => checkReplyAgainstDocument('GET', '/v1/key/papi_00000000000000000000', reply(404, envelope(404, 'Not Found', 'Key not found.'))), /does not match/);
    assert.throws(() => checkReplyAgainstDocument('GET', '/v1/event', reply(200, envelope(200, 'OK', { object: 'list', data: [], total: 0, next: null }))), /does not match/);
    assert.throws(() => checkReplyAgainstDocument('DELETE', '/v1/key/papi_00000000000000000000', reply(200, envelope(200, 'OK', { deleted: false, id: 'x' }))), /does not match/);
  });
});

describe('GET /openapi.json', () => {
  let service: TestService;

  before(async () => {
    service = await TestService.start({ jobWorkers: false });
  });
  after(() => service.stop());

  test('answers the document itself, without a key and not in the envelope', async () => {
    for (const headers of [{}, { authorization: 'Bearer sk-project-unknown' }] as Array<Record<string, string>>) {
      const reply = await service.request('GET', '/openapi.json', { headers });
      assert.equal(reply.status, 200);
      assert.match(String(reply.headers['content-type']), /^application\/json/);
      assert.equal(reply.text, openApiText());
      assert.equal(reply.body.openapi, '3.1.0');
    }
  });
});
