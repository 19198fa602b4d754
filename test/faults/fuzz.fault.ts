// Property-based fuzzing of the whole HTTPS surface (fast-check) against one service holding two
// projects: every response is a contract envelope (never 500/503), leaks no secret but a new key's,
// and names nothing of another project but an activated public app; afterwards no foreign record
// changed, every change has its event, and the log holds no secret.
// Reproduce: FUZZ_SEED=<seed from the figures> npm run test:faults -- test/faults/fuzz.fault.ts
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { disableConsumer, disableProject } from '../../domain/projects.ts';
import { setLogo } from '../../domain/apps.ts';
import { assertSuccess, TITLES } from '../support/assertions.ts';
import { recordFigure } from '../support/figures.ts';
import { createKey } from '../support/keys.ts';
import { readReply, TestService, type Reply, type TestProject } from '../support/service.ts';
import { tempDir } from '../support/tmp.ts';
import { nowSeconds, sleep } from '../support/wait.ts';

const SUITE = 'fuzz';
/** Requests in flight at once: one fast-check lane each. */
const LANES = 8;
const REQUEST_TIMEOUT_MS = 20_000;
/** Runs per property (summed over the lanes); together at least 10,000 requests. */
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const RUNS = Object.fromEntries(Object.entries({ bodies: 3200, rawBodies: 1600, queries: 1600, streams: 800, paths: 2400, authorization: 1600 })
  .map(([name, runs]) => [name, Math.ceil(runs * SCALE)])) as { bodies: number; rawBodies: number; queries: number; streams: number; paths: number; authorization: number };
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2_147_483_647);

// ---------------------------------------------------------------------------------------------
// The contract, written out (tests must not import the service's own tables).

const GATEWAY_NOT_FOUND = 'The requested resource was not found.';
const REFUSED = "The API key doesn't have permissions to perform the request.";
const NO_KEY = 'No valid API key provided.';
const EXPIRED = 'The API key has expired.';
const MALFORMED = 'Malformed HTTP request.';
const HEADERS_TOO_LARGE = 'Request headers too large.';

/** Every failure the contract (api.md, decisions.md, README's open choices) names, by status. */
const CONTRACT_FAILURES: ReadonlyArray<readonly [number, string | RegExp]> = [
  [400, 'Invalid JSON.'], [400, MALFORMED], [400, 'scope must be an array.'],
  [401, NO_KEY], [401, EXPIRED],
  [402, 'The current billing plan does not allow custom app creation for this project.'],
  [402, 'The current billing plan app limit has been reached for this project.'],
  [403, REFUSED], [403, /^The API key is missing the required scope: [a-z]+:(read|write)$/],
  [403, 'Cannot create a key with wider scope than the calling key.'], [403, 'Cannot create a key that outlives the calling key.'],
  [404, GATEWAY_NOT_FOUND], [404, 'API key not found.'], [404, 'App not found.'], [404, 'Event not found.'],
  [404, 'The selected data type does not exist.'], [404, 'The selected instruction type does not exist.'],
  [404, 'The selected category does not exist.'],
  [405, 'The request method is not allowed.'],
  [413, 'Request body too large.'],
  [431, HEADERS_TOO_LARGE], [505, 'HTTP version not supported.'],
  [422, 'The parameters were valid but the request failed.'],
  [422, 'limit must be an integer from 1 to 100.'], [422, 'offset must be a non-negative integer.'],
  [422, 'after must be a non-negative integer.'], [422, /^Unknown event type: [\s\S]*\.$/],
  [422, 'name is required.'], [422, 'name must be a string.'], [422, 'name must be at most 200 characters.'],
  [422, 'scope must name at least one scope.'], [422, /^Unknown scope: [\s\S]*\.$/],
  [422, 'expires_at must be a future Unix time in seconds.'], [422, 'Cannot revoke the API key currently in use.'],
  [422, 'At least one data field must be required.'],
  [422, 'description is required.'], [422, 'description must be a string.'], [422, 'description must be at most 2000 characters.'],
  [422, 'placeholder must be a string.'], [422, 'required must be a boolean.'],
  [422, 'data must be a non-empty array.'], [422, 'instruction must be a non-empty array.'],
  [422, 'Each data field needs a type and a name.'], [422, 'Each instruction needs a type and an instruction.'],
  [422, 'Data field names must be unique.'],
  [422, "status must be 'draft' or 'activated'."], [422, "type must be 'public' or 'private'."],
  [422, 'The selected category has no model that reads images.'],
  [422, 'The app must be activated before it can be published.'],
  [422, 'The app needs an image logo before it can be published.'],
  [422, 'Nothing to update. Provide name, description and/or type.'],
  [422, 'name must not be empty.'], [422, 'description must not be empty.'],
  // The service's own, for what the contract leaves open (README, "Choices the contract leaves open").
  [422, 'The JSON body is nested too deeply.'], [422, 'Text must be valid Unicode without NUL characters.'],
  [501, 'This endpoint is not implemented yet.'],
];

const SCOPE_RESOURCES = ['key', 'app', 'event', 'run', 'file', 'team', 'feedback', 'catalog', 'usage', 'reasoning'];
const KNOWN_SCOPES = ['*', ...SCOPE_RESOURCES.flatMap((r) => [`${r}:read`, `${r}:write`, `${r}:*`])];
const DATA_TYPES = ['input', 'text area', 'number', 'email', 'document', 'image',
  'mdti_c2a39a7ad82bc017dccd', 'mdti_fdd932b23e1fa82aa942', 'mdti_0bf56e96d417b823b7e8',
  'mdti_52f84207d0f8a95ed43d', 'mdti_5017cf8657e1df4df809', 'mdti_1777f1beedfbd5cde030'];
/** Event type names of decisions.md, and near misses. */
const EVENT_TYPE_NAMES = ['key.created', 'key.revoked', 'key.expired', 'app.created', 'app.updated', 'app.published', 'project.created',
  'key.renamed', 'KEY.CREATED', 'key.', '.created', 'key.created%20', 'key%2Ecreated', '%00', '', '*'];
const CATEGORIES = ['general', 'writing', 'summarization', 'extraction', 'vision', 'translation', 'coding'];
const RESERVED = ['run', 'file', 'team', 'feedback', 'catalog'];
/** Identifier prefixes of records that belong to a project (decisions.md, Naming). */
const OWNED_ID = /(?:papi|cons|proj|mapp|madi|miid|file|run|evnt)_[0-9a-f]{20}/g;
const ANY_PREFIX = ['papi', 'cons', 'proj', 'mapp', 'madi', 'miid', 'modi', 'mlyi', 'file', 'run', 'evnt', 'evty', 'mdti'];
const SECRET_IN_TEXT = /sk-project-[0-9A-Za-z]{43,}/g;
const SECRET_SHAPED = /sk-project-[0-9A-Za-z]{8,}/g;
const HEX64 = /[0-9a-f]{64}/g;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_LENGTH = 'sk-project-'.length + 43;

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

// ---------------------------------------------------------------------------------------------
// JSON text that JSON.stringify cannot write: raw number tokens, duplicate and `__proto__` keys.

class Raw {
  text: string;
  constructor(text: string) { this.text = text; }
}

class Obj {
  entries: Array<[string, unknown]>;
  constructor(entries: Array<[string, unknown]>) { this.entries = entries; }
}

function json(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (value instanceof Obj) return `{${value.entries.map(([k, v]) => `${JSON.stringify(k)}:${json(v)}`).join(',')}}`;
  if (Array.isArray(value)) return `[${value.map(json).join(',')}]`;
  if (value === undefined) return 'null';
  if (typeof value === 'object' && value !== null) return json(new Obj(Object.entries(value)));
  return JSON.stringify(value);
}

// ---------------------------------------------------------------------------------------------
// The world the fuzz runs in.

type ProjectName = 'A' | 'B' | 'C' | 'D';

interface Caller {
  label: string;
  /** The project whose key this is (also for revoked and expired keys); null: no key of ours. */
  project: ProjectName | null;
  /** The Authorization header; undefined: none. */
  authorization?: string | string[];
}

interface World {
  A: TestProject;
  B: TestProject;
  callers: Record<string, Caller>;
  /** Every record id made by the fixture → its project. */
  owner: Map<string, string>;
  /** Ids of another project a reader may see: activated public apps, their logo and data fields. */
  publicIds: Set<string>;
  /** B's public activated app with an image logo. */
  bPublicApp: string;
  /** Ids the fuzz may revoke or delete, and may edit, per project; every other fixture record is kept. */
  deletable: { keys: Record<'A' | 'B', string[]>; apps: Record<'A' | 'B', string[]> };
  patchable: Record<'A' | 'B', string[]>;
  /** Secrets of every fixture key, whatever its state. */
  secrets: Map<string, { project: ProjectName; state: 'active' | 'revoked' | 'expired' | 'disabled-project' | 'disabled-consumer' }>;
  /** Ids of other projects that bodies may carry (echo is allowed for these alone). */
  bait: Record<'A' | 'B', string[]>;
  ids: {
    keys: string[]; apps: string[]; events: string[]; others: string[];
  };
}

let service: TestService;
let world: World;
let agent: https.Agent;

const tmp = tempDir('pms-fuzz-');
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('0000000dIHDR-fuzz-logo', 'latin1')]);

const VALID_APP = {
  name: 'Summariser',
  description: 'Summarises a topic.',
  data: [{ type: 'input', name: 'topic', placeholder: 'A topic', required: true }],
  instruction: [{ type: 'system', instruction: 'Summarise the topic in one line.' }],
};

async function makeApp(key: string, overrides: Record<string, unknown> = {}): Promise<string> {
  const reply = await service.request('POST', '/v1/app/create', { key, body: { ...VALID_APP, ...overrides } });
  return assertSuccess(reply, 200, 'fixture app').id as string;
}

