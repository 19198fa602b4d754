// Making API keys through the API, as a test's setup does.
import { assertSuccess } from './assertions.ts';
import type { TestService } from './service.ts';

export interface CreatedKey {
  id: string;
  /** The secret, shown in the creation answer only. */
  key: string;
  /** The whole key object of the creation answer. */
  object: any;
}

/** Creates a key of the caller's project through POST /v1/key; fails the test unless the answer is a 201 envelope. */
export async function createKey(service: TestService, callerKey: string, body: Record<string, unknown>): Promise<CreatedKey> {
  const reply = await service.request('POST', '/v1/key', { key: callerKey, body });
  const object = assertSuccess(reply, 201, 'creating a key');
  return { id: object.id, key: object.key, object };
}
