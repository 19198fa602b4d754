// Known paths that authenticate and check scope, then give their one answer: api.md 4.4's
// resources not built yet 501 (GET needs `<resource>:read`, the others `<resource>:write`,
// decisions.md), and DELETE /v1/key/current (`current` names the calling key) 422, on a route of
// its own so that the OpenAPI document lists it where a client's tools look first. The document
// marks them all `x-reserved`: they have no success to describe, and the typed client has none.
import { errors, type ApiError } from '../../domain/errors.ts';
import type { Method, ReservedEndpoint } from './endpoint.ts';

const RESOURCES = ['run', 'file', 'team', 'feedback', 'catalog'] as const;
const METHODS: readonly Method[] = ['GET', 'POST', 'PATCH', 'DELETE'];

function reserved(method: Method, path: string, scope: string, summary: string, description: string, answer: () => ApiError): ReservedEndpoint {
  return {
    method, path, scope, summary, description, runs: 'reserved', answer, errors: [answer],
    ...(path.endsWith('/{id}') ? { request: { params: { id: { type: 'string' } } } } : {}),
  };
}

const notBuilt = (method: Method, path: string, scope: string) => reserved(method, path, scope, 'Reserved: not implemented yet.',
  'A path of the contract not built yet: once authenticated and scope-checked it answers 501, never a success.', errors.notImplemented);

export const RESERVED: readonly ReservedEndpoint[] = [
  ...RESOURCES.flatMap((resource) => [`/v1/${resource}`, `/v1/${resource}/{id}`].flatMap((path) =>
    METHODS.map((method) => notBuilt(method, path, `${resource}:${method === 'GET' ? 'read' : 'write'}`)))),
  notBuilt('GET', '/v1/run-usage/summary', 'usage:read'),
  reserved('DELETE', '/v1/key/current', 'key:write', 'Refused: the key making the call cannot revoke itself.',
    '`current` names the calling key, which cannot revoke itself: once authenticated and scope-checked this answers 422, never a success.', errors.revokeCurrent),
];
