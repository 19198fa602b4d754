// Known paths that authenticate and check scope, then give their one answer. api.md 4.4's
// resources not built yet answer 501: GET needs `<resource>:read`, POST, PATCH and DELETE
// `<resource>:write` (decisions.md). And `current`, which names the calling key in the identifier
// position, cannot be revoked: a route of its own says so, so that the OpenAPI document lists the
// operation on the path a client's tools match first (a concrete path before its template).
import { errors, type ApiError } from '../../domain/errors.ts';
import type { Method, ReservedEndpoint } from './endpoint.ts';

const RESOURCES = ['run', 'file', 'team', 'feedback', 'catalog'] as const;
const METHODS: readonly Method[] = ['GET', 'POST', 'PATCH', 'DELETE'];

function reserved(method: Method, path: string, scope: string, summary: string, answer: () => ApiError): ReservedEndpoint {
  return {
    method, path, scope, summary, runs: 'reserved', answer, errors: [answer],
    ...(path.endsWith('/{id}') ? { request: { params: { id: { type: 'string' } } } } : {}),
  };
}

const notBuilt = (method: Method, path: string, scope: string) => reserved(method, path, scope, 'Reserved: not implemented yet.', errors.notImplemented);

export const RESERVED: readonly ReservedEndpoint[] = [
  ...RESOURCES.flatMap((resource) => [`/v1/${resource}`, `/v1/${resource}/{id}`].flatMap((path) =>
    METHODS.map((method) => notBuilt(method, path, `${resource}:${method === 'GET' ? 'read' : 'write'}`)))),
  notBuilt('GET', '/v1/run-usage/summary', 'usage:read'),
  reserved('DELETE', '/v1/key/current', 'key:write', 'Refused: the key making the call cannot revoke itself.', errors.revokeCurrent),
];
