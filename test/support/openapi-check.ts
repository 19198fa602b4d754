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
  // An empty segment reaches the router's parameter too (`/v1/app/detail/`).
  pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{\w+\\?\}/g, '[^/]*')}$`),
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

/** The path as the router sees it: `.` and `..` segments resolved (RFC 3986 5.2.4), nothing else touched. */
function withoutDotSegments(path: string): string {
  const out: string[] = [];
  const segments = path.split('/');
  for (const [i, segment] of segments.entries()) {
    const last = i === segments.length - 1;
    if (segment === '.' || segment === '..') {
      if (segment === '..' && out.length > 1) out.pop();
      if (last) out.push('');
    } else {
      out.push(segment);
    }
  }
  return out.join('/') || '/';
}

export interface CheckedReply {
  status: number;
  headers: Record<string, unknown>;
  text: string;
  body: unknown;
}

/** Characters the router takes as they are: any other (`%`, `#`, …) it may decode or refuse first. */
const PLAIN_PATH = /^[A-Za-z0-9_~\/-]*$/;

/** The operation a plain path reaches, as the router finds it, and where it is in the document. */
function operationFor(method: string, path: string): { operation: Json; location: string } | undefined {
  const matching = templates.filter((t) => t.pattern.test(path));
  // As the router does: a literal path first, unless only a template offers the method there.
  const template = matching.find((t) => doc.paths[t.path][method.toLowerCase()]) ?? matching[0];
  const operation = template ? doc.paths[template.path][method.toLowerCase()] : undefined;
  return operation ? { operation, location: pointer('paths', template!.path, method.toLowerCase()) } : undefined;
}

export function checkReplyAgainstDocument(method: string, pathAndQuery: string, reply: CheckedReply): void {
  const rawPath = pathAndQuery.split('?')[0]!;
  const path = withoutDotSegments(rawPath);
  const what = `${method} ${pathAndQuery} answered ${reply.status}`;
  const gateway = documented(doc['x-gateway-responses'], pointer('x-gateway-responses'), reply.status);
  let candidates: Array<{ response: Json; location: string }>;
  let operationId: string | undefined;
  if (PLAIN_PATH.test(path.replace(/\./g, ''))) {
    const found = operationFor(method, path);
    operationId = found?.operation.operationId;
    const own = found ? documented(found.operation.responses, `${found.location}/responses`, reply.status) : undefined;
    // The gateway's own answers (a malformed request, a timeout) can meet any request.
    candidates = [...(own ? [own] : []), ...(gateway ? [gateway] : [])];
  } else {
    // Percent-encoded or otherwise unusual paths (the fuzz suite's): the router decodes or refuses
    // them by rules of its own, so the answer must be one the document gives for this method
    // somewhere, or one of the gateway's.
    candidates = [
      ...templates.flatMap((t) => {
        const operation = doc.paths[t.path][method.toLowerCase()];
        const own = operation ? documented(operation.responses, pointer('paths', t.path, method.toLowerCase(), 'responses'), reply.status) : undefined;
        return own ? [own] : [];
      }),
      ...(gateway ? [gateway] : []),
    ];
  }
  assert.ok(candidates.length > 0, `${what}: the OpenAPI document describes no such answer${operationId ? ` (operation ${operationId})` : ''}`);
  // HEAD answers carry no body to check.
  if (method === 'HEAD') return;
  assert.match(String(reply.headers['content-type'] ?? ''), /^application\/json/, `${what}: Content-Type`);
  assert.notEqual(reply.body, undefined, `${what}: the body is not JSON: ${reply.text.slice(0, 200)}`);
  const errors: string[] = [];
  for (const entry of candidates) {
    if (!entry.response.content?.['application/json']) continue;
    const validate = validatorFor(`${entry.location}/${pointer('content', 'application/json', 'schema')}`);
    if (validate(reply.body)) return;
    errors.push(ajv.errorsText(validate.errors));
  }
  assert.fail(`${what}: the body does not match the document: ${errors.join(' | ') || 'no JSON body described'}; body: ${reply.text.slice(0, 500)}`);
}

/** A value checked against one of the document's schemas (components.schemas), e.g. an Event from a stream. */
export function checkAgainstSchema(name: string, value: unknown, what: string): void {
  const validate = validatorFor(pointer('components', 'schemas', name));
  if (!validate(value)) assert.fail(`${what}: not a valid ${name}: ${ajv.errorsText(validate.errors)}; value: ${JSON.stringify(value).slice(0, 500)}`);
}

/** A query value as its parameter's schema reads it: integers as numbers, where they are digits. */
function queryValue(schema: Json, value: string): unknown {
  return schema.type === 'integer' && /^-?\d+$/.test(value) ? Number(value) : value;
}

/**
 * A request the service accepted (2xx) must be one the document allows, so that the document never
 * forbids what the service takes: its JSON body valid against the operation's request body, and
 * each documented query parameter against its schema (a repeated one as an array).
 */
export function checkAcceptedRequest(method: string, pathAndQuery: string, body: unknown, status: number): void {
  if (status < 200 || status >= 300) return;
  const [rawPath, query = ''] = pathAndQuery.split('?') as [string, string?];
  const path = withoutDotSegments(rawPath);
  if (!PLAIN_PATH.test(path.replace(/\./g, ''))) return;
  const found = operationFor(method, path);
  if (!found) return;
  const what = `${method} ${pathAndQuery} was accepted (${status})`;
  if (body !== undefined && found.operation.requestBody) {
    const validate = validatorFor(`${found.location}/${pointer('requestBody', 'content', 'application/json', 'schema')}`);
    if (!validate(body)) assert.fail(`${what}, but the document refuses its body: ${ajv.errorsText(validate.errors)}; body: ${JSON.stringify(body).slice(0, 500)}`);
  }
  const params = new URLSearchParams(query);
  for (const [index, parameter] of ((found.operation.parameters ?? []) as Json[]).entries()) {
    if (parameter.in !== 'query' || !params.has(parameter.name)) continue;
    const schema = parameter.schema as Json;
    const values = params.getAll(parameter.name);
    const value = schema.type === 'array' ? values.map((v) => queryValue(schema.items ?? {}, v)) : queryValue(schema, values[0]!);
    const validate = validatorFor(`${found.location}/${pointer('parameters', String(index), 'schema')}`);
    if (!validate(value)) assert.fail(`${what}, but the document refuses its ${parameter.name}: ${ajv.errorsText(validate.errors)}; value: ${JSON.stringify(value)}`);
  }
}