async function giveLogo(appId: string): Promise<string> {
  const file = path.join(tmp, `${appId}.png`);
  writeFileSync(file, PNG);
  const made = await setLogo(service.services, { origin: 'workspace', ip: '127.0.0.1' }, appId, file);
  return made.file.id;
}

async function buildWorld(): Promise<World> {
  const actor = { origin: 'workspace' as const, ip: '127.0.0.1' };
  const A = await service.createProject('Project A');
  const B = await service.createProject('Project B');
  const C = await service.createProject('Project C (disabled)');
  const D = await service.createProject('Project D (consumer disabled)');
  const secrets: World['secrets'] = new Map([
    [A.key, { project: 'A', state: 'active' }], [B.key, { project: 'B', state: 'active' }],
    [C.key, { project: 'C', state: 'disabled-project' }], [D.key, { project: 'D', state: 'disabled-consumer' }],
  ]);
  const callers: Record<string, Caller> = {
    'A *': { label: 'A *', project: 'A', authorization: `Bearer ${A.key}` },
    'B *': { label: 'B *', project: 'B', authorization: `Bearer ${B.key}` },
    'C disabled project': { label: 'C disabled project', project: 'C', authorization: `Bearer ${C.key}` },
    'D disabled consumer': { label: 'D disabled consumer', project: 'D', authorization: `Bearer ${D.key}` },
  };
  const protectedKeys: Record<'A' | 'B', string[]> = { A: [A.keyId], B: [B.keyId] };

  const scoped: Array<['A' | 'B', string[]]> = [
    ['A', ['key:read']], ['A', ['key:write']], ['A', ['key:*']], ['A', ['app:read']], ['A', ['app:write']],
    ['A', ['app:*', 'event:read']], ['A', ['event:read']], ['A', ['run:*', 'file:read']], ['A', ['usage:read', 'catalog:*']],
    ['B', ['key:read']], ['B', ['app:*']], ['B', ['key:*', 'event:read']],
  ];
  for (const [p, scope] of scoped) {
    const made = await createKey(service, p === 'A' ? A.key : B.key, { name: `fixture ${scope.join(' ')}`, scope });
    const label = `${p} ${scope.join(',')}`;
    callers[label] = { label, project: p, authorization: `Bearer ${made.key}` };
    secrets.set(made.key, { project: p, state: 'active' });
    protectedKeys[p].push(made.id);
  }
  const deletableKeys: Record<'A' | 'B', string[]> = { A: [], B: [] };
  for (const p of ['A', 'B'] as const) {
    for (let i = 0; i < (p === 'A' ? 4 : 2); i++) {
      const made = await createKey(service, p === 'A' ? A.key : B.key, { name: `sacrificial ${i}`, scope: ['key:read'] });
      secrets.set(made.key, { project: p, state: 'active' });
      deletableKeys[p].push(made.id);
    }
    const revoked = await createKey(service, p === 'A' ? A.key : B.key, { name: 'revoked', scope: ['*'] });
    assertSuccess(await service.request('DELETE', `/v1/key/${revoked.id}`, { key: p === 'A' ? A.key : B.key }), 200, 'revoke fixture');
    secrets.set(revoked.key, { project: p, state: 'revoked' });
    callers[`${p} revoked`] = { label: `${p} revoked`, project: p, authorization: `Bearer ${revoked.key}` };
    protectedKeys[p].push(revoked.id);
  }
  const expired = await createKey(service, A.key, { name: 'expired', scope: ['*'], expires_at: nowSeconds() + 3600 });
  await service.db.query("UPDATE api_keys SET expires_at = now() - interval '1 hour' WHERE id = $1", [expired.id]);
  secrets.set(expired.key, { project: 'A', state: 'expired' });
  callers['A expired'] = { label: 'A expired', project: 'A', authorization: `Bearer ${expired.key}` };
  protectedKeys.A.push(expired.id);

  // Apps: B's public activated app with an image logo; private, draft, deleted ones on both sides.
  const bPublicApp = await makeApp(B.key, { name: 'B public', category: 'summarization' });
  const bPublicLogo = await giveLogo(bPublicApp);
  assertSuccess(await service.request('PATCH', `/v1/app/detail/${bPublicApp}`, { key: B.key, body: { type: 'public' } }), 200, 'publish B app');
  const bPrivateWithLogo = await makeApp(B.key, { name: 'B private with logo' });
  await giveLogo(bPrivateWithLogo);
  const protectedApps: Record<'A' | 'B', string[]> = {
    A: [await makeApp(A.key, { name: 'A private' }), await makeApp(A.key, { name: 'A draft', status: 'draft' }),
      await makeApp(A.key, { name: 'A vision', category: 'vision', data: [{ type: 'image', name: 'photo', required: true }] })],
    B: [bPublicApp, bPrivateWithLogo, await makeApp(B.key, { name: 'B private' }), await makeApp(B.key, { name: 'B draft', status: 'draft' })],
  };
  const aPatchableWithLogo = await makeApp(A.key, { name: 'A patchable (logo)' });
  await giveLogo(aPatchableWithLogo);
  const patchable: Record<'A' | 'B', string[]> = {
    A: [aPatchableWithLogo, await makeApp(A.key, { name: 'A patchable' }), await makeApp(A.key, { name: 'A patchable draft', status: 'draft' })],
    B: [await makeApp(B.key, { name: 'B patchable' })],
  };
  const deletableApps: Record<'A' | 'B', string[]> = {
    A: [await makeApp(A.key, { name: 'A deletable 1' }), await makeApp(A.key, { name: 'A deletable 2' }), await makeApp(A.key, { name: 'A deletable 3' })],
    B: [await makeApp(B.key, { name: 'B deletable' })],
  };
  for (const p of ['A', 'B'] as const) {
    const gone = await makeApp(p === 'A' ? A.key : B.key, { name: `${p} deleted` });
    assertSuccess(await service.request('DELETE', `/v1/app/detail/${gone}`, { key: p === 'A' ? A.key : B.key }), 200, 'delete fixture');
    protectedApps[p].push(gone);
  }

  await disableProject(service.services, actor, C.projectId);
  await disableConsumer(service.services, actor, D.consumerId);
  await service.waitForJobsDrained(30_000);

  const owner = await ownersFromDatabase();
  // A's patchable app with an image logo may be published by the fuzz at any moment.
  const { rows: mayBePublic } = await service.db.query<{ id: string }>(
    `SELECT id FROM apps WHERE id = $1 UNION ALL SELECT logo_file_id FROM apps WHERE id = $1
     UNION ALL SELECT id FROM app_data_fields WHERE app_id = $1`, [aPatchableWithLogo]);
  mayBePublicIds.push(...mayBePublic.map((r) => r.id));
  const publicIds = await publicIdsFromDatabase();
  assert.ok(publicIds.has(bPublicApp) && publicIds.has(bPublicLogo), 'B public app is public and activated with its logo');

  callers.none = { label: 'none', project: null };
  const all = [...owner.keys()];
  const byPrefix = (prefix: string) => all.filter((id) => id.startsWith(prefix));
  const bait = {
    // Ids of the other project that bodies may carry: one key, one private app. All others appear
    // only in paths and queries, where nothing is echoed but the stream's unknown event type (an
    // id sent there is taken as sent: prepare), so their check stays strict.
    A: [protectedKeys.B[1]!, protectedApps.B[2]!],
    B: [protectedKeys.A[1]!, protectedApps.A[0]!],
  };
  return {
    A, B, callers, owner, publicIds, bPublicApp,
    deletable: { keys: deletableKeys, apps: deletableApps },
    patchable,
    secrets,
    bait,
    ids: {
      keys: byPrefix('papi_'), apps: byPrefix('mapp_'), events: byPrefix('evnt_'),
      others: all.filter((id) => !/^(papi|mapp|evnt)_/.test(id)),
    },
  };
}

/** Every record that belongs to a project, by id. */
async function ownersFromDatabase(): Promise<Map<string, string>> {
  const { rows } = await service.db.query<{ id: string; project_id: string }>(`
    SELECT id, project_id FROM api_keys
    UNION ALL SELECT id, project_id FROM apps
    UNION ALL SELECT id, project_id FROM events
    UNION ALL SELECT id, project_id FROM files
    UNION ALL SELECT f.id, a.project_id FROM app_data_fields f JOIN apps a ON a.id = f.app_id
    UNION ALL SELECT i.id, a.project_id FROM app_instructions i JOIN apps a ON a.id = i.app_id
    UNION ALL SELECT id, project_id FROM runs
    UNION ALL SELECT id, id FROM projects
    UNION ALL SELECT consumer_id, project_id FROM memberships`);
  const { rows: projects } = await service.db.query<{ id: string; name: string }>('SELECT id, name FROM projects');
  const label = new Map(projects.map((p) => [p.id, /^Project ([A-D])/.exec(p.name)?.[1] ?? p.id]));
  return new Map(rows.map((r) => [r.id, label.get(r.project_id) ?? r.project_id]));
}

/** What any project may read of another: activated public apps, their logo file and their data fields. */
const mayBePublicIds: string[] = [];

async function publicIdsFromDatabase(): Promise<Set<string>> {
  const { rows } = await service.db.query<{ id: string }>(`
    SELECT a.id FROM apps a WHERE a.type = 'public' AND a.status = 'activated' AND a.deleted_at IS NULL
    UNION ALL SELECT a.logo_file_id FROM apps a
      WHERE a.type = 'public' AND a.status = 'activated' AND a.deleted_at IS NULL AND a.logo_file_id IS NOT NULL
    UNION ALL SELECT f.id FROM app_data_fields f JOIN apps a ON a.id = f.app_id
      WHERE a.type = 'public' AND a.status = 'activated' AND a.deleted_at IS NULL`);
  return new Set([...rows.map((r) => r.id), ...mayBePublicIds]);
}

// ---------------------------------------------------------------------------------------------
// Requests on the wire, exactly as generated: no URL normalisation, raw paths, raw bodies.

