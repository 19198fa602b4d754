// The client as a consumer gets it: `npm pack` in client/ (its prepack builds it with tsc), the
// tarball installed offline into an empty project, its declarations type-checked there with
// nothing else installed, and a small .mjs program importing it run against a live service, over
// Node's own fetch (as a browser would use it) and with node.ts's Client and the certificate.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ROUTES } from '../../client/api.ts';
import { assertCliSucceeded, ROOT, runNode, serviceEnv, type CliOutcome } from '../support/cli.ts';
import { TestService, type TestProject } from '../support/service.ts';
import { tempDir } from '../support/tmp.ts';

const CLIENT = path.join(ROOT, 'client');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
/** The npm running this test (`npm test`), else the one on PATH. */
const NPM_CLI = process.env.npm_execpath
  ?? realpathSync(process.env.PATH!.split(path.delimiter).map((dir) => path.join(dir, 'npm')).find((file) => existsSync(file))!);

/** npm under this test's Node, without the variables of an npm running the tests. */
function npm(args: string[], cwd: string): Promise<CliOutcome> {
  const env = serviceEnv({ PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}` });
  for (const name of Object.keys(env)) if (name.startsWith('npm_')) delete env[name];
  return runNode([NPM_CLI, ...args], { env, cwd, timeoutMs: 120_000 });
}

function succeeded(outcome: CliOutcome, what: string): void {
  assert.equal(outcome.code, 0, `${what}: exit ${outcome.code} ${outcome.signal ?? ''}\n${outcome.stdout}\n${outcome.stderr}`);
}

let consumer: string;
let installed: string;
let service: TestService;
let project: TestProject;

before(async () => {
  const packed = tempDir('client-pack-');
  const built = existsSync(path.join(CLIENT, 'dist'));
  try {
    succeeded(await npm(['pack', '--pack-destination', packed], CLIENT), 'npm pack');
  } finally {
    // The build's output is the tarball's; the checkout is left as it was.
    if (!built) rmSync(path.join(CLIENT, 'dist'), { recursive: true, force: true });
  }
  const [tarball, ...others] = readdirSync(packed);
  assert.deepEqual(others, [], 'one tarball');
  consumer = tempDir('client-consumer-');
  writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  // Offline: the package depends on nothing.
  succeeded(await npm(['install', '--offline', '--no-audit', '--no-fund', path.join(packed, tarball!)], consumer), 'npm install');
  installed = path.join(consumer, 'node_modules', '@pms', 'client');
  service = await TestService.start();
  project = await service.createProject();
});

after(() => service?.stop());

const filesOf = (dir: string): string[] => readdirSync(dir, { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile()).map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name))).sort();

/** What a module file imports: `from '…'`, `import('…')`, `import '…'` and type references. */
const importsOf = (text: string): string[] =>
  [...text.matchAll(/\bfrom\s+['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|\bimport\s+['"]([^'"]+)['"]|<reference\s+\w+="([^"]+)"/g)]
    .map((m) => m[1] ?? m[2] ?? m[3] ?? m[4]!);

test('the package is compiled JavaScript and declarations that need nothing of the service, and nothing of Node but in ./node', () => {
  const manifest = JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8'));
  assert.equal(manifest.type, 'module');
  for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies']) assert.equal(manifest[field], undefined, field);
  assert.deepEqual(filesOf(installed), ['dist/api.d.ts', 'dist/api.js', 'dist/index.d.ts', 'dist/index.js', 'dist/node.d.ts', 'dist/node.js', 'package.json']);
  for (const file of filesOf(installed).filter((name) => name.startsWith('dist/'))) {
    const text = readFileSync(path.join(installed, file), 'utf8');
    const outside = importsOf(text).filter((specifier) => !/^\.\/[\w-]+\.(js|ts)$/.test(specifier));
    assert.deepEqual(outside, file === 'dist/node.js' ? ['node:https', 'node:stream'] : [], file);
    assert.doesNotMatch(text, /\b(restify|piscina|pino|pg|gateway|domain)\//, file);
    // What a browser or an edge runtime has not: Node's globals.
    if (/^dist\/(index|api)\.js$/.test(file)) assert.doesNotMatch(text, /\b(Buffer|process|require|__dirname)\b/, file);
  }
});

test('a TypeScript program type-checks against its declarations alone, with the DOM\'s types or Node\'s', async () => {
  writeFileSync(path.join(consumer, 'check.ts'), `
import { ApiError, Client, ROUTES, type ApiKeyWithSecret, type App, type Event } from '@pms/client';
import { Client as NodeClient } from '@pms/client/node';

const client = new Client({ baseUrl: 'https://127.0.0.1:8443', apiKey: 'sk-project-x' });
const created: ApiKeyWithSecret = await client.keys.create({ name: 'n', scope: ['key:read'] });
const app: App = await client.apps.get('mapp_00000000000000000000');
const status: 'draft' | 'activated' = app.status;
for await (const event of client.events.follow({ after: 0 })) {
  const typed: Event = event;
  console.log(typed.sequence, typed.type.name);
}
// @ts-expect-error the secret is in the answer to a creation only
console.log((await client.keys.get('papi_00000000000000000000')).key);
// @ts-expect-error a scope no key can hold
await client.keys.create({ name: 'n', scope: ['key:delete'] });
// @ts-expect-error the reserved operations are not in the client
console.log(ROUTES.getV1Run);
const node = new NodeClient({ baseUrl: 'https://127.0.0.1:8443', apiKey: 'sk-project-x', ca: new Uint8Array(), rejectUnauthorized: true });
console.log(created.key, status, node instanceof Client, new ApiError({ code: 400, title: 't', message: 'm', status: 400 }).status);
`);
  const compilerOptions = { strict: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', noEmit: true, skipLibCheck: false };
  const configs = {
    // A browser's or an edge runtime's program: the DOM's types, no @types at all.
    'tsconfig.dom.json': { ...compilerOptions, lib: ['es2022', 'dom'], types: [] },
    // A Node program: Node's types (the checkout's), no DOM.
    'tsconfig.node.json': { ...compilerOptions, lib: ['es2022'], typeRoots: [path.join(ROOT, 'node_modules', '@types')], types: ['node'] },
  };
  for (const [file, options] of Object.entries(configs)) {
    writeFileSync(path.join(consumer, file), JSON.stringify({ compilerOptions: options, files: ['check.ts'] }));
    succeeded(await runNode([TSC, '-p', file], { env: serviceEnv(), cwd: consumer }), `tsc -p ${file}`);
  }
});

test('an .mjs program imports it and uses the live service, over the global fetch (its stream too) and with node.ts\'s certificate', async () => {
  writeFileSync(path.join(consumer, 'run.mjs'), `
import { readFileSync } from 'node:fs';
import { ApiError, Client, ROUTES } from '@pms/client';
import { Client as NodeClient } from '@pms/client/node';

const [baseUrl, apiKey, certFile] = process.argv.slice(2);
const seen = { routes: Object.keys(ROUTES).length };
// The global fetch, trusting the service's certificate by NODE_EXTRA_CA_CERTS.
const client = new Client({ baseUrl, apiKey });
const created = await client.keys.create({ name: 'from the package', scope: ['key:read'] });
seen.created = [created.object, created.key.startsWith('sk-project-')];
seen.current = (await client.keys.current()).object;
seen.missing = await client.keys.get('papi_00000000000000000000').then(() => 'found', (err) => err instanceof ApiError ? [err.status, err.message] : String(err));
const controller = new AbortController();
const timer = setTimeout(() => controller.abort(), 30_000);
for await (const event of client.events.follow({ after: 0, types: ['key.created'], signal: controller.signal })) {
  if (event.details.name !== 'from the package') continue;
  seen.followed = event.type.name;
  controller.abort();
}
clearTimeout(timer);
client.close();
const nodeClient = new NodeClient({ baseUrl, apiKey, ca: readFileSync(certFile) });
seen.revoked = await nodeClient.keys.revoke(created.id).then((deleted) => deleted.deleted);
nodeClient.close();
console.log(JSON.stringify(seen));
`);
  const certFile = service.config.tlsCertFile!;
  const outcome = await runNode(['run.mjs', service.baseUrl, project.key, certFile], { env: serviceEnv({ NODE_EXTRA_CA_CERTS: certFile }), cwd: consumer });
  assert.deepEqual(assertCliSucceeded(outcome, 'run.mjs'), {
    routes: Object.keys(ROUTES).length,
    created: ['api_key', true],
    current: 'api_key',
    missing: [404, 'API key not found.'],
    followed: 'key.created',
    revoked: true,
  });
});
