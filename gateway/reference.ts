// docs/reference.md, written from the OpenAPI document the service serves, so the two cannot drift.
import { openApiDocument } from './openapi.ts';
import { NON_BLANK } from './endpoints/schemas.ts';

type Json = Record<string, any>;

const RULES = `# API reference

Generated from the endpoint registry by \`npm run docs\` (as is [openapi.json](openapi.json), the
same description for tools); a test fails when this file and the registry differ. Choices the
contract leaves open are in the README ("Choices the contract leaves open").

## Rules every endpoint shares

- **HTTPS only.** Plain HTTP answers 301 with \`Location\` on the HTTPS origin, before anything else.
- **The envelope.** Every answer, success or failure, is \`{"code": <status>, "title": <status
  title>, "response": …}\`: the result on success, the message string on failure. The one
  exception: an unknown path answers \`{"code": "404", "title": "Not Found", "response": "The
  requested resource was not found."}\`, \`code\` a string.
- **Authentication.** \`Authorization: Bearer sk-project-…\` on every \`/v1/\` call. Absent: 401
  \`No valid API key provided.\`; expired: 401 \`The API key has expired.\`; unknown, revoked, or
  its project or consumer disabled: 403 \`The API key doesn't have permissions to perform the
  request.\` (one answer for all on purpose). An address that keeps sending refused keys gets 429
  \`Too many requests with an invalid API key. Retry later.\` with \`Retry-After\`.
- **Scopes.** Each operation names the scope it needs. A key passes when it holds \`*\`, or
  \`<resource>:*\`, or the exact scope; otherwise 403 \`The API key is missing the required scope:
  <scope>\`.
- **Order of checks.** 301, 405 (a method never accepted), 413 (body over 200,000 bytes), 401 /
  403 / 429, the gateway 404 (unknown path), 422 \`The parameters were valid but the request
  failed.\` (a known path that does not offer the method), the scope's 403, 400 \`Invalid JSON.\`
  (a POST or PATCH body that is not a JSON object; empty counts as \`{}\`), then the endpoint's own.
- **Lists** are \`{"object": "list", "data": […], "total": n}\`, newest first; \`limit\` 1–100
  (default 20) and \`offset\` ≥ 0 where an endpoint takes them.
- **Timestamps** are Unix seconds. Records of another project answer exactly like records that
  do not exist.
- **503** \`Service temporarily unavailable. Please retry.\` with \`Retry-After\` when a backing
  service is briefly unreachable; **500** \`Internal server error.\` for a fault of the service.
- Every answer carries \`X-Request-Id\` (yours, when you send a sane one).
`;

function schemaName(schema: Json | undefined): string {
  if (!schema) return '';
  if (schema.$ref) return `[${schema.$ref.split('/').pop()}](#${schema.$ref.split('/').pop().toLowerCase()})`;
  if (schema.properties?.object?.const === 'list') return `list of ${schemaName(schema.properties.data.items)}`;
  return '`' + JSON.stringify(schema) + '`';
}

function typeOf(schema: Json): string {
  if (schema.$ref) return schemaName(schema);
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  if (schema.enum) return schema.enum.map((v: unknown) => `\`${JSON.stringify(v)}\``).join(', ');
  // Alternatives; beside a type of its own, anyOf only constrains it (which members must be there).
  if (schema.anyOf && schema.type === undefined) return schema.anyOf.map(typeOf).join(' or ');
  // Alternatives told apart by their members' values (an event's actor): each shown with them.
  if (schema.oneOf) return schema.oneOf.map(membersOf).join(' or ');
  if (schema.pattern === NON_BLANK) return 'string, not blank';
  if (schema.pattern) return `string \`${schema.pattern}\``;
  if (schema.type === 'array') return `array of ${schema.items ? typeOf(schema.items) : 'any'}`;
  if (schema.type === 'object' && schema.additionalProperties && typeof schema.additionalProperties === 'object') {
    return `object of ${schema.propertyNames?.pattern ? `\`${schema.propertyNames.pattern}\`` : 'names'} to {${Object.keys(schema.additionalProperties.properties).join(', ')}}`;
  }
  if (schema.type === 'object') return `object {${Object.keys(schema.properties ?? {}).join(', ')}}`;
  return Array.isArray(schema.type) ? schema.type.join(' or ') : String(schema.type);
}

function membersOf(schema: Json): string {
  if (schema.type !== 'object' || !schema.properties) return typeOf(schema);
  return `{${Object.entries(schema.properties as Record<string, Json>).map(([name, member]) => `${name}: ${typeOf(member)}`).join(', ')}}`;
}

function fieldTable(schema: Json): string[] {
  const rows = Object.entries(schema.properties ?? {}).map(([name, member]) =>
    `| ${name} | ${typeOf(member as Json)} | ${(schema.required ?? []).includes(name) ? 'yes' : 'no'} | ${(member as Json).description ?? ''} |`);
  return ['| Member | Type | Always | Notes |', '|---|---|---|---|', ...rows];
}

function operationSection(path: string, method: string, op: Json, components: Json): string[] {
  const lines = [`### ${method.toUpperCase()} ${path}`, '', op.summary, ''];
  if (op['x-scope']) lines.push(`Scope: \`${op['x-scope']}\`.${op.description?.includes('\n\n') ? ' ' + op.description.split('\n\n')[0] : ''}`, '');
  else lines.push('No key needed.', '');
  if (op.parameters?.length) {
    lines.push('| Parameter | In | Type | Notes |', '|---|---|---|---|');
    for (const p of op.parameters) lines.push(`| ${p.name} | ${p.in} | ${typeOf(p.schema)} | ${p.schema.description ?? ''}${p.schema.default !== undefined ? ` Default ${JSON.stringify(p.schema.default)}.` : ''} |`);
    lines.push('');
  }
  const body = op.requestBody?.content['application/json'].schema;
  if (body) lines.push('Body (a JSON object):', '', ...fieldTable(body).map((row) => row.replace('| Always |', '| Required |')), '');
  lines.push('| Status | Answer |', '|---|---|');
  for (const [status, answer] of Object.entries(op.responses as Record<string, Json>)) {
    const response = answer.$ref ? components.responses[answer.$ref.split('/').pop()] : answer;
    const schema = response.content?.['application/json']?.schema;
    const success = Number(status) < 300;
    const text = success
      ? (schema?.properties?.response ? schemaName(schema.properties.response) || typeOf(schema.properties.response) : response.description)
      : response.description.split(' | ').map((m: string) => `\`${m}\``).join('<br>');
    lines.push(`| ${status} | ${text} |`);
  }
  lines.push('');
  return lines;
}

export function referenceText(): string {
  const doc = openApiDocument() as Json;
  const lines = [RULES];
  const byTag = new Map<string, string[]>();
  for (const [path, methods] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const [method, op] of Object.entries(methods)) {
      const tag = op.tags[0] as string;
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push(...operationSection(path, method, op, doc.components));
    }
  }
  for (const tag of doc.tags as Json[]) {
    if (!byTag.has(tag.name)) continue;
    lines.push(`## ${tag.name}`, '', tag.description, '', ...byTag.get(tag.name)!);
  }
  lines.push('## Objects', '');
  for (const [name, schema] of Object.entries(doc.components.schemas as Record<string, Json>)) {
    lines.push(`### ${name}`, '', ...fieldTable(schema), '');
  }
  return `${lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;
}