interface Spec {
  kind: string;
  caller: string;
  method: string;
  path: string;
  /** Extra headers (content-type and the like). */
  headers?: Record<string, string>;
  /** The body: text as UTF-8, or bytes as hex (`hex:` prefix). */
  body?: string;
  /** Send the body chunked (no Content-Length). */
  chunked?: boolean;
  /** An Authorization header replacing the caller's (auth property). */
  authorization?: string | string[] | null;
  /** Picks a stand-in when the path names a record the fuzz must not destroy. */
  alt?: number;
}

interface Sent {
  spec: Spec;
  caller: Caller;
  /** The project of the key actually sent (the auth property sends its own header). */
  project: string | null;
  method: string;
  path: string;
  body: Buffer | undefined;
  authorization: string | string[] | undefined;
}

const stats = {
  requests: 0,
  statuses: new Map<number, number>(),
  violations: 0,
  /** Requests fast-check made while shrinking a failure (part of `requests`). */
  shrinkRequests: 0,
  byKind: new Map<string, number>(),
  created: { keys: 0, apps: 0 },
  /** 200s of GET /v1/event/stream. */
  streamsOpened: 0,
};
/** Secrets issued by POST /v1/key during the fuzz (never to be seen again). */
const issued = new Set<string>();
/** Secret-shaped strings the fuzz itself put in bodies (an echo of them is no leak). */
const sentSecretShaped = new Set<string>();
/** Every Authorization value sent, for the log check. */
const sentAuthorization = new Set<string>();
/** Ids of other projects carried in bodies, per caller project (an echo of them is no leak). */
const bodyTaint: Record<string, Set<string>> = { A: new Set(), B: new Set(), C: new Set(), D: new Set() };
/** Ids seen in responses, per caller project, for the check against the final database. */
const seenIds: Record<string, Map<string, string>> = { A: new Map(), B: new Map(), C: new Map(), D: new Map() };

