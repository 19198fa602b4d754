// Every reply a test receives is checked against the OpenAPI document the service serves
// (gateway/openapi.ts): its status must be one the document gives for that operation (or, where
// no operation applies, one of `x-gateway-responses`), and its body must match that response's
// schema (the envelope, its exact messages, the result's shape). A reply the document does not
// describe fails the test that received it. readReply (service.ts) calls this for every reply.
import assert from 'node:assert/strict';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { openApiDocument } from '../../gateway/openapi.ts';

type Json = Record<string, any>;

const DOC_ID = 'openapi';
const doc = openApiDocument() as Json;
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema(doc, DOC_ID);

interface PathTemplate {
  path: string;
  pattern: RegExp;
  literal: boolean;
}

const templates: PathTemplate[] = Object.keys(doc.paths).map((path) => ({
  path,
  pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{\w+\\?\}/g, '[^/]+')}$`),
  literal: !path.includes('{'),
}))
  // A literal path (/v1/key/current) wins over a template that also matches it (/v1/key/{key_id}).
  .sort((a, b) => Number(b.literal) - Number(a.literal));

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
const validators = new Map<string, ValidateFunction>();

function validatorFor(location: string): ValidateFunction {
  let validate = validators.get(location);
  if (!validate) validators.set(location, validate = ajv.compile({ $ref: `${DOC_ID}#/${location}` }));
  return validate;
}

/** The response object and its location for a status of an operation, following a $ref once. */
function documented(responses: Json | undefined, base: string, status: number): { response: Json; location: string } | undefined {
  const found = responses?.[status];
  if (!found) return undefined;
  if (found.$ref) {
    const name = (found.$ref as string).split('/').pop()!;
    return { response: doc.components.responses[name], location: pointer('components', 'responses', name) };
  }
  return { response: found, location: `${base}/${pointer(String(status))}` };
}

export interface CheckedReply {
  status: number;
  headers: Record<string, unknown>;
  text: string;
  body: unknown;
}

export function checkReplyAgainstDocument(method: string, pathAndQuery: string, reply: CheckedReply): void {
  const path = pathAndQuery.split('?')[0]!;
  const matching = templates.filter((t) => t.pattern.test(path));
  // As the router does: a literal path first, unless only a template offers the method there.
  const template = matching.find((t) => doc.paths[t.path][method.toLowerCase()]) ?? matching[0];
  const operation = template ? doc.paths[template.path][method.toLowerCase()] : undefined;
  const base = template && operation ? pointer('paths', template.path, method.toLowerCase(), 'responses') : '';
  const what = `${method} ${pathAndQuery} answered ${reply.status}`;
  const entry = documented(operation?.responses, base, reply.status)
    ?? documented(doc['x-gateway-responses'], pointer('x-gateway-responses'), reply.status);
  assert.ok(entry, `${what}: the OpenAPI document describes no such answer${operation ? ` (operation ${operation.operationId})` : ''}`);
  // HEAD answers carry no body to check.
  if (method === 'HEAD') return;
  const content = entry.response.content?.['application/json'];
  assert.ok(content, `${what}: the document describes no JSON body for it`);
  assert.match(String(reply.headers['content-type'] ?? ''), /^application\/json/, `${what}: Content-Type`);
  assert.notEqual(reply.body, undefined, `${what}: the body is not JSON: ${reply.text.slice(0, 200)}`);
  const validate = validatorFor(`${entry.location}/${pointer('content', 'application/json', 'schema')}`);
  if (!validate(reply.body)) {
    assert.fail(`${what}: the body does not match the document: ${ajv.errorsText(validate.errors)}; body: ${reply.text.slice(0, 500)}`);
  }
}

/** A value checked against one of the document's schemas (components.schemas), e.g. an Event from a stream. */
export function checkAgainstSchema(name: string, value: unknown, what: string): void {
  const validate = validatorFor(pointer('components', 'schemas', name));
  if (!validate(value)) assert.fail(`${what}: not a valid ${name}: ${ajv.errorsText(validate.errors)}; value: ${JSON.stringify(value).slice(0, 500)}`);
}
