// The timing oracle: refusals of an unknown secret (of either shape), a revoked key, a disabled
// project's key and a known key revoked behind the process's back must answer the identical 403 in
// indistinguishable time. The kinds are called round-robin, the order rotated every round, so drift
// hits all alike; each kind's median paired difference from the unknown key must stay under the
// tolerance (15 % of the time beyond the refusal floor, or 0.1 ms: below a second round trip).
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { after, before, test } from 'node:test';
import { disableProject } from '../../domain/projects.ts';
import { newSecret } from '../../domain/secrets.ts';
import { assertSuccess, envelope, MESSAGES } from '../support/assertions.ts';
import { recordFigure } from '../support/figures.ts';
import { createKey } from '../support/keys.ts';
import { readReply, TestService, type Reply } from '../support/service.ts';

const SUITE = 'timing';
const CALLS = 1000;
const WARM_UP = 150;
const RELATIVE_TOLERANCE = 0.15;
const ABSOLUTE_TOLERANCE_MS = 0.1;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

type Kind = 'unknown' | 'unknown of a project' | 'revoked' | 'disabled' | 'known revoked';
const KINDS: Kind[] = ['unknown', 'unknown of a project', 'revoked', 'disabled', 'known revoked'];
const COMPARED = ['unknown of a project', 'revoked', 'disabled', 'known revoked'] as const;

/** The two ways a request reaches its work: a read on the gateway's thread, a change on a pool thread. */
const ENDPOINTS = [
  { method: 'GET', path: '/v1/key/current', body: undefined, success: 200 },
  { method: 'POST', path: '/v1/key', body: JSON.stringify({ name: 'timing', scope: ['key:read'] }), success: 201 },
] as const;
type Measured = typeof ENDPOINTS[number];

let service: TestService;
let agent: https.Agent;
let revokedSecret: string;
let disabledSecret: string;
let validSecret: string;
/** Keys the process knows from memory (gateway/known-keys.ts), revoked behind it: one per call, as a refusal forgets the key. */
const knownRevoked: string[] = [];
let floorMs: number;

function unknownSecret(): string {
  let out = 'sk-project-';
  for (let i = 0; i < 43; i++) out += BASE62[randomInt(62)];
  return out;
}

before(async () => {
  // No job workers: no cron tick or audit write competes with the measurement. Thousands of
  // refusals from one address, on purpose: the refusal throttle (429) is off here.
  // KEY_REFUSAL_FLOOR_MS as the environment gives it: a deployment whose slowest refusal is slower
  // (a Citus cluster's, docs/citus.md) sets a higher floor.
  const floor = process.env.KEY_REFUSAL_FLOOR_MS;
  service = await TestService.start({ jobWorkers: false, env: { AUTH_REFUSALS_PER_MINUTE: '0', ...(floor ? { KEY_REFUSAL_FLOOR_MS: floor } : {}) } });
  floorMs = service.config.keyRefusalFloorMs;
  agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: readFileSync(service.config.tlsCertFile!) });
  const a = await service.createProject('Timing A');
  validSecret = a.key;
  const doomed = await createKey(service, a.key, { name: 'to revoke', scope: ['key:read'] });
  assertSuccess(await service.request('DELETE', `/v1/key/${doomed.id}`, { key: a.key }), 200, 'revoking');
  revokedSecret = doomed.key;
  const c = await service.createProject('Timing C');
  const cKey = await createKey(service, c.key, { name: 'of a disabled project', scope: ['key:read'] });
  await disableProject(service.services, { origin: 'workspace', ip: '127.0.0.1' }, c.projectId);
  disabledSecret = cKey.key;
  const ids: string[] = [];
  for (let i = 0; i < ENDPOINTS.length * (WARM_UP + CALLS); i++) {
    const made = await createKey(service, a.key, { name: `known ${i}`, scope: ['key:read', 'key:write'] });
    assertSuccess(await service.request('GET', '/v1/key/current', { key: made.key }), 200, 'making the key known');
    ids.push(made.id);
    knownRevoked.push(made.key);
  }
  await service.db.query(`UPDATE api_keys SET status = 'revoked' WHERE id = ANY($1)`, [ids]);
});

after(async () => {
  agent?.destroy();
  await service?.stop();
});