function bodyBuffer(body: string | undefined): Buffer | undefined {
  if (body === undefined) return undefined;
  return body.startsWith('hex:') ? Buffer.from(body.slice(4), 'hex') : Buffer.from(body, 'utf8');
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text.replace(/%([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
  }
}

/**
 * A destructive request (DELETE, PATCH) by a key of A or B on a record of its own project that the
 * fixture keeps is pointed at a sacrificial record of the same kind instead. The router decodes
 * percent-encoding, so the decoded path is what decides; an encoded id is replaced by the plain path.
 */
function spare(spec: Spec, caller: Caller): string {
  const project = caller.project;
  if ((project !== 'A' && project !== 'B') || (spec.method !== 'DELETE' && spec.method !== 'PATCH')) return spec.path;
  const alt = spec.alt ?? 0;
  const standIn = (id: string): string | undefined => {
    if (world.owner.get(id) !== project) return undefined;
    if (id.startsWith('papi_') && !world.deletable.keys[project].includes(id)) {
      return world.deletable.keys[project][alt % world.deletable.keys[project].length]!;
    }
    if (id.startsWith('mapp_') && !world.deletable.apps[project].includes(id)) {
      if (spec.method === 'PATCH' && world.patchable[project].includes(id)) return undefined;
      const pool = spec.method === 'PATCH' ? world.patchable[project] : world.deletable.apps[project];
      return pool[alt % pool.length]!;
    }
    return undefined;
  };
  const plain = spec.path.replace(OWNED_ID, (id) => standIn(id) ?? id);
  for (const id of decoded(plain).match(OWNED_ID) ?? []) {
    const replacement = standIn(id);
    if (replacement) return replacement.startsWith('papi_') ? `/v1/key/${replacement}` : `/v1/app/detail/${replacement}`;
  }
  return plain;
}

function prepare(spec: Spec): Sent {
  const caller = world.callers[spec.caller]!;
  const authorization = spec.authorization === undefined ? caller.authorization : spec.authorization ?? undefined;
  const body = bodyBuffer(spec.body);
  const first = (Array.isArray(authorization) ? authorization[0] : authorization)?.replace(/^[ \t]+|[ \t]+$/g, '');
  const project = spec.authorization === undefined ? caller.project
    : first?.startsWith('Bearer ') ? world.secrets.get(first.slice('Bearer '.length))?.project ?? null : null;
  const sent: Sent = { spec, caller, project, method: spec.method, path: spare(spec, caller), body, authorization };
  if (body) {
    const text = body.toString('utf8');
    for (const m of text.match(SECRET_IN_TEXT) ?? []) sentSecretShaped.add(m.slice(0, SECRET_LENGTH)), sentSecretShaped.add(m);
    if (project) for (const id of text.match(OWNED_ID) ?? []) bodyTaint[project]!.add(id);
  }
  // The stream's 422 names the event type asked for, whatever it is: an id sent there comes back.
  if (project && spec.kind === 'streams') for (const id of decoded(spec.path).match(OWNED_ID) ?? []) bodyTaint[project]!.add(id);
  for (const value of [authorization ?? []].flat()) sentAuthorization.add(value);
  return sent;
}

function transmit(sent: Sent, retry = true): Promise<Reply> {
  const headers: Record<string, string | string[]> = { ...sent.spec.headers };
  if (sent.authorization !== undefined) headers.authorization = sent.authorization;
  if (sent.body !== undefined) {
    headers['content-type'] ??= 'application/json';
    if (!sent.spec.chunked) headers['content-length'] = String(sent.body.length);
  }
  return new Promise<Reply>((resolve, reject) => {
    let answered = false;
    const req = https.request({
      host: '127.0.0.1', port: Number(new URL(service.baseUrl).port), method: sent.method, path: sent.path,
      headers, agent, servername: 'localhost',
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`));
    }, REQUEST_TIMEOUT_MS);
    req.on('response', (res) => {
      answered = true;
      if (res.statusCode === 200 && String(res.headers['content-type']).startsWith('text/event-stream')) {
        // A stream never ends by itself: its head is the answer (the service has begun its
        // catching-up read already, whose failures the after-fuzz check finds in the log).
        clearTimeout(timer);
        res.destroy();
        stats.streamsOpened++;
        resolve({ status: 200, headers: res.headers, text: '', body: undefined });
        return;
      }
      readReply(res).then((reply) => { clearTimeout(timer); resolve(reply); }, (err) => { clearTimeout(timer); reject(err); });
    });
    req.on('error', (err: Error & { code?: string }) => {
      if (answered) return;
      clearTimeout(timer);
      // A kept-alive socket the server closed between two requests: send again on a fresh one.
      if (retry && req.reusedSocket && err.code === 'ECONNRESET') {
        transmit(sent, false).then(resolve, reject);
        return;
      }
      reject(new Error(`connection failed before an answer: ${err.code ?? err.message}`));
    });
    if (sent.body !== undefined && sent.spec.chunked) {
      // Several chunks, so a chunked body crosses the limit while streaming.
      for (let i = 0; i < sent.body.length; i += 65_536) req.write(sent.body.subarray(i, i + 65_536));
      req.end();
    } else {
      req.end(sent.body);
    }
  });
}

function describe(sent: Sent, reply?: Reply): string {
  const body = sent.body === undefined ? '' : ` body(${sent.body.length} B)=${JSON.stringify(sent.body.toString('utf8').slice(0, 300))}`;
  const auth = sent.authorization === undefined ? 'no Authorization' : `Authorization=${JSON.stringify(sent.authorization).slice(0, 120)}`;
  const answer = reply ? ` → ${reply.status} ${reply.text.slice(0, 600)}` : '';
  return `${sent.method} ${sent.path.slice(0, 300)} as [${sent.caller.label}] ${auth}${body}${answer}`;
}

// ---------------------------------------------------------------------------------------------
// The properties of every response.

function violations(sent: Sent, reply: Reply): string[] {
  const problems: string[] = [];
  const { status } = reply;
  if (status === 500 || status === 503 || status >= 502) problems.push(`a ${status} (server fault)`);
  if (TITLES[status] === undefined) problems.push(`status ${status} is not one the contract uses`);
  if (reply.headers['x-request-id'] === undefined) problems.push('no X-Request-Id header');
  if (sent.method === 'HEAD') return problems;
  if (String(reply.headers['content-type']).startsWith('text/event-stream')) {
    if (sent.method !== 'GET' || decoded(routeOf(sent.path)) !== '/v1/event/stream') problems.push('an event stream from something other than GET /v1/event/stream');
    if (status !== 200) problems.push(`an event stream with status ${status}`);
    return problems;
  }

  const body = reply.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    problems.push('the body is not a JSON object (no envelope)');
    return problems;
  }
  const members = Object.keys(body);
  if (members.join(',') !== 'code,title,response') problems.push(`envelope members are [${members.join(', ')}], not [code, title, response]`);
  const gateway404 = body.code === '404';
  if (gateway404) {
    if (status !== 404) problems.push(`code "404" on a ${status}`);
    if (body.response !== GATEWAY_NOT_FOUND) problems.push('code "404" without the gateway message');
  } else if (body.code !== status) {
    problems.push(`code ${JSON.stringify(body.code)} differs from the status ${status}`);
  }
  if (body.response === GATEWAY_NOT_FOUND && !gateway404) problems.push('the gateway message with a numeric code');
  if (body.title !== TITLES[status]) problems.push(`title ${JSON.stringify(body.title)} is not ${JSON.stringify(TITLES[status])}`);
  if (status >= 300) {
    if (typeof body.response !== 'string') {
      problems.push('a failure whose response is not a string');
    } else if (!CONTRACT_FAILURES.some(([s, m]) => s === status && (typeof m === 'string' ? m === body.response : m.test(body.response)))) {
      problems.push(`message ${JSON.stringify(body.response.slice(0, 200))} is not one the contract gives a ${status}`);
    }
  } else if (typeof body.response !== 'object' || body.response === null) {
    problems.push('a success whose response is not an object or array');
  }
  if (status === 201 && !(sent.method === 'POST' && routeOf(sent.path) === '/v1/key')) problems.push('a 201 from something other than POST /v1/key');

  problems.push(...secretProblems(sent, reply));
  problems.push(...isolationProblems(sent, reply));
  return problems;
}

/**
 * The endpoint a request target names: query and fragment removed, percent-encoded dots decoded
 * and dot segments resolved (RFC 3986 5.2.4: `/%2e%2e/v1/key` is `/v1/key`).
 */
function routeOf(rawPath: string): string {
  const target = rawPath.split(/[?#]/)[0]!.replace(/%2e/gi, '.');
  try {
    return new URL(target, 'https://host').pathname;
  } catch {
    return target;
  }
}

const knownSecretList = () => [...world.secrets.keys()];
const hashHex = new Map<string, string>();
function noteHash(secret: string): void {
  hashHex.set(sha256(secret).toString('hex'), secret.slice(0, 16));
}

function secretProblems(sent: Sent, reply: Reply): string[] {
  const problems: string[] = [];
  const text = reply.text;
  for (const secret of knownSecretList()) {
    if (text.includes(secret)) problems.push(`holds the secret of fixture key ${secret.slice(0, 16)}…`);
  }
  const creation = reply.status === 201 && sent.method === 'POST' && routeOf(sent.path) === '/v1/key';
  const newSecret: unknown = creation ? reply.body?.response?.key : undefined;
  if (creation) {
    if (typeof newSecret !== 'string' || !/^sk-project-[0-9A-Za-z]{43,}$/.test(newSecret)) problems.push('a 201 of POST /v1/key without a well-formed key');
  }
  for (const match of text.match(SECRET_IN_TEXT) ?? []) {
    const head = match.slice(0, SECRET_LENGTH);
    if (world.secrets.has(head)) continue; // reported above
    if (issued.has(head) || issued.has(match)) {
      problems.push(`holds the secret of a key issued earlier (${head.slice(0, 16)}…)`);
    } else if (match === newSecret) {
      continue;
    } else if (!sentSecretShaped.has(match) && !sentSecretShaped.has(head)) {
      problems.push(`holds a secret-shaped string nobody sent and no creation issued (${head.slice(0, 16)}…)`);
    }
  }
  if (creation && typeof newSecret === 'string') {
    // Several copies of the new secret in its own answer are fine; its hash is not.
    if (issued.has(newSecret)) problems.push('POST /v1/key issued a secret issued before');
    issued.add(newSecret);
    noteHash(newSecret);
    stats.created.keys++;
  }
  for (const hex of text.match(HEX64) ?? []) {
    if (hashHex.has(hex)) problems.push(`holds the SHA-256 (hex) of a secret (${hashHex.get(hex)}…)`);
  }
  return problems;
}

function isolationProblems(sent: Sent, reply: Reply): string[] {
  const project = sent.project;
  if (!project) return [];
  const problems: string[] = [];
  const seen = seenIds[project]!;
  for (const id of new Set(reply.text.match(OWNED_ID) ?? [])) {
    if (!seen.has(id)) seen.set(id, describe(sent, reply));
    const owner = world.owner.get(id);
    if (owner === undefined || owner === project || world.publicIds.has(id) || bodyTaint[project]!.has(id)) continue;
    problems.push(`a response to a key of project ${project} holds ${id} of project ${owner}`);
  }
  if (reply.status === 200 && sent.method === 'POST' && routeOf(sent.path) === '/v1/app/create') stats.created.apps++;
  return problems;
}

/** A property violation; `signature` groups violations of one cause (one counterexample each). */
class Violation extends Error {
  signature: string;
  constructor(signature: string, message: string) {
    super(message);
    this.signature = signature;
  }
}

/** Signatures already shrunk to a counterexample: later hits are counted, not shrunk again. */
const known = new Map<string, number>();

/** The first path segments that name the endpoint family, for grouping. */
function family(rawPath: string): string {
  const segments = decoded(routeOf(rawPath)).split('/').filter(Boolean);
  return `/${segments.slice(0, segments[0] === 'v1' ? 2 : 1).join('/')}`;
}

/** What the service logged for a request id (a 500 logs its fault): the error's message and top frame. */
async function loggedFault(requestId: string | string[] | undefined): Promise<string | undefined> {
  if (typeof requestId !== 'string') return undefined;
  for (let attempt = 0; attempt < 10; attempt++) {
    const line = service.logText().split('\n').find((l) => l.includes(requestId) && l.includes('"err"'));
    if (line) {
      const entry = JSON.parse(line) as { msg?: string; op?: string; err?: { message?: string; stack?: string } };
      const frames = (entry.err?.stack ?? '').split('\n').map((f) => f.trim()).filter((f) => f.startsWith('at '));
      const ours = frames.filter((f) => /\/(domain|gateway|lib|workers)\//.test(f) && !f.includes('node_modules')).slice(0, 2);
      return `${entry.msg}${entry.op ? ` (${entry.op})` : ''}: ${entry.err?.message} ${frames[0] ?? ''}${ours.length ? ` via ${ours.join(' ← ')}` : ''}`;
    }
    await sleep(50);
  }
  return undefined;
}

async function exchange(spec: Spec, shrinking: boolean): Promise<void> {
  const sent = prepare(spec);
  if (shrinking) stats.shrinkRequests++;
  let reply: Reply;
  try {
    reply = await transmit(sent);
  } catch (err) {
    stats.requests++;
    stats.byKind.set(spec.kind, (stats.byKind.get(spec.kind) ?? 0) + 1);
    stats.violations++;
    const message = (err as Error).message;
    const signature = `no answer: ${message.replace(/\d+/g, 'N')} ${sent.method} ${family(sent.path)}`;
    if (known.has(signature)) return void known.set(signature, known.get(signature)! + 1);
    throw new Violation(signature, `${message}: ${describe(sent)}`);
  }
  stats.requests++;
  stats.statuses.set(reply.status, (stats.statuses.get(reply.status) ?? 0) + 1);
  stats.byKind.set(spec.kind, (stats.byKind.get(spec.kind) ?? 0) + 1);
  const problems = violations(sent, reply);
  const expected = expectation(sent);
  if (expected && !(reply.status === expected.status && reply.body?.response === expected.message && reply.body?.code === expected.status)) {
    problems.push(`expected ${expected.status} ${JSON.stringify(expected.message)}`);
  }
  if (problems.length === 0) return;
  stats.violations++;
  const fault = reply.status >= 500 ? await loggedFault(reply.headers['x-request-id']) : undefined;
  const shape = problems.map((p) => p.replace(/"[^"]*"/g, '"…"').replace(OWNED_ID, '<id>').replace(/\d+/g, 'N')).join('; ');
  const signature = fault
    ? `${reply.status} ${fault.replace(/\d+/g, 'N').replace(/\(?file:\/\/[^ )]*\)?|\/[^ ]*:N:N/g, '')}`
    : `${reply.status} ${shape} ${sent.method} ${family(sent.path)}`;
  if (known.has(signature)) return void known.set(signature, known.get(signature)! + 1);
  throw new Violation(signature, `${problems.join('; ')}${fault ? `\n    service log: ${fault}` : ''}\n    request: ${describe(sent, reply)}`);
}

/** The exact answer the contract fixes for an Authorization header, when it fixes one (step 4). */
function expectation(sent: Sent): { status: number; message: string } | undefined {
  if (sent.spec.kind !== 'authorization') return undefined;
  const raw = sent.authorization;
  // Node keeps the first of repeated Authorization headers; HTTP strips optional whitespace.
  const value = (Array.isArray(raw) ? raw[0] : raw)?.replace(/^[ \t]+|[ \t]+$/g, '');
  // Past Node's 16 KiB of headers the request never parses: 431 (decisions.md, "Operations").
  const headerBytes = [raw ?? []].flat().reduce((n, v) => n + Buffer.byteLength(v) + 20, 0);
  if (headerBytes > 16_500) return { status: 431, message: HEADERS_TOO_LARGE };
  if (headerBytes > 15_500) return undefined;
  if (value === undefined || !value.startsWith('Bearer ')) return { status: 401, message: NO_KEY };
  const found = world.secrets.get(value.slice('Bearer '.length));
  if (!found || found.state === 'revoked' || found.state === 'disabled-project' || found.state === 'disabled-consumer') return { status: 403, message: REFUSED };
  if (found.state === 'expired') return { status: 401, message: EXPIRED };
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Generators.

function arbitraries(w: World) {
  const hex = (n: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: n, maxLength: n });
  const base62 = (min: number, max: number) => fc.string({ unit: fc.constantFrom(...BASE62), minLength: min, maxLength: max });
  const randomId = fc.tuple(fc.constantFrom(...ANY_PREFIX), hex(20)).map(([p, h]) => `${p}_${h}`);
  const realId = fc.constantFrom(...w.owner.keys());
  const ownId = (p: 'A' | 'B') => fc.constantFrom(...[...w.owner].filter(([, o]) => o === p).map(([id]) => id));
  const secretShaped = base62(43, 50).map((s) => `sk-project-${s}`);

  const SPECIAL_STRINGS = ['', ' ', '\t', '\n', '\r\n', '\u0000', 'a\u0000b', 'NaN', '-NaN', 'Infinity', '-Infinity', '-0', '0',
    '1e308', '1e400', 'null', 'undefined', 'true', 'false', '[]', '{}', '__proto__', 'constructor', 'prototype', 'toString',
    '*', 'key:*', 'app:read', '*:*', 'key:read:x', 'key:', ':read', 'KEY:READ', 'key:read ', ' key:read', 'reasoning:*',
    'usage:write', 'public', 'private', 'draft', 'activated', 'PUBLIC', 'system', 'SYSTEM', 'input', 'image', 'text area',
    "'; DROP TABLE api_keys; --", '%s%s%s%n', '${7*7}', '{{7*7}}', '<script>alert(1)</script>', '../../etc/passwd',
    '\u202e', '\ufeff', '\ud800', '\udfff', 'x\ud83d', 'é', 'e\u0301', '𝕏', '👩‍👩‍👧‍👦', 'İ', 'ß', '\u2028', '\\', '"', "'",
    'sk-project-', 'Bearer x', '%00', '%zz', ...CATEGORIES, ...DATA_TYPES];
  const RAW_NUMBERS = ['1e308', '-1e308', '-0', '-0.0', '1e400', '-1e400', '0.0', '1E2', '1e-400', '9007199254740993',
    '123456789012345678901234567890', '-9223372036854775809', '0e0', '1.5', '-1', '2.5e-324', '253402300799', '253402300800',
    '1.0', '4102444800.5'];
  const stringLeaf = fc.oneof(
    { weight: 3, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
    { weight: 1, arbitrary: fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 3 }) },
    { weight: 3, arbitrary: fc.constantFrom(...SPECIAL_STRINGS) },
    { weight: 1, arbitrary: secretShaped },
    { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 190, max: 2010 }), fc.constantFrom('n', 'é', '😀', 'e\u0301', ' ')).map(([n, c]) => c.repeat(n)) },
    { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 2000, max: 210_000 }), fc.constantFrom('x', 'é', '\u0000', '"')).map(([n, c]) => c.repeat(Math.floor(n / Buffer.byteLength(c)))) },
  );
  const leaf = fc.oneof(
    { weight: 6, arbitrary: stringLeaf },
    { weight: 2, arbitrary: fc.integer() },
    { weight: 1, arbitrary: fc.double() },
    { weight: 1, arbitrary: fc.constantFrom(...RAW_NUMBERS).map((t) => new Raw(t)) },
    { weight: 1, arbitrary: fc.boolean() },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.oneof(randomId, fc.constantFrom(...w.bait.A, ...w.bait.B)) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 60_000 }).map((n) => new Raw(`${'['.repeat(n)}${']'.repeat(n)}`)) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 30_000 }).map((n) => new Raw(`${'{"a":'.repeat(n)}1${'}'.repeat(n)}`)) },
  );
  const pollutingKey = fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty',
    '__defineGetter__', 'isPrototypeOf', '', ' name', 'NAME', 'name\u0000');
  const key = fc.oneof(pollutingKey, fc.string({ unit: 'grapheme', maxLength: 12 }),
    fc.constantFrom('name', 'scope', 'expires_at', 'description', 'data', 'instruction', 'type', 'status', 'category', 'key', 'id', 'project_id'));
  const { value } = fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof({ depthSize: 'small', withCrossShrink: true },
      leaf,
      fc.array(tie('value'), { maxLength: 4 }),
      fc.array(fc.tuple(key, tie('value')), { maxLength: 4 }).map((entries) => new Obj(entries)),
    ),
  }));
  const hostile = value;
  /** Mostly a plausible value, sometimes anything. */
  const field = <T>(plausible: fc.Arbitrary<T>) => fc.oneof({ weight: 3, arbitrary: plausible as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: hostile });
  /** A JSON object made of these members (each may be absent), plus polluting or duplicate members. */
  const object = (members: Record<string, fc.Arbitrary<unknown>>) => fc.tuple(
    fc.record(members, { requiredKeys: [] }),
    fc.array(fc.tuple(fc.oneof(pollutingKey, fc.constantFrom(...Object.keys(members))), hostile), { maxLength: 2 }),
    fc.boolean(),
  ).map(([record, extra, extraFirst]) => {
    const entries = Object.entries(record);
    return json(new Obj(extraFirst ? [...extra, ...entries] : [...entries, ...extra]));
  });

  const name = fc.oneof(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }), fc.constantFrom('ci reader', 'x'),
    fc.tuple(fc.integer({ min: 195, max: 205 }), fc.constantFrom('n', '😀', 'é')).map(([n, c]) => c.repeat(n)));
  const description = fc.oneof(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 }),
    fc.integer({ min: 1995, max: 2005 }).map((n) => 'd'.repeat(n)));
  const scopeList = fc.array(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...KNOWN_SCOPES) as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: hostile }), { maxLength: 5 });
  const expiry = fc.oneof(fc.constant(0), fc.constant(null), fc.integer({ min: -100_000, max: 10_000_000 }).map((d) => nowSeconds() + d),
    fc.constantFrom(253_402_300_799, 253_402_300_800, 1, -1), fc.integer({ min: 60, max: 100_000 }).map((d) => `${nowSeconds() + d}`),
    fc.double({ min: nowSeconds() + 60, max: nowSeconds() + 1e6 }));
  const keyBody = object({ name: field(name), scope: field(scopeList), expires_at: field(expiry) });
  const dataEntry = fc.oneof({ weight: 4, arbitrary: object({
    type: field(fc.constantFrom(...DATA_TYPES)), name: field(fc.constantFrom('topic', 'text', 'photo', 'Topic', 'topic ')),
    placeholder: field(fc.string({ maxLength: 20 })), required: field(fc.boolean()),
  }).map((text) => new Raw(text)) as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: hostile });
  const instructionEntry = fc.oneof({ weight: 4, arbitrary: object({
    type: field(fc.constant('system')), instruction: field(fc.string({ minLength: 1, maxLength: 30 })),
    prompt: field(fc.string({ minLength: 1, maxLength: 30 })),
  }).map((text) => new Raw(text)) as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: hostile });
  const appBody = object({
    name: field(name), description: field(description),
    category: field(fc.constantFrom(...CATEGORIES)), task_type: field(fc.constantFrom(...CATEGORIES)), model_task_type: field(fc.constantFrom(...CATEGORIES)),
    data: field(fc.array(dataEntry, { maxLength: 4 })), instruction: field(fc.array(instructionEntry, { maxLength: 3 })),
    status: field(fc.constantFrom('draft', 'activated')), type: field(fc.constantFrom('private', 'public')),
  });
  const editBody = object({ name: field(name), description: field(description), type: field(fc.constantFrom('private', 'public')) });
  // Near-valid bodies: every member present and valid but now and then one hostile value, so that
  // creation succeeds often and the hostile value meets the deeper code (storage, events).
  const nearly = (valid: fc.Arbitrary<unknown>) => fc.oneof({ weight: 14, arbitrary: valid }, { weight: 1, arbitrary: hostile });
  // Text a JSON parser accepts but storage may not: NUL, lone surrogates, controls, bidi marks.
  const nastyText = fc.oneof(
    fc.constantFrom('\u0000', 'a\u0000b', '\ud800', 'x\udfff', '\udfff\ud800', '\u202e', '\ufeff', '\u0001\u001f', '\u2028\u2029', '👩‍👩‍👧‍👦', 'e\u0301'),
    fc.tuple(fc.string({ unit: 'grapheme', maxLength: 6 }), fc.integer({ min: 0xd800, max: 0xdfff }), fc.string({ unit: 'grapheme', maxLength: 6 }))
      .map(([a, c, b]) => `${a}${String.fromCharCode(c)}${b}`),
  );
  const cleanText = fc.oneof(
    { weight: 10, arbitrary: fc.oneof(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }), fc.constantFrom('Summariser', 'ci reader', 'x')) },
    { weight: 1, arbitrary: nastyText },
  );
  const keyNearValid = fc.record({
    name: nearly(cleanText),
    scope: nearly(fc.subarray(KNOWN_SCOPES, { minLength: 1, maxLength: 3 })),
    expires_at: nearly(fc.oneof(fc.constant(0), fc.constant(null), fc.integer({ min: 3600, max: 10_000_000 }).map((d) => nowSeconds() + d))),
  }).map((body) => json(body));
  const appNearValid = fc.record({
    name: nearly(cleanText),
    description: nearly(cleanText),
    category: nearly(fc.constantFrom(...CATEGORIES)),
    data: nearly(fc.array(fc.record({
      type: nearly(fc.constantFrom(...DATA_TYPES)),
      placeholder: nearly(fc.string({ maxLength: 20 })),
      required: nearly(fc.boolean()),
    }), { minLength: 1, maxLength: 3 }).map((fields) => fields.map((f, i) => ({ ...f, name: `field${i}`, ...(i === 0 ? { required: true } : {}) })))),
    instruction: nearly(fc.array(fc.record({ type: nearly(fc.constant('system')), instruction: nearly(cleanText) }), { minLength: 1, maxLength: 2 })),
    status: nearly(fc.constantFrom('draft', 'activated')),
    type: nearly(fc.constantFrom('private', 'public')),
  }).map((body) => json(body));
  const anyBody = fc.oneof(hostile.map(json), keyBody, editBody);

  const validCaller = fc.oneof(
    { weight: 8, arbitrary: fc.constant('A *') },
    { weight: 4, arbitrary: fc.constantFrom(...Object.keys(w.callers).filter((c) => /^A [a-z*]+:/.test(c))) },
    { weight: 3, arbitrary: fc.constant('B *') },
    { weight: 1, arbitrary: fc.constantFrom(...Object.keys(w.callers).filter((c) => /^B [a-z*]+:/.test(c))) },
  );
  const anyCaller = fc.oneof({ weight: 9, arbitrary: validCaller }, { weight: 1, arbitrary: fc.constantFrom(...Object.keys(w.callers)) });
  const alt = fc.nat({ max: 1000 });

  // Identifiers in path position.
  const appIdOf = (p: 'A' | 'B') => fc.constantFrom(...[...w.owner].filter(([id, o]) => o === p && id.startsWith('mapp_')).map(([id]) => id));
  const mutatedId = fc.tuple(realId, fc.nat(), fc.constantFrom('upper', 'truncate', 'extend', 'swap-prefix', 'flip', 'encode', 'space', 'suffix'))
    .map(([id, n, how]) => {
      const at = n % id.length;
      switch (how) {
        case 'upper': return id.toUpperCase();
        case 'truncate': return id.slice(0, at);
        case 'extend': return `${id}${'0123456789abcdef'[n % 16]}`;
        case 'swap-prefix': return `${ANY_PREFIX[n % ANY_PREFIX.length]}${id.slice(id.indexOf('_'))}`;
        case 'flip': return `${id.slice(0, at)}${id[at] === 'a' ? 'b' : 'a'}${id.slice(at + 1)}`;
        case 'encode': return [...id].map((c, i) => (i % (1 + (n % 4)) === 0 ? `%${c.charCodeAt(0).toString(16).padStart(2, '0')}` : c)).join('');
        case 'space': return `%20${id}`;
        default: return `${id}${['%00', '%0a', '.json', ';x=1', '%2F', '/', '?', '#x', '%', '..'][n % 10]}`;
      }
    });
  const malformedId = fc.constantFrom('current', 'CURRENT', 'Current', '%63urrent', 'current%00', 'current.json', 'current/',
    '', '.', '..', '%2e', '%2e%2e', '%2E%2E%2F', '..%2F', '%2F', '%2f..%2f..%2fkey', '%5C', 'papi_', 'papi', 'mapp', '_', 'null',
    'undefined', '0', '-1', 'NaN', '__proto__', 'constructor', 'prototype', '%', '%zz', '%E0%A4%A', '%C0%AF', '%FF', '%00',
    '%20', '+', ';', ';x=1', '*', '$', '~', '{id}', ':key_id', ':app_id', '%3A', 'évnt', '\u00ff\u00fe', '%ED%A0%80', '%F0%9F%98%80',
    'papi_00000000000000000000', 'mapp_ffffffffffffffffffff', 'evnt_%30%30%30%30%30%30%30%30%30%30%30%30%30%30%30%30%30%30%30%30');
  const longId = fc.tuple(fc.constantFrom('papi_', 'mapp_', 'evnt_', '', '%41'), fc.integer({ min: 21, max: 20_000 })).map(([p, n]) => `${p}${'a'.repeat(n)}`);
  const pathId = fc.oneof(
    { weight: 6, arbitrary: realId },
    { weight: 2, arbitrary: randomId },
    { weight: 3, arbitrary: mutatedId },
    { weight: 3, arbitrary: malformedId },
    { weight: 1, arbitrary: longId },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }).map(encodeURIComponent) },
  );
  const pathTemplate = fc.constantFrom(
    (id: string) => `/v1/key/${id}`, (id: string) => `/v1/app/detail/${id}`, (id: string) => `/v1/event/${id}`,
    (id: string) => `/v1/${RESERVED[id.length % RESERVED.length]}/${id}`, (id: string) => `/v1/key/${id}/`,
    (id: string) => `/v1/app/detail/${id}/extra`, (id: string) => `/v1/${id}`, (id: string) => `/${id}`,
    (id: string) => `/v1/app/detail/../../key/${id}`, (id: string) => `/v1/key/./${id}`, (id: string) => `/v1/key//${id}`,
    (id: string) => `/v1/%6Bey/${id}`, (id: string) => `/v1/key%2F${id}`, (id: string) => `/v1/app/detail%2F${id}`,
    (id: string) => `/v1/event/${id}/..`, (id: string) => `/v1/key/${id}?limit=1`, (id: string) => `/v1/app/detail/${id}#x`,
    (id: string) => `/v1/app/detail/${id}/../${id}`, (id: string) => `/v1/key/${id}%2F..%2F..%2Fapp%2Flist`,
  );
  const fixedPath = fc.constantFrom('/v1/key', '/v1/key/', '/v1/key/current', '/v1/app/create', '/v1/app/list', '/v1/event',
    '/v1/run-usage/summary', '/v1/run', '/v1/catalog', '/healthz', '/readyz', '/', '//v1/key', '/v1//key', '/V1/KEY', '/v1/key?',
    '/v1/app/detail/', '/v1/app/detail', '/v1/event/', '*', 'v1/key', 'https://127.0.0.1/v1/key', '/v1/key/..', '/v1/app/list/.',
    '/%2e%2e/v1/key', '/v1/%2e%2e/v1/key', '/v1/key;x=1', '/v1/key%00', '/v1/app/list%20');
  const method = fc.oneof(
    { weight: 4, arbitrary: fc.constant('GET') }, { weight: 3, arbitrary: fc.constant('DELETE') },
    { weight: 3, arbitrary: fc.constant('PATCH') }, { weight: 2, arbitrary: fc.constant('POST') },
    { weight: 1, arbitrary: fc.constantFrom('HEAD', 'OPTIONS', 'PUT', 'TRACE', 'PROPFIND', 'FOO', 'SEARCH') },
  );

  // Properties' request specs.
  const bodies: fc.Arbitrary<Spec> = fc.oneof(
    { weight: 3, arbitrary: fc.record({ caller: validCaller, body: fc.oneof(keyBody, keyNearValid) }).map(({ caller, body }) => ({ kind: 'bodies', caller, method: 'POST', path: '/v1/key', body })) },
    { weight: 3, arbitrary: fc.record({ caller: validCaller, body: fc.oneof(appBody, appNearValid) }).map(({ caller, body }) => ({ kind: 'bodies', caller, method: 'POST', path: '/v1/app/create', body })) },
    { weight: 3, arbitrary: fc.record({ caller: validCaller, id: fc.oneof(appIdOf('A'), appIdOf('B'), randomId), body: editBody, alt })
      .map(({ caller, id, body, alt: a }) => ({ kind: 'bodies', caller, method: 'PATCH', path: `/v1/app/detail/${id}`, body, alt: a })) },
    { weight: 1, arbitrary: fc.record({ caller: validCaller, id: fc.oneof(ownId('A'), ownId('B'), fc.constant('current')), body: anyBody, alt })
      .map(({ caller, id, body, alt: a }) => ({ kind: 'bodies', caller, method: 'DELETE', path: id.startsWith('mapp_') ? `/v1/app/detail/${id}` : `/v1/key/${id}`, body, alt: a })) },
    { weight: 1, arbitrary: fc.record({ caller: validCaller, path: fc.constantFrom('/v1/key', '/v1/key/current', '/v1/app/list', '/v1/event', '/v1/run', '/v1/team/x'), method: fc.constantFrom('GET', 'POST', 'PATCH'), body: anyBody })
      .map(({ caller, path: p, method: m, body }) => ({ kind: 'bodies', caller, method: m, path: p, body })) },
  );

  const rawText = fc.oneof(
    fc.constantFrom('[]', 'null', '1', '"str"', 'true', '[{"name":"x"}]', '{"name":', '{', '}', '{"name":"x"', '{"a":1}}',
      '{"a":1}{"b":2}', "{'name':'x'}", '{name:"x"}', '{"name":"x",}', '{"name":"x"}garbage', '\ufeff{"name":"x"}',
      '{"name":"\\u0000"}', '{"name":"\\ud800"}', '{"name":"\\uDFFF\\uD800"}', '{"name":"a\\u0000b","scope":["*"]}',
      '{"name":1e999}', '{"expires_at":1e999,"name":"x"}', '{"name":"x","expires_at":-0}', '{"name":"x","expires_at":"1e308"}',
      '{"__proto__":{"scope":["*"]},"name":"x"}', '{"constructor":{"prototype":{"polluted":1}},"name":"x"}',
      '{"name":"x","name":"y"}', '{"name":"x","scope":["key:read"],"scope":"*"}', '   ', '\n\t\r ', '/* */{}', '{"a":NaN}',
      '{"a":Infinity}', '{"a":-Infinity}', '{"a":undefined}', '{"a":0x10}', '{"a":.5}', '{"a":01}', '{"a":+1}', "{\"a\":'x'}",
      'name=x&scope=*', '<xml/>', '\u0000', '{"a":"\u0000"}', '{"name":"x"}\u0000'),
    fc.string({ unit: 'grapheme', maxLength: 80 }),
    fc.string({ unit: 'binary', maxLength: 80 }),
    fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? 'null'),
  );
  const rawBodyValue = fc.oneof(
    { weight: 4, arbitrary: rawText },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 600 }).map((b) => `hex:${Buffer.from(b).toString('hex')}`) },
    { weight: 1, arbitrary: fc.constantFrom('hex:7b226e616d65223a22ff227d', 'hex:fffe7b007d00', 'hex:efbbbf7b7d', 'hex:7b226e616d65223a22c0af227d', 'hex:7b226e616d65223a22eda080227d') },
    { weight: 1, arbitrary: fc.integer({ min: 199_980, max: 200_020 }).map((n) => `{"name":"${'x'.repeat(n - 11)}"}`) },
    { weight: 1, arbitrary: fc.integer({ min: 200_001, max: 600_000 }).map((n) => `{"name":"${'y'.repeat(n - 11)}"}`) },
  );
  const contentType = fc.constantFrom(undefined, 'application/json', 'text/plain', 'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/json; charset=utf-16', '*/*', 'garbage;;=');
  const rawBodies: fc.Arbitrary<Spec> = fc.record({
    caller: validCaller,
    method: fc.constantFrom('POST', 'PATCH', 'DELETE', 'GET'),
    path: fc.oneof(fc.constantFrom('/v1/key', '/v1/app/create', '/v1/key/current', '/v1/app/list', '/v1/event', '/v1/run', '/nowhere'),
      fc.oneof(appIdOf('A'), appIdOf('B')).map((id) => `/v1/app/detail/${id}`), ownId('A').map((id) => `/v1/key/${id}`)),
    body: rawBodyValue,
    contentType,
    chunked: fc.boolean(),
    alt,
  }).map(({ caller, method: m, path: p, body, contentType: ct, chunked, alt: a }) => ({
    kind: 'rawBodies', caller, method: m, path: p, body, chunked, alt: a,
    ...(ct === undefined ? {} : { headers: { 'content-type': ct } }),
  }));

  const queryName = fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom('limit', 'offset') },
    { weight: 2, arbitrary: fc.constantFrom('LIMIT', 'limit[]', 'limit[0]', 'offset[a]', '__proto__', 'constructor', 'prototype',
      'hasOwnProperty', '', 'x', '%6Cimit', 'off%73et', 'limit%00', '%20limit', 'limit%20', 'limit+', 'app_id', 'project_id', 'key') },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }).map(encodeURIComponent) },
  );
  const queryValue = fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: -5, max: 205 }).map(String) },
    { weight: 3, arbitrary: fc.constantFrom('1e2', '0x10', '%205', '5%20', '', '1.0', '%2B5', '+5', '05', '0005', '00000000000000000000000001',
      '%D9%A5', '%D9%A1%D9%A0', '99999999999999999999', '9999999999999999', '999999999999999', '1000000000000000', 'NaN', 'Infinity', '-0', 'null', 'true',
      '[]', '%00', '%', '%zz', '5%00', '1,2', '%3B', '100', '101', '0', '1', '-1', '20', '%31', '%31%30%30', '%EF%BC%91') },
    { weight: 1, arbitrary: fc.constantFrom(...w.ids.keys, ...w.ids.apps, ...w.ids.events) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 10 }).map(encodeURIComponent) },
    { weight: 1, arbitrary: fc.integer({ min: 100, max: 12_000 }).map((n) => '9'.repeat(n)) },
  );
  const queryString = fc.tuple(
    fc.array(fc.tuple(queryName, fc.option(queryValue, { nil: undefined })), { minLength: 0, maxLength: 5 }),
    fc.constantFrom('&', '&', '&', ';', '&&'),
    fc.constantFrom('?', '?', '?', '??', '?&', '?#'),
    fc.boolean(),
  ).map(([params, joiner, lead, trail]) => `${lead}${params.map(([n, v]) => (v === undefined ? n : `${n}=${v}`)).join(joiner)}${trail ? '&' : ''}`);
  const queries: fc.Arbitrary<Spec> = fc.record({
    caller: validCaller,
    path: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom('/v1/key', '/v1/app/list', '/v1/event') },
      { weight: 1, arbitrary: fc.constantFrom('/v1/key/current', '/v1/run', '/v1/run-usage/summary', '/healthz', '/v1/nowhere') },
      { weight: 1, arbitrary: fc.oneof(appIdOf('A'), appIdOf('B')).map((id) => `/v1/app/detail/${id}`) },
      { weight: 1, arbitrary: fc.constantFrom(...w.ids.events).map((id) => `/v1/event/${id}`) },
    ),
    query: queryString,
  }).map(({ caller, path: p, query }) => ({ kind: 'queries', caller, method: 'GET', path: `${p}${query}` }));

  // The event stream's query: after (or Last-Event-ID), type (repeatable), actor, and junk.
  const streamQueryName = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('after', 'type', 'actor') },
    { weight: 1, arbitrary: fc.constantFrom('AFTER', 'after[]', 'type[0]', 'actor%00', '__proto__', 'limit', '', 'x', 'af%74er') },
  );
  const streamQueryValue = (name: string) => fc.oneof(
    { weight: 4, arbitrary: name === 'type' ? fc.constantFrom(...EVENT_TYPE_NAMES) : name === 'actor'
      ? fc.constantFrom(...w.ids.keys, 'nobody', 'papi_', `papi_${'0'.repeat(20)}`)
      : fc.constantFrom('0', '1', '3', '999999999999999', '9999999999999999', '-1', '1.5', '') },
    { weight: 2, arbitrary: queryValue },
    { weight: 1, arbitrary: fc.constantFrom('%00', 'a%00b', '%ED%A0%80', '%FF', '%', '%zz') },
  );
  const streamQueries: fc.Arbitrary<Spec> = fc.record({
    caller: validCaller,
    params: fc.array(streamQueryName.chain((name) => fc.tuple(fc.constant(name), fc.option(streamQueryValue(name), { nil: undefined }))),
      { minLength: 0, maxLength: 4 }),
    lastEventId: fc.option(fc.oneof(fc.constantFrom('0', '2', 'x', '-1', '1.0', ' 3', '99999999999999999999'), fc.nat().map(String)), { nil: undefined, freq: 3 }),
  }).map(({ caller, params, lastEventId }) => ({
    kind: 'streams', caller, method: 'GET',
    path: `/v1/event/stream${params.length ? '?' : ''}${params.map(([n, v]) => (v === undefined ? n : `${n}=${v}`)).join('&')}`,
    ...(lastEventId === undefined ? {} : { headers: { 'last-event-id': lastEventId } }),
  }));

  const smallBody = fc.option(fc.oneof(hostile.map(json), editBody), { nil: undefined, freq: 3 });
  const paths: fc.Arbitrary<Spec> = fc.record({
    caller: anyCaller,
    method,
    target: fc.oneof({ weight: 5, arbitrary: fc.tuple(pathTemplate, pathId).map(([t, id]) => t(id)) }, { weight: 1, arbitrary: fixedPath }),
    body: smallBody,
    alt,
  }).map(({ caller, method: m, target, body, alt: a }) => ({
    kind: 'paths', caller, method: m, path: target, alt: a,
    ...(body === undefined || m === 'HEAD' ? {} : { body }),
  }));

  // Authorization headers: missing, malformed, near misses, other projects', revoked, long.
  const secretOf = (state: string) => [...w.secrets].filter(([, s]) => s.state === state).map(([k]) => k);
  const anySecret = fc.constantFrom(...w.secrets.keys());
  const nearMiss = fc.tuple(fc.constantFrom(...secretOf('active')), fc.nat(), fc.constantFrom(...BASE62), fc.constantFrom('change', 'drop-last',
    'add', 'case', 'prefix-case', 'insert', 'space-inside', 'latin1', 'no-prefix', 'double-prefix'))
    .map(([secret, n, c, how]) => {
      const at = 11 + (n % (secret.length - 11));
      switch (how) {
        case 'change': return `${secret.slice(0, at)}${secret[at] === c ? (c === 'a' ? 'b' : 'a') : c}${secret.slice(at + 1)}`;
        case 'drop-last': return secret.slice(0, -1);
        case 'add': return `${secret}${c}`;
        case 'case': {
          const flipped = secret[at] === secret[at]!.toUpperCase() ? secret[at]!.toLowerCase() : secret[at]!.toUpperCase();
          return flipped === secret[at] ? `${secret}0` : `${secret.slice(0, at)}${flipped}${secret.slice(at + 1)}`;
        }
        case 'prefix-case': return `SK-PROJECT-${secret.slice(11)}`;
        case 'insert': return `${secret.slice(0, at)}${c}${secret.slice(at)}`;
        case 'space-inside': return `${secret.slice(0, at)} ${secret.slice(at)}`;
        case 'latin1': return `${secret.slice(0, at)}\u00e9${secret.slice(at + 1)}`;
        case 'no-prefix': return secret.slice(11);
        default: return `sk-project-${secret}`;
      }
    });
  const credential = fc.oneof(
    { weight: 3, arbitrary: anySecret },
    { weight: 4, arbitrary: nearMiss },
    { weight: 2, arbitrary: secretShaped },
    { weight: 1, arbitrary: fc.constantFrom('', ' ', 'sk-project-', 'null', 'undefined', 'Bearer', '*', '%00') },
    { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...'\t !"#$%&\'()*+,-./0123456789:;<=>?@AZaz[\\]^_`{|}~\u00a0\u00e9\u00ff'), maxLength: 60 }) },
    { weight: 1, arbitrary: fc.integer({ min: 100, max: 15_000 }).map((n) => `sk-project-${'A'.repeat(n)}`) },
  );
  const scheme = fc.oneof(
    { weight: 6, arbitrary: fc.constant('Bearer ') },
    { weight: 1, arbitrary: fc.constantFrom('bearer ', 'BEARER ', 'Bearer  ', 'Bearer\t', 'Bearer', 'Basic ', 'Token ', '', ' Bearer ', 'Bearer: ', 'Bearer=') },
  );
  const headerValue = fc.tuple(scheme, credential, fc.constantFrom('', '', '', ' ', '\t', ' x'))
    .map(([s, c, tail]) => `${s}${c}${tail}`);
  const authorization = fc.oneof(
    { weight: 8, arbitrary: headerValue as fc.Arbitrary<string | string[] | null> },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.tuple(headerValue, headerValue).map(([a, b]) => [a, b]) },
    { weight: 1, arbitrary: fc.integer({ min: 17_000, max: 40_000 }).map((n) => `Bearer sk-project-${'B'.repeat(n)}`) },
  );
  const authTargets = fc.constantFrom<[string, string]>(
    ['GET', '/v1/key/current'], ['GET', '/v1/key'], ['GET', '/v1/app/list'], ['GET', '/v1/event'], ['GET', `/v1/app/detail/${w.bPublicApp}`],
    ['POST', '/v1/key'], ['POST', '/v1/app/create'], ['DELETE', `/v1/key/${w.deletable.keys.A[0]}`], ['GET', '/v1/nowhere'],
    ['GET', '/v1/run'], ['PATCH', '/v1/team/x'], ['GET', '/v1/run-usage/summary'],
  );
  const authorizationSpecs: fc.Arbitrary<Spec> = fc.record({ authorization, target: authTargets, alt }).map(({ authorization: a, target: [m, p], alt: x }) => ({
    kind: 'authorization', caller: 'none', method: m!, path: p!, authorization: a, alt: x,
    ...(m === 'POST' ? { body: p === '/v1/key' ? '{"name":"auth fuzz","scope":["key:read"]}' : '{}' } : {}),
  }));

  return { bodies, rawBodies, queries, streams: streamQueries, paths, authorization: authorizationSpecs };
}

