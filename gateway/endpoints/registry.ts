// Every endpoint of the API, by name: the router, scope checks, pool thread lookup and OpenAPI
// document derive from it. Adding an endpoint is adding its module here.
import { appCreate } from './app-create.ts';
import { appDelete } from './app-delete.ts';
import { appGet } from './app-get.ts';
import { appList } from './app-list.ts';
import { appUpdate } from './app-update.ts';
import type { Endpoint, InlineEndpoint, PoolEndpoint, ResponseOf } from './endpoint.ts';
import { eventCheckpoint } from './event-checkpoint.ts';
import { eventGet } from './event-get.ts';
import { eventList } from './event-list.ts';
import { eventStream } from './event-stream.ts';
import { keyCreate } from './key-create.ts';
import { keyCurrent } from './key-current.ts';
import { keyGet } from './key-get.ts';
import { keyList } from './key-list.ts';
import { keyRevoke } from './key-revoke.ts';
import { keyRoll } from './key-roll.ts';
import { RESERVED } from './reserved.ts';
import { webhookCreate } from './webhook-create.ts';
import { webhookDeliveries } from './webhook-deliveries.ts';
import { webhookDelete } from './webhook-delete.ts';
import { webhookGet } from './webhook-get.ts';
import { webhookList } from './webhook-list.ts';
import { webhookReplay } from './webhook-replay.ts';
import { webhookRotate } from './webhook-rotate.ts';
import { webhookUpdate } from './webhook-update.ts';

export const ENDPOINTS = {
  keyList, keyCurrent, keyGet, keyCreate, keyRevoke, keyRoll,
  appCreate, appList, appGet, appUpdate, appDelete,
  eventList, eventStream, eventCheckpoint, eventGet,
  webhookCreate, webhookList, webhookGet, webhookUpdate, webhookDelete, webhookRotate, webhookDeliveries, webhookReplay,
} as const;

export type EndpointName = keyof typeof ENDPOINTS;
/** The endpoints a pool thread runs. */
export type PoolEndpointName = { [N in EndpointName]: (typeof ENDPOINTS)[N] extends PoolEndpoint<any> ? N : never }[EndpointName];
/** The endpoints that answer one JSON envelope (not the event stream): what a client calls. */
export type JsonEndpointName = { [N in EndpointName]: (typeof ENDPOINTS)[N] extends PoolEndpoint<any> | InlineEndpoint<any> ? N : never }[EndpointName];
/** What an endpoint answers on success, as its handler's type says (the typed client's results). */
export type EndpointResponse<N extends EndpointName> = ResponseOf<(typeof ENDPOINTS)[N]>;

/** Every endpoint, the reserved ones too, named (a reserved one by its method and path). */
export function allEndpoints(): Array<[name: string, endpoint: Endpoint]> {
  return [
    ...Object.entries(ENDPOINTS) as Array<[EndpointName, Endpoint]>,
    ...RESERVED.map((endpoint): [string, Endpoint] => [`${endpoint.method.toLowerCase()}${endpoint.path.replace(/[{}]/g, '').replace(/[/-](\w)/g, (_, c: string) => c.toUpperCase())}`, endpoint]),
  ];
}
