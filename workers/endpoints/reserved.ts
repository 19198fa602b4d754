// api.md 4.4: known paths that authenticate and check scope, then answer 501. GET needs
// `<resource>:read`, POST, PATCH and DELETE `<resource>:write` (decisions.md).
import { errors } from '../../domain/errors.ts';
import type { Method, ReservedEndpoint } from './endpoint.ts';

const RESOURCES = ['run', 'file', 'team', 'feedback', 'catalog'] as const;
const METHODS: readonly Method[] = ['GET', 'POST', 'PATCH', 'DELETE'];

function reserved(method: Method, path: string, scope: string): ReservedEndpoint {
  return { method, path, scope, summary: 'Reserved: not implemented yet.', runs: 'reserved', errors: [errors.notImplemented] };
}

export const RESERVED: readonly ReservedEndpoint[] = [
  ...RESOURCES.flatMap((resource) => [`/v1/${resource}`, `/v1/${resource}/{id}`].flatMap((path) =>
    METHODS.map((method) => reserved(method, path, `${resource}:${method === 'GET' ? 'read' : 'write'}`)))),
  reserved('GET', '/v1/run-usage/summary', 'usage:read'),
];