// ---------------------------------------------------------------------------------------------

before(async () => {
  // Thousands of made-up keys from one address, on purpose: the refusal throttle (429) is off here.
  service = await TestService.start({ env: { AUTH_REFUSALS_PER_MINUTE: '0' } });
  agent = new https.Agent({ keepAlive: true, maxSockets: LANES * 2, ca: readFileSync(service.config.tlsCertFile!) });
  world = await buildWorld();
  for (const secret of world.secrets.keys()) noteHash(secret);
});

after(async () => {
  agent?.destroy();
  await service?.stop();
});

/** One shrunk counterexample per cause. */
const counterexamples = new Map<string, string>();

/** JSON with long strings cut short: a counterexample may hold a 200 kB body. */
function compact(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' && v.length > 240 ? `${v.slice(0, 160)}…(${v.length} chars)` : v));
}

function report(details: fc.RunDetails<[Spec]>): string {
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  return `seed ${details.seed}, path "${details.counterexamplePath}", failed after ${details.numRuns} runs, ${details.numShrinks} shrinks\n`
    + `  shrunk counterexample: ${compact(details.counterexample?.[0])}\n  ${error.slice(0, 3000)}`;
}

test('fuzz: every response is a contract envelope, never a 5xx, never a secret or another project\'s record', async () => {
  const started = Date.now();
  const specs = arbitraries(world);
  for (const [name, runs] of Object.entries(RUNS) as Array<[keyof typeof RUNS, number]>) {
    // Each lane runs its share; a failure is shrunk once per cause, then the lane goes on with a
    // fresh seed, so one defect neither hides the others nor cuts the run short.
    await Promise.all(Array.from({ length: LANES }, async (_, lane) => {
      const state = { shrinking: false };
      const property = fc.asyncProperty(specs[name], async (spec) => {
        try {
          await exchange(spec, state.shrinking);
        } catch (err) {
          state.shrinking = true;
          throw err;
        }
      });
      let remaining = Math.ceil(runs / LANES);
      let seed = SEED + lane * 7919 + name.length * 104_729;
      for (let restarts = 0; remaining > 0 && restarts < 40; restarts++) {
        const details = await fc.check(property, {
          numRuns: remaining,
          seed,
          // Bound the shrinking of a failure: the suite must end in minutes.
          interruptAfterTimeLimit: 120_000,
          markInterruptAsFailure: false,
        });
        state.shrinking = false;
        remaining -= Math.max(1, details.numRuns);
        if (!details.failed) break;
        const signature = details.errorInstance instanceof Violation ? details.errorInstance.signature : String(details.errorInstance);
        if (!counterexamples.has(signature)) counterexamples.set(signature, `[${name}] ${report(details)}`);
        known.set(signature, (known.get(signature) ?? 0) + 1);
        seed += 1;
      }
    }));
    console.log(`# fuzz ${name}: ${stats.byKind.get(name) ?? 0} requests, ${counterexamples.size} distinct failures so far, ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }
  const failures = [...counterexamples].map(([signature, text]) => `${text}\n  (cause: ${signature}; ${known.get(signature)} hit(s) in all)`);

  recordFigure(SUITE, 'seed', SEED);
  recordFigure(SUITE, 'requests sent', stats.requests);
  recordFigure(SUITE, 'requests sent while shrinking', stats.shrinkRequests);
  for (const name of Object.keys(RUNS)) recordFigure(SUITE, `requests: ${name}`, stats.byKind.get(name) ?? 0);
  const statuses = [...stats.statuses.keys()].sort((a, b) => a - b);
  recordFigure(SUITE, 'distinct statuses seen', `${statuses.length} (${statuses.map((s) => `${s}×${stats.statuses.get(s)}`).join(' ')})`);
  recordFigure(SUITE, 'keys created / apps created', `${stats.created.keys} / ${stats.created.apps}`);
  recordFigure(SUITE, 'violating requests (incl. shrinking)', stats.violations);
  recordFigure(SUITE, 'failures', failures.length);
  recordFigure(SUITE, 'duration s', Math.round((Date.now() - started) / 1000));
  for (const failure of failures) console.log(`\n# FUZZ FAILURE ${failure}\n`);
  assert.ok(stats.requests - stats.shrinkRequests >= 10_000 * Math.min(1, SCALE), `at least 10,000 generated requests (sent ${stats.requests - stats.shrinkRequests})`);
  assert.equal(failures.length, 0, `fast-check found ${failures.length} counterexample(s), printed above as FUZZ FAILURE; causes:\n${[...counterexamples.keys()].join('\n')}`);
});

test('after the fuzz: no response held an identifier of another project\'s record (against the final database)', async () => {
  await service.waitForJobsDrained(60_000).catch(() => {});
  const owner = await ownersFromDatabase();
  const publicIds = await publicIdsFromDatabase();
  const leaks: string[] = [];
  for (const [project, seen] of Object.entries(seenIds)) {
    for (const [id, where] of seen) {
      const o = owner.get(id);
      if (o === undefined || o === project || publicIds.has(id) || bodyTaint[project]!.has(id)) continue;
      leaks.push(`${id} of project ${o} in a response to project ${project}: ${where}`);
    }
  }
  recordFigure(SUITE, 'distinct ids seen in responses', Object.values(seenIds).reduce((n, m) => n + m.size, 0));
  recordFigure(SUITE, 'cross-project ids in responses', leaks.length);
  assert.deepEqual(leaks.slice(0, 20), [], 'cross-project identifiers in responses');
});

test('after the fuzz: records of one project the other project\'s keys could reach are unchanged', async () => {
  const { rows: apps } = await service.db.query<{ id: string; name: string; type: string; status: string; deleted: boolean }>(
    'SELECT id, name, type, status, deleted_at IS NOT NULL AS deleted FROM apps WHERE id = ANY($1)', [world.ids.apps]);
  const changed: string[] = [];
  const bPublic = apps.find((a) => a.id === world.bPublicApp)!;
  if (bPublic.name !== 'B public' || bPublic.type !== 'public' || bPublic.status !== 'activated' || bPublic.deleted) {
    changed.push(`B's public app is now ${JSON.stringify(bPublic)}`);
  }
  // Fixture apps that only a key of another project could have touched (the fuzz spares its own).
  for (const app of apps) {
    const own = world.owner.get(app.id);
    if (own !== 'A' && own !== 'B') continue;
    const spared = world.deletable.apps[own].includes(app.id) || world.patchable[own].includes(app.id);
    const fixtureName = /^(A|B) (private|draft|vision|public|deleted|private with logo)$/.test(app.name);
    if (!spared && !fixtureName) changed.push(`app ${app.id} of ${own} was renamed to ${JSON.stringify(app.name.slice(0, 40))}`);
    if (!spared && app.deleted && !app.name.endsWith('deleted')) changed.push(`app ${app.id} of ${own} was deleted`);
  }
  const { rows: keys } = await service.db.query<{ id: string; status: string; name: string }>('SELECT id, status, name FROM api_keys WHERE id = ANY($1)', [world.ids.keys]);
  for (const key of keys) {
    const own = world.owner.get(key.id);
    if ((own === 'A' || own === 'B') && key.status === 'revoked' && key.name !== 'revoked' && !world.deletable.keys[own].includes(key.id)) {
      changed.push(`key ${key.id} (${key.name}) of ${own} was revoked`);
    }
  }
  assert.deepEqual(changed, []);
});

test('after the fuzz: every change the fuzz made has its audit event (no audit job failed)', async () => {
  await service.waitForJobsDrained(30_000).catch(() => {});
  const { rows } = await service.db.query<{ state: string; n: number; output: string | null }>(
    `SELECT state, count(*)::int AS n, min(output::text) AS output FROM pgboss.job
     WHERE name IN ('audit.write', 'audit.drain') AND state IN ('retry', 'failed', 'created', 'active') GROUP BY state`);
  recordFigure(SUITE, 'audit jobs not completed', rows.map((r) => `${r.state}×${r.n}`).join(' ') || '0');
  assert.deepEqual(rows.map((r) => ({ state: r.state, n: r.n, error: r.output?.slice(0, 300) })), [], 'audit jobs that did not complete');
});

test('after the fuzz: every event stream the fuzz opened read its events without a failure (the service logged none)', () => {
  const failures = service.logText().split('\n').filter((line) => /"msg":"event stream [^"]*(fail|could not)/.test(line));
  recordFigure(SUITE, 'event streams opened', stats.streamsOpened);
  assert.deepEqual(failures.slice(0, 5), [], 'event stream failures in the service log');
});

test('after the fuzz: the service log holds no key secret, no secret hash (hex) and no Bearer value', async () => {
  await sleep(500);
  const log = service.logText();
  assert.ok(log.includes('"msg":"request"'), 'the log records the requests made');
  const problems: string[] = [];
  if (log.includes('Bearer ')) problems.push('a `Bearer ` value');
  const secrets = [...world.secrets.keys(), ...issued];
  for (const secret of secrets) {
    if (log.includes(secret)) problems.push(`the secret ${secret.slice(0, 16)}…`);
    if (log.includes(sha256(secret).toString('base64'))) problems.push(`the base64 SHA-256 of ${secret.slice(0, 16)}…`);
  }
  const authHashes = new Set([...sentAuthorization].map((v) => sha256(v.replace(/^Bearer /, '')).toString('hex')));
  for (const hex of log.match(HEX64) ?? []) {
    if (hashHex.has(hex) || authHashes.has(hex)) problems.push(`the SHA-256 (hex) ${hex.slice(0, 12)}… of a secret or an Authorization value`);
  }
  for (const shaped of new Set(log.match(SECRET_SHAPED) ?? [])) {
    if (secrets.some((s) => s.startsWith(shaped) || shaped.startsWith(s)) || [...sentAuthorization].some((v) => v.includes(shaped))) {
      problems.push(`a secret or Authorization value ${shaped.slice(0, 16)}…`);
    }
  }
  recordFigure(SUITE, 'log lines checked', log.split('\n').length - 1);
  assert.deepEqual(problems.slice(0, 20), [], 'the service log');
});

