// The route table: every known path, the methods it offers, the scope each needs, and the
// worker operation that answers it. A route without an operation is reserved (501).

export interface Route {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  scope: string;
  op?: string;
  /** Answered on the gateway's thread: the operation needs nothing the authentication did not read. */
  inline?: boolean;
}

const BODY_METHODS = ['POST', 'PATCH', 'DELETE'] as const;

/** api.md 4.4: known paths that authenticate and check scope, then answer 501. */
function reserved(resource: string, path: string): Route[] {
  return [
    { method: 'GET', path, scope: `${resource}:read` },
    ...BODY_METHODS.map((method) => ({ method, path, scope: `${resource}:write` })),
  ];
}

export const ROUTES: readonly Route[] = [
  { method: 'GET', path: '/v1/key', scope: 'key:read', op: 'key.list' },
  { method: 'POST', path: '/v1/key', scope: 'key:write', op: 'key.create' },
  { method: 'GET', path: '/v1/key/current', scope: 'key:read', op: 'key.current', inline: true },
  { method: 'GET', path: '/v1/key/:key_id', scope: 'key:read', op: 'key.get' },
  { method: 'DELETE', path: '/v1/key/:key_id', scope: 'key:write', op: 'key.revoke' },
  { method: 'POST', path: '/v1/app/create', scope: 'app:write', op: 'app.create' },
  { method: 'GET', path: '/v1/app/list', scope: 'app:read', op: 'app.list' },
  { method: 'GET', path: '/v1/app/detail/:app_id', scope: 'app:read', op: 'app.get' },
  { method: 'PATCH', path: '/v1/app/detail/:app_id', scope: 'app:write', op: 'app.update' },
  { method: 'DELETE', path: '/v1/app/detail/:app_id', scope: 'app:write', op: 'app.delete' },
  { method: 'GET', path: '/v1/event', scope: 'event:read', op: 'event.list' },
  { method: 'GET', path: '/v1/event/:event_id', scope: 'event:read', op: 'event.get' },
  ...['run', 'file', 'team', 'feedback', 'catalog'].flatMap((resource) => [
    ...reserved(resource, `/v1/${resource}`),
    ...reserved(resource, `/v1/${resource}/:id`),
  ]),
  { method: 'GET', path: '/v1/run-usage/summary', scope: 'usage:read' },
];
