// The operations a worker thread can run, by the name the gateway's route table gives them.
import * as apps from '../domain/apps.ts';
import * as events from '../domain/events.ts';
import * as keys from '../domain/keys.ts';
import type { DomainRequest, DomainResult } from '../domain/requests.ts';
import type { Services } from '../domain/services.ts';

type Operation = (services: Services, req: DomainRequest) => Promise<DomainResult>;

export const OPERATIONS: Readonly<Record<string, Operation>> = {
  'key.list': keys.listKeys,
  'key.get': keys.getKey,
  'key.create': keys.createKey,
  'key.revoke': keys.revokeKey,
  'app.create': apps.createApp,
  'app.list': apps.listApps,
  'app.get': apps.getApp,
  'app.update': apps.updateApp,
  'app.delete': apps.deleteApp,
  'event.list': events.listEvents,
  'event.get': events.getEvent,
};
