// The key secrets a test file has seen, so that it can show none of them (nor a hash of one)
// turns up where it must not: in events, in answers, in the logs.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { SECRET_SHAPED } from './ids.ts';
import { createKey, type CreatedKey } from './keys.ts';
import type { TestProject, TestService } from './service.ts';

export class Secrets {
  readonly seen: string[] = [];

  add(secret: string): void {
    this.seen.push(secret);
  }

  /** A project made the way the workspace command line makes one; its key's secret is kept. */
  async project(service: TestService, name: string): Promise<TestProject> {
    const made = await service.createProject(name);
    this.add(made.key);
    return made;
  }

  /** A key made through POST /v1/key; its secret is kept. */
  async key(service: TestService, callerKey: string, body: Record<string, unknown>): Promise<CreatedKey> {
    const made = await createKey(service, callerKey, body);
    this.add(made.key);
    return made;
  }

  /** No secret seen, nor the hex or base64 of its SHA-256 hash, appears in the text. */
  assertNoneIn(text: string, what: string): void {
    for (const secret of this.seen) {
      assert.ok(!text.includes(secret), `${what} holds a key secret`);
      const hash = createHash('sha256').update(secret).digest();
      assert.ok(!text.includes(hash.toString('hex')), `${what} holds a secret hash (hex)`);
      assert.ok(!text.includes(hash.toString('base64')), `${what} holds a secret hash (base64)`);
    }
  }

  /** A log that records the requests made (`requests`) and holds no Bearer value, nothing secret-shaped, no secret and no hash. */
  assertLogClean(text: string, requests: RegExp, what = 'the service log'): void {
    assert.match(text, requests, `${what} records the requests made`);
    assert.ok(!text.includes('Bearer '), `${what} holds a Bearer header value`);
    assert.doesNotMatch(text, SECRET_SHAPED, `${what} holds a secret-shaped string`);
    this.assertNoneIn(text, what);
  }
}
