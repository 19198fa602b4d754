// Step 1 of decisions.md: plain HTTP gets 301 to the same path and query on the HTTPS origin,
// before anything else and without reading the body; behind a trusted proxy,
// X-Forwarded-Proto: http gets the same answer.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { MESSAGES } from '../support/assertions.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { assertError, assertSuccess, rawRequest } from './helpers.ts';

describe('plain-HTTP listener', () => {
  let service: TestService;
  let project: TestProject;
  let httpsOrigin: string;

  before(async () => {
    service = await TestService.start({ jobWorkers: false });
    project = await service.createProject();
    httpsOrigin = service.baseUrl;
  });
  after(() => service.stop());

  test('GET answers 301 with Location on the HTTPS origin, same path and query', async () => {
    const reply = await service.plainRequest('GET', '/v1/key?limit=5&offset=1');
    assertError(reply, 301, MESSAGES.movedPermanently);
    assert.equal(reply.headers.location, `${httpsOrigin}/v1/key?limit=5&offset=1`);
  });

  test('the Location works: repeating the call there over HTTPS succeeds', async () => {
    const reply = await service.plainRequest('GET', '/v1/key?limit=1');
    assert.equal(reply.status, 301);
    const location = new URL(reply.headers.location!);
    assert.equal(location.protocol, 'https:');
    const followed = await service.request('GET', location.pathname + location.search, { key: project.key });
    assertSuccess(followed, 200);
    assert.equal(followed.body.response.data.length, 1);
  });

  test('any method, any path, with or without a key: 301 first', async () => {
    const cases: Array<[string, string]> = [
      ['POST', '/v1/app/create'],
      ['PATCH', '/v1/app/detail/mapp_00000000000000000000?x=1'],
      ['DELETE', '/v1/key/papi_00000000000000000000'],
      ['PUT', '/v1/key'],
      ['TRACE', '/anything/at/all?q=a%20b&r='],
      ['GET', '/'],
      ['GET', '/healthz'],
    ];
    for (const [method, path] of cases) {
      const variants: Array<Record<string, string>> = [{}, { authorization: `Bearer ${project.key}` }, { authorization: 'Bearer sk-project-nope' }];
      for (const headers of variants) {
        const reply = await service.plainRequest(method, path, headers);
        assertError(reply, 301, MESSAGES.movedPermanently, `${method} ${path}`);
        assert.equal(reply.headers.location, `${httpsOrigin}${path}`, `${method} ${path}: Location`);
      }
    }
  });

  test('an absolute-form or asterisk target: the Location is the origin with the target\'s path and query alone', async () => {
    for (const [target, path] of [['https://evil.example/v1/key?limit=2', '/v1/key?limit=2'], ['a://b', '/'], ['*', '/'], ['http://x:1', '/']]) {
      const answer = await plainRaw(service, `${target === '*' ? 'OPTIONS' : 'GET'} ${target} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
      assert.equal(answer.status, 301, target);
      assert.equal(answer.location, `${httpsOrigin}${path}`, target);
    }
  });

  test('an expectation other than 100-continue is ignored: still the 301', async () => {
    const reply = await service.plainRequest('GET', '/v1/key?limit=1', { expect: 'something-else' });
    assertError(reply, 301, MESSAGES.movedPermanently);
    assert.equal(reply.headers.location, `${httpsOrigin}/v1/key?limit=1`);
  });

  test("the client's Host header never makes the Location: it is the HTTPS listener's own origin", async () => {
    for (const host of ['evil.example', `evil.example:${new URL(service.httpUrl).port}`, 'api.example.test']) {
      const reply = await service.plainRequest('GET', '/v1/event?x=y', { host });
      assertError(reply, 301, MESSAGES.movedPermanently, host);
      assert.equal(reply.headers.location, `${httpsOrigin}/v1/event?x=y`, host);
    }
  });

  test('the body is not read: a huge declared body gets 301 without being sent', async () => {
    const reply = await rawRequest(service, {
      plain: true,
      method: 'POST',
      path: '/v1/key?a=1',
      headers: { 'content-type': 'application/json', 'content-length': 10_000_000 },
      write: (req) => { req.write('{"name":'); return false; },
    });
    assertError(reply, 301, MESSAGES.movedPermanently);
    assert.equal(reply.headers.location, `${httpsOrigin}/v1/key?a=1`);
  });

  test('without TRUST_PROXY, X-Forwarded-Proto: http on the HTTPS listener is not trusted', async () => {
    const reply = await service.request('GET', '/v1/key/current', { key: project.key, headers: { 'x-forwarded-proto': 'http' } });
    assertSuccess(reply, 200);
  });
});

describe('with PUBLIC_URL set', () => {
  let service: TestService;

  before(async () => {
    service = await TestService.start({ jobWorkers: false, env: { PUBLIC_URL: 'https://api.example.test:9443/' } });
  });
  after(() => service.stop());

  test('the Location is the configured public origin, whatever Host says', async () => {
    for (const host of [undefined, 'evil.example', 'evil.example:443']) {
      const reply = await service.plainRequest('GET', '/v1/key?limit=3', host ? { host } : {});
      assertError(reply, 301, MESSAGES.movedPermanently, String(host));
      assert.equal(reply.headers.location, 'https://api.example.test:9443/v1/key?limit=3', String(host));
    }
  });
});

/** A request written as it is to the plain listener; the status and Location of its answer. */
function plainRaw(service: TestService, head: string): Promise<{ status: number; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(new URL(service.httpUrl).port), '127.0.0.1', () => socket.write(head));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      resolve({ status: Number(text.split(' ')[1]), location: /\r\nLocation: ([^\r]*)/i.exec(text)?.[1] });
    });
  });
}

describe('behind a TLS-terminating proxy (TRUST_PROXY=true)', () => {
  let service: TestService;
  let project: TestProject;

  before(async () => {
    service = await TestService.start({ jobWorkers: false, env: { TRUST_PROXY: 'true', PUBLIC_URL: 'https://api.example.test' } });
    project = await service.createProject();
  });
  after(() => service.stop());

  test('X-Forwarded-Proto: http gets 301 to the same path and query over HTTPS', async () => {
    const reply = await rawRequest(service, {
      method: 'GET',
      path: '/v1/key?limit=2&offset=0',
      headers: { authorization: `Bearer ${project.key}`, 'x-forwarded-proto': 'http', host: 'evil.example' },
    });
    assertError(reply, 301, MESSAGES.movedPermanently);
    assert.equal(reply.headers.location, 'https://api.example.test/v1/key?limit=2&offset=0');
  });

  test('the forwarded 301 comes before the method, size and key checks', async () => {
    const headers = { 'x-forwarded-proto': 'http', host: 'evil.example' };
    const noKey = await rawRequest(service, { method: 'GET', path: '/v1/event', headers });
    assertError(noKey, 301, MESSAGES.movedPermanently, 'no key');
    const put = await rawRequest(service, { method: 'PUT', path: '/v1/key', headers });
    assertError(put, 301, MESSAGES.movedPermanently, 'PUT');
    assert.equal(put.headers.location, 'https://api.example.test/v1/key');
    const huge = await rawRequest(service, {
      method: 'POST', path: '/v1/key', headers: { ...headers, 'content-length': 10_000_000 }, write: () => false,
    });
    assertError(huge, 301, MESSAGES.movedPermanently, 'huge body, unread');
    assert.equal(huge.headers.location, 'https://api.example.test/v1/key');
  });

  test('the proxy\'s own X-Forwarded-Proto is the last value, in any case; what comes before it the client sent', async () => {
    for (const proto of ['HTTP', 'Http', 'https, http', 'https,http']) {
      const reply = await rawRequest(service, { method: 'GET', path: '/v1/key', headers: { 'x-forwarded-proto': proto } });
      assertError(reply, 301, MESSAGES.movedPermanently, proto);
      assert.equal(reply.headers.location, 'https://api.example.test/v1/key', proto);
    }
    for (const proto of ['http, https', 'HTTPS', 'http,https']) {
      const reply = await service.request('GET', '/v1/key/current', { key: project.key, headers: { 'x-forwarded-proto': proto } });
      assertSuccess(reply, 200, proto);
    }
  });

  test('X-Forwarded-Proto: https passes through', async () => {
    const reply = await service.request('GET', '/v1/key/current', { key: project.key, headers: { 'x-forwarded-proto': 'https' } });
    assertSuccess(reply, 200);
    assert.equal(reply.body.response.id, project.keyId);
  });
});
