// Writes client/api.ts, the client package's types and routes, from the endpoint registry and its
// JSON Schemas (`npm run docs` runs it; test/client/api.test.ts fails when it is stale). Printed
// as plain TypeScript so that the package needs none of the service's code or dependencies. Not
// part of the package (client/tsconfig.json builds index.ts and node.ts only).
import { ENDPOINTS } from '../gateway/endpoints/registry.ts';
import { SCHEMAS } from '../gateway/endpoints/schemas.ts';

type Json = { readonly [keyword: string]: any };

const literal = (value: unknown): string =>
  typeof value === 'string' ? `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'` : JSON.stringify(value);

const key = (name: string): string => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : literal(name));

const union = (types: string[]): string => [...new Set(types)].join(' | ');

const arrayOf = (item: string): string => (/^[\w$.']+$/.test(item) ? `${item}[]` : `Array<${item}>`);

/** Whether a schema says what a value is, rather than only narrowing it (`required`, a pattern). */
const shaped = (schema: Json): boolean =>
  ['$ref', 'const', 'enum', 'type', 'properties', 'items', 'anyOf', 'oneOf'].some((keyword) => keyword in schema);

function comment(text: string | undefined, indent: string): string {
  return text ? `${indent}/** ${text.replace(/\*\//g, '*\\/')} */\n` : '';
}

function objectType(schema: Json, indent: string, inherited: readonly string[] = []): string {
  if (schema.properties) {
    const required: readonly string[] = schema.required ?? [];
    const inner = `${indent}  `;
    const members = Object.entries(schema.properties as Record<string, Json>).filter(([name]) => !inherited.includes(name)).map(([name, member]) =>
      `${comment(member.description, inner)}${inner}${key(name)}${required.includes(name) ? '' : '?'}: ${typeOf(member, inner)};\n`);
    return `{\n${members.join('')}${indent}}`;
  }
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
    return `Record<string, ${typeOf(schema.additionalProperties, indent)}>`;
  }
  return 'Record<string, unknown>';
}

function typeNamed(type: string, schema: Json, indent: string): string {
  switch (type) {
    case 'string': return 'string';
    case 'integer': case 'number': return 'number';
    case 'boolean': return 'boolean';
    case 'null': return 'null';
    case 'array': return schema.items ? arrayOf(typeOf(schema.items, indent)) : 'unknown[]';
    case 'object': return objectType(schema, indent);
    default: throw new Error(`no TypeScript for the JSON Schema type ${type}`);
  }
}

/** The TypeScript type of what a JSON Schema (the registry's subset) accepts, or a wider one. */
export function typeOf(schema: Json, indent = ''): string {
  if (schema.$ref) return String(schema.$ref).split('/').pop()!;
  if ('const' in schema) return literal(schema.const);
  if (schema.enum) return union((schema.enum as unknown[]).map(literal));
  if (schema.type) return union((Array.isArray(schema.type) ? schema.type : [schema.type]).map((type: string) => typeNamed(type, schema, indent)));
  if (schema.properties) return objectType(schema, indent);
  // Alternatives beside a type only narrow it (one of two members required); on their own they are the type.
  const alternatives: Json[] | undefined = schema.anyOf ?? schema.oneOf;
  if (alternatives?.every(shaped)) return union(alternatives.map((alternative) => typeOf(alternative, indent)));
  return 'unknown';
}

/** The members of an object schema, each as its schema and whether it is required. */
const membersOf = (schema: Json): Map<string, string> => new Map(Object.entries((schema.properties ?? {}) as Record<string, Json>)
  .map(([name, member]) => [name, JSON.stringify([member, (schema.required ?? []).includes(name)])]));

/** The schema declared before `name` whose members `schema` all has alike, the one with the most. */
function baseOf(name: string, schema: Json): string | undefined {
  const members = membersOf(schema);
  let base: [string, number] | undefined;
  for (const [other, otherSchema] of Object.entries(SCHEMAS)) {
    if (other === name) break;
    const shared = membersOf(otherSchema);
    if (shared.size > 0 && shared.size < members.size && [...shared].every(([member, text]) => members.get(member) === text) && shared.size > (base?.[1] ?? 0)) {
      base = [other, shared.size];
    }
  }
  return base?.[0];
}

function declaration(name: string, schema: Json): string {
  const head = comment(schema.description, '');
  if (schema.type !== 'object' || !schema.properties) return `${head}export type ${name} = ${typeOf(schema)};\n`;
  const base = baseOf(name, schema);
  const inherited = base ? [...membersOf(SCHEMAS[base]!).keys()] : [];
  return `${head}export interface ${name} ${base ? `extends ${base} ` : ''}${objectType(schema, '', inherited)}\n`;
}

/** The text of client/api.ts. */
export function clientApiText(): string {
  const endpoints = Object.entries(ENDPOINTS);
  const about = (endpoint: (typeof endpoints)[number][1]) => comment(`${endpoint.method} ${endpoint.path}: ${endpoint.summary}`, '  ');
  const responses = endpoints.flatMap(([name, endpoint]) => ('schema' in endpoint.success
    ? [`${about(endpoint)}  ${name}: ${typeOf(endpoint.success.schema, '  ')};\n`] : []));
  const bodies = endpoints.flatMap(([name, endpoint]) => {
    const body = (endpoint as { request?: { body?: Json } }).request?.body;
    return body ? [`${about(endpoint)}  ${name}: ${typeOf(body, '  ')};\n`] : [];
  });
  const routes = endpoints.map(([name, endpoint]) => `  ${name}: { method: ${literal(endpoint.method)}, path: ${literal(endpoint.path)} },\n`);
  return [
    '// Generated by `npm run docs` (client/generate.ts) from the endpoint registry: do not edit.\n',
    '// The reserved operations, which answer no success, are not here.\n\n',
    ...Object.entries(SCHEMAS).map(([name, schema]) => `${declaration(name, schema)}\n`),
    '/** What each endpoint that answers an envelope answers on success, by its registry name. */\n',
    `export interface Responses {\n${responses.join('')}}\n\n`,
    '/** The JSON body each endpoint that takes one takes. */\n',
    `export interface Bodies {\n${bodies.join('')}}\n\n`,
    '/** Every endpoint\'s method and path (`{name}` a path parameter). */\n',
    `export const ROUTES = {\n${routes.join('')}} as const;\n\n`,
    'export type EndpointName = keyof typeof ROUTES;\n',
    '/** The endpoints that answer one JSON envelope (not the event stream). */\n',
    'export type JsonEndpointName = keyof Responses;\n',
  ].join('');
}