function call({ method, path, body }: Measured, secret: string): Promise<{ ms: number; reply: Reply }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = https.request(new URL(path, service.baseUrl), {
      method, agent,
      headers: { authorization: `Bearer ${secret}`, ...(body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }) },
    });
    req.on('response', (res) => {
      readReply(res).then((reply) => resolve({ ms: performance.now() - started, reply }), reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const SECRETS: Record<Kind | 'valid', () => string> = {
  unknown: unknownSecret,
  // Of today's shape, naming a project (domain/secrets.ts): looked up where that project's keys are.
  'unknown of a project': () => newSecret(`proj_${randomBytes(10).toString('hex')}`),
  revoked: () => revokedSecret,
  disabled: () => disabledSecret,
  'known revoked': () => knownRevoked.pop()!,
  valid: () => validSecret,
};
const secretOf = (kind: Kind | 'valid') => SECRETS[kind]();

function quantile(sorted: number[], q: number): number {
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo);
}

const round3 = (ms: number) => Math.round(ms * 1000) / 1000;
const HEADERS_THAT_VARY = new Set(['date', 'x-request-id']);

for (const endpoint of ENDPOINTS) {
  test(`${endpoint.method} ${endpoint.path}: an unknown, a revoked, a disabled-project key and a known key revoked since are refused alike: identical 403 envelope, indistinguishable time`, () => measure(endpoint));
}

async function measure(endpoint: Measured): Promise<void> {
  const suite = `${SUITE}, ${endpoint.method} ${endpoint.path}`;
  const expected = envelope(403, MESSAGES.refused);
  let reference: { text: string; headers: string } | undefined;
  const check = (kind: Kind, reply: Reply) => {
    assert.equal(reply.status, 403, `${kind}: status (body ${reply.text})`);
    assert.deepEqual(reply.body, expected, `${kind}: envelope`);
    const headers = Object.entries(reply.headers).filter(([name]) => !HEADERS_THAT_VARY.has(name))
      .map(([name, value]) => `${name}: ${value}`).sort().join('\n');
    reference ??= { text: reply.text, headers };
    assert.equal(reply.text, reference.text, `${kind}: the body is byte for byte the same`);
    assert.equal(headers, reference.headers, `${kind}: the same headers`);
  };

  for (let i = 0; i < WARM_UP; i++) {
    for (const kind of KINDS) check(kind, (await call(endpoint, secretOf(kind))).reply);
    assertSuccess((await call(endpoint, validSecret)).reply, endpoint.success, 'valid key');
  }

  const samples: Record<Kind | 'valid', number[]> = { unknown: [], 'unknown of a project': [], revoked: [], disabled: [], 'known revoked': [], valid: [] };
  const paired: Record<typeof COMPARED[number], number[]> = { 'unknown of a project': [], revoked: [], disabled: [], 'known revoked': [] };
  const started = performance.now();
  for (let round = 0; round < CALLS; round++) {
    const order = [...KINDS.slice(round % KINDS.length), ...KINDS.slice(0, round % KINDS.length)];
    const times: Partial<Record<Kind, number>> = {};
    for (const kind of order) {
      const { ms, reply } = await call(endpoint, secretOf(kind));
      check(kind, reply);
      samples[kind].push(ms);
      times[kind] = ms;
    }
    for (const kind of COMPARED) paired[kind].push(times[kind]! - times.unknown!);
    // For scale: the work an accepted key does, every fifth round.
    if (round % 5 === 0) {
      const { ms, reply } = await call(endpoint, validSecret);
      assertSuccess(reply, endpoint.success, 'valid key');
      samples.valid.push(ms);
    }
  }
  const seconds = (performance.now() - started) / 1000;

  const stats = Object.fromEntries(Object.entries(samples).map(([kind, values]) => {
    const sorted = [...values].sort((x, y) => x - y);
    return [kind, { n: sorted.length, median: quantile(sorted, 0.5), p90: quantile(sorted, 0.9) }];
  })) as Record<Kind | 'valid', { n: number; median: number; p90: number }>;
  const medians = KINDS.map((kind) => stats[kind].median);
  const spread = Math.max(...medians) - Math.min(...medians);
  const overall = quantile([...medians].sort((x, y) => x - y), 0.5);
  const tolerance = Math.max(RELATIVE_TOLERANCE * Math.max(overall - floorMs, 0), ABSOLUTE_TOLERANCE_MS);
  const pairedMedian = (values: number[]) => quantile([...values].sort((x, y) => x - y), 0.5);

  for (const kind of KINDS) {
    recordFigure(suite, `${kind}: calls`, stats[kind].n);
    recordFigure(suite, `${kind}: median ms`, round3(stats[kind].median));
    recordFigure(suite, `${kind}: p90 ms`, round3(stats[kind].p90));
  }
  recordFigure(suite, 'spread of medians ms', round3(spread));
  recordFigure(suite, 'refusal floor ms', floorMs);
  recordFigure(suite, 'tolerance of a paired median ms (max of 15% of the median beyond the floor, 0.1)', round3(tolerance));
  for (const kind of COMPARED) recordFigure(suite, `paired median ${kind} - unknown ms`, round3(pairedMedian(paired[kind])));
  // Sign test: under "indistinguishable", each paired difference is positive with probability 1/2.
  for (const kind of COMPARED) {
    const slower = paired[kind].filter((d) => d > 0).length;
    const z = (slower - CALLS / 2) / Math.sqrt(CALLS / 4);
    recordFigure(suite, `${kind} slower than unknown in a round`, `${slower}/${CALLS} (sign test z = ${z.toFixed(1)})`);
  }
  recordFigure(suite, 'valid key (for scale): median ms', `${round3(stats.valid.median)} (n=${stats.valid.n})`);
  recordFigure(suite, 'measurement s', Math.round(seconds));

  for (const kind of COMPARED) {
    const difference = pairedMedian(paired[kind]);
    assert.ok(Math.abs(difference) <= tolerance,
      `${kind} against unknown: paired median ${round3(difference)} ms beyond ${round3(tolerance)} ms (medians ${KINDS.map((k, i) => `${k} ${round3(medians[i]!)} ms`).join(', ')})`);
  }
}
