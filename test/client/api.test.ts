// client/api.ts, the client package's types and routes, is what the endpoint registry generates,
// and names every operation of the OpenAPI document that can succeed, none of the reserved ones.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ROUTES } from '../../client/api.ts';
import { clientApiText } from '../../client/generate.ts';
import { openApiDocument } from '../../gateway/openapi.ts';

test('client/api.ts is what the registry generates (run `npm run docs` after changing an endpoint)', () => {
  assert.equal(readFileSync(path.join(import.meta.dirname, '..', '..', 'client', 'api.ts'), 'utf8'), clientApiText(), 'client/api.ts is stale');
});

test('the client has a route for every operation of the API that is not reserved, and for no reserved one', () => {
  const operations = Object.entries(openApiDocument().paths as Record<string, Record<string, { operationId: string; 'x-reserved'?: true }>>)
    .filter(([path]) => path.startsWith('/v1/'))
    .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ name: op.operationId, method: method.toUpperCase(), path, reserved: op['x-reserved'] === true })));
  const routes = Object.entries(ROUTES).map(([name, route]) => ({ name, ...route }));
  const key = (op: { name: string; method: string; path: string }) => `${op.name} ${op.method} ${op.path}`;
  assert.deepEqual(routes.map(key).sort(), operations.filter((op) => !op.reserved).map(key).sort());
  assert.equal(operations.filter((op) => op.reserved).length, 42);
});
