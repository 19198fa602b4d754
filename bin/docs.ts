// `npm run docs`: writes what is derived from the endpoint registry: the API's description,
// docs/openapi.json and docs/reference.md, and the client package's types and routes,
// client/api.ts. test/docs/openapi.test.ts and test/client/api.test.ts fail when they are stale.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { clientApiText } from '../client/generate.ts';
import { openApiText } from '../gateway/openapi.ts';
import { referenceText } from '../gateway/reference.ts';

const ROOT = path.join(import.meta.dirname, '..');
writeFileSync(path.join(ROOT, 'docs', 'openapi.json'), openApiText());
writeFileSync(path.join(ROOT, 'docs', 'reference.md'), referenceText());
writeFileSync(path.join(ROOT, 'client', 'api.ts'), clientApiText());
process.stdout.write('docs/openapi.json, docs/reference.md and client/api.ts written\n');
