// The metrics listeners of web and worker, scraped over plain HTTP: exact counts for the requests
// sent, refusals by reason, the worker's events, jobs and checkpoints; series bounded whatever
// paths and methods clients send; no listener without its variable.
import { JOB_QUEUES } from '../../workers/registry.ts';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { readConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { newRegistry, serveMetrics } from '../../lib/metrics.ts';
import { StartupError } from '../../lib/startup-error.ts';
import { EventStreamReader } from '../support/sse.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { waitFor } from '../support/wait.ts';
import { get, ownSeries, scrape, sum } from './helpers.ts';

let service: TestService;
let project: TestProject;
let webPort: number;
let workerPort: number;
let agent: https.Agent;

before(async () => {
  service = await TestService.start({ env: { METRICS_PORT: '0', WORKER_METRICS_PORT: '0', CHECKPOINT_INTERVAL_S: '1' } });
  project = await service.createProject();
  webPort = service.metricsPorts.web!;
  workerPort = service.metricsPorts.worker!;
  agent = new https.Agent({ keepAlive: true, ca: readFileSync(service.config.tlsCertFile!) });
});

after(async () => {
  agent.destroy();
  await service.stop();
});

/** Any request, documented or not, and its status (a HEAD or a refusal on the socket included). */
function raw(method: string, path: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(new URL(path, service.baseUrl), { method, headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    // CONNECT's answer, whatever its status, comes as 'connect'.
    req.on('connect', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

const HTTP = 'pms_http_requests_total';
const REFUSALS = 'pms_http_refusals_total';

describe('the web process', () => {
  test('counts each request by its route template, method and status, and its refusals by reason', async () => {
    const before = await scrape(webPort);
    assert.equal(before.status, 200);
    assert.match(before.contentType ?? '', /^text\/plain; version=0\.0\.4/);
    for (let i = 0; i < 3; i++) assert.equal((await service.request('GET', '/v1/key/current', { key: project.key })).status, 200);
    assert.equal((await service.request('GET', '/v1/key/current')).status, 401);
    assert.equal((await service.request('GET', '/v1/key/current', { key: `sk-project-${randomBytes(24).toString('hex')}` })).status, 403);
    assert.equal((await service.request('GET', `/v1/nothing-${randomBytes(4).toString('hex')}`, { key: project.key })).status, 404);
    assert.equal((await service.request('GET', `/v1/key/papi_${randomBytes(8).toString('hex')}`, { key: project.key })).status, 404);
    assert.equal((await service.request('POST', '/v1/key', { key: project.key, body: { name: 'metrics', scope: ['key:read'] } })).status, 201);
    assert.equal(await raw('PUT', '/v1/key/current', { authorization: `Bearer ${project.key}` }), 405);

    const now = await scrape(webPort);
    const delta = (name: string, labels: Record<string, string>) => sum(now, name, labels) - sum(before, name, labels);
    assert.equal(delta(HTTP, { route: '/v1/key/current', method: 'GET', status: '200' }), 3);
    // Refused before routing, still by the route it would have taken.
    assert.equal(delta(HTTP, { route: '/v1/key/current', method: 'GET', status: '401' }), 1);
    assert.equal(delta(HTTP, { route: '/v1/key/current', method: 'GET', status: '403' }), 1);
    // No route takes PUT: the path alone names none.
    assert.equal(delta(HTTP, { route: 'unmatched', method: 'PUT', status: '405' }), 1);
    assert.equal(delta(HTTP, { route: 'unmatched', method: 'GET', status: '404' }), 1);
    assert.equal(delta(HTTP, { route: '/v1/key/{key_id}', method: 'GET', status: '404' }), 1);
    assert.equal(delta(HTTP, { route: '/v1/key', method: 'POST', status: '201' }), 1);
    assert.equal(delta(HTTP, {}), 9);
    assert.equal(delta('pms_http_request_duration_seconds_count', { route: '/v1/key/current', method: 'GET' }), 5);
    assert.equal(delta('pms_http_request_duration_seconds_count', {}), 9);
    assert.equal(delta(REFUSALS, { reason: 'no_key' }), 1);
    assert.equal(delta(REFUSALS, { reason: 'key_refused' }), 1);
    assert.equal(delta(REFUSALS, { reason: 'unknown_path' }), 1);
    assert.equal(delta(REFUSALS, { reason: 'method_not_allowed' }), 1);
    assert.equal(delta(REFUSALS, { reason: 'not_found' }), 1);
    assert.equal(delta(REFUSALS, {}), 5);
    assert.equal(delta('pms_pool_tasks_completed_total', {}), 1);
    assert.equal(sum(now, 'pms_pool_queued_tasks'), 0);
    assert.equal(sum(now, 'pms_pool_threads'), 1);
    assert.equal(sum(now, 'pms_db_waiting_queries'), 0);
    // The process's defaults are there too.
    assert.ok(sum(now, 'process_cpu_seconds_total') > 0);
    assert.ok(now.series.some((s) => s.name === 'nodejs_eventloop_lag_seconds'));
  });

  test('counts what Node refuses before a request exists: an unknown method, CONNECT', async () => {
    const before = await scrape(webPort);
    assert.equal(await raw('BREW', '/v1/key/current'), 400);
    assert.equal(await raw('CONNECT', '127.0.0.1:1'), 405);
    const now = await scrape(webPort);
    assert.equal(sum(now, REFUSALS, { reason: 'bad_request' }) - sum(before, REFUSALS, { reason: 'bad_request' }), 1);
    assert.equal(sum(now, REFUSALS, { reason: 'method_not_allowed' }) - sum(before, REFUSALS, { reason: 'method_not_allowed' }), 1);
    assert.equal(sum(now, HTTP) - sum(before, HTTP), 0);
  });

  test('a key past its own request limit is key_rate_limited, not the address\'s too_many_refusals; 409 is conflict', async () => {
    const made = await service.request('POST', '/v1/key', { key: project.key, body: { name: 'limited', rate_limit: { limit: 1, window_s: 86_400 } } });
    const limited = (made.body as { response: { key: string } }).response.key;
    const before = await scrape(webPort);
    const statuses: number[] = [];
    // One process admits the limit and one more (decisions.md: + 1% + 1 per web process).
    for (let i = 0; i < 3; i++) statuses.push((await service.request('GET', '/v1/key/current', { key: limited })).status);
    assert.deepEqual(statuses, [200, 200, 429]);
    const now = await scrape(webPort);
    const delta = (reason: string) => sum(now, REFUSALS, { reason }) - sum(before, REFUSALS, { reason });
    assert.equal(delta('key_rate_limited'), 1);
    assert.equal(delta('too_many_refusals'), 0);
    for (const reason of ['conflict', 'headers_too_large', 'version_not_supported']) {
      assert.ok(now.series.some((s) => s.name === REFUSALS && s.labels.reason === reason), `${reason} starts at 0`);
    }
  });

  test('counts a head over the limit as headers_too_large (431)', async () => {
    const before = await scrape(webPort);
    assert.equal(await raw('GET', '/healthz', { 'x-big': 'y'.repeat(17_000) }), 431);
    const now = await scrape(webPort);
    assert.equal(sum(now, REFUSALS, { reason: 'headers_too_large' }) - sum(before, REFUSALS, { reason: 'headers_too_large' }), 1);
  });

  test('holds its series to the routes and a fixed few methods, whatever paths and methods clients send', async () => {
    const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'PROPFIND', 'MKCOL', 'PURGE', 'FOO', 'BREW'];
    // Node's parser refuses these itself (400 on the socket): never a request restify sees.
    const unparsed = new Set(['FOO', 'BREW']);
    const token = () => `zz${randomBytes(6).toString('hex')}`;
    const paths = [
      () => `/${token()}`,
      () => `/v1/${token()}/${token()}?${token()}=${token()}`,
      () => `/v1/key/${token()}`,
      () => `/v1/app/detail/${token()}?limit=${token()}`,
    ];
    const sent: string[] = [];
    const send = async (method: string, path: () => string, withKey: boolean) => {
      const target = path();
      sent.push(target);
      const headers: Record<string, string> = { 'x-request-id': token(), 'user-agent': token() };
      if (withKey) headers.authorization = `Bearer ${project.key}`;
      await raw(method, target, headers);
    };
    // Every kind of request once, so each series it can make exists before the count is taken.
    for (const method of methods) for (const path of paths) for (const withKey of [true, false]) await send(method, path, withKey);
    const warm = await scrape(webPort);

    const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;
    let parsed = 0;
    for (let i = 0; i < 200; i++) {
      const method = pick(methods);
      if (!unparsed.has(method)) parsed += 1;
      await send(method, pick(paths), Math.random() < 0.5);
    }
    const now = await scrape(webPort);
    assert.equal(ownSeries(now), ownSeries(warm), 'series grew with random paths and methods');
    assert.equal(sum(now, HTTP) - sum(warm, HTTP), parsed);
    assert.equal(sum(now, REFUSALS, { reason: 'bad_request' }) - sum(warm, REFUSALS, { reason: 'bad_request' }), 200 - parsed);
    const labels = new Set(now.series.flatMap((s) => Object.values(s.labels)));
    assert.ok([...labels].every((value) => !value.includes('zz')), 'a label carries what a client sent');
    assert.ok(!sent.some((target) => now.text.includes(target.split('?')[0]!)));
    const methodsSeen = new Set(now.series.filter((s) => s.name === HTTP).map((s) => s.labels.method));
    assert.deepEqual([...methodsSeen].sort(), ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'other']);
  });

  test('gauges the open event streams', async () => {
    const stream = await EventStreamReader.open(service, '/v1/event/stream', project.key);
    assert.equal(sum(await scrape(webPort), 'pms_event_streams_open'), 1);
    stream.close();
    await waitFor('the stream to be closed', async () => (sum(await scrape(webPort), 'pms_event_streams_open') === 0 ? true : undefined));
  });

  test('its listener answers GET and HEAD /metrics alone', async () => {
    assert.equal((await get(webPort, '/metrics', 'HEAD')).status, 200);
    assert.equal((await get(webPort, '/metrics?x=1')).status, 200);
    assert.equal((await get(webPort, '/')).status, 404);
    assert.equal((await get(webPort, '/v1/key/current')).status, 404);
    const post = await get(webPort, '/metrics', 'POST');
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
  });
});

describe('the worker process', () => {
  test('counts the events the drain wrote and their lag, the jobs, the checkpoints, and gauges the queues', async () => {
    await service.waitForJobsDrained();
    const { rows: [events] } = await service.db.query('SELECT count(*)::int AS n FROM events');
    const scraped = await waitFor('the drain\'s batches counted', async () => {
      const s = await scrape(workerPort);
      return sum(s, 'pms_audit_events_written_total') === events.n ? s : undefined;
    });
    assert.ok(events.n >= 3, `events: ${events.n}`);
    assert.equal(sum(scraped, 'pms_audit_event_lag_seconds_count'), events.n);
    assert.equal(sum(scraped, 'pms_audit_event_lag_seconds_bucket', { le: '+Inf' }), events.n);
    assert.ok(sum(scraped, 'pms_jobs_completed_total', { queue: 'audit.drain' }) >= 1);
    assert.equal(sum(scraped, 'pms_jobs_failed_total'), 0);
    const queues = JOB_QUEUES.map((queue) => queue.name);
    assert.deepEqual(new Set(scraped.series.filter((s) => s.name === 'pms_jobs_failed_total').map((s) => s.labels.queue)), new Set(queues));

    // CHECKPOINT_INTERVAL_S=1: the project's head is signed within a second or two.
    const signed = await waitFor('a checkpoint counted', async () => {
      const { rows: [row] } = await service.db.query('SELECT count(*)::int AS n FROM audit_checkpoints');
      const counted = sum(await scrape(workerPort), 'pms_audit_checkpoints_total');
      return row.n > 0 && counted === row.n ? counted : undefined;
    }, 10_000);
    assert.ok(signed >= 1);

    // pg-boss's monitor counts each queue every 10 s; its table is read at scrape time.
    const gauged = await waitFor('the queues gauged', async () => {
      const s = await scrape(workerPort);
      return s.series.some((x) => x.name === 'pms_job_queue_jobs') ? s : undefined;
    }, 15_000);
    const gauges = gauged.series.filter((s) => s.name === 'pms_job_queue_jobs');
    assert.deepEqual(new Set(gauges.map((s) => s.labels.queue)), new Set(queues));
    assert.deepEqual(new Set(gauges.map((s) => s.labels.state)), new Set(['ready', 'deferred', 'active', 'failed']));
  });
});

describe('configuration', () => {
  test('METRICS_PORT and WORKER_METRICS_PORT: unset none, a port, 0 any free port; anything else stops the start', () => {
    assert.equal(readConfig({}).metricsPort, undefined);
    assert.equal(readConfig({ METRICS_PORT: '' }).metricsPort, undefined);
    assert.equal(readConfig({ METRICS_PORT: '0' }).metricsPort, 0);
    assert.equal(readConfig({ WORKER_METRICS_PORT: '9465' }).workerMetricsPort, 9465);
    assert.throws(() => readConfig({ METRICS_PORT: '70000' }), /^StartupError: METRICS_PORT must be a whole number from 0 to 65535, got "70000"\.$/);
    assert.throws(() => readConfig({ WORKER_METRICS_PORT: 'x' }), StartupError);
  });

  test('without them, no listener', async () => {
    const plain = await TestService.start({ jobWorkers: true });
    try {
      assert.deepEqual(plain.metricsPorts, { web: undefined, worker: undefined });
    } finally {
      await plain.stop();
    }
  });

  test('a metrics port already taken is one line naming its variable', async () => {
    const held = createServer();
    await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve));
    const port = (held.address() as { port: number }).port;
    try {
      const log = createLogger('silent', 'test');
      await assert.rejects(serveMetrics(newRegistry(), '127.0.0.1', port, 'WORKER_METRICS_PORT', log),
        new StartupError(`port ${port} is already in use; set WORKER_METRICS_PORT to another port.`));
    } finally {
      held.close();
    }
  });
});
