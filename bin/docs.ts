// `npm run docs`: writes the API's description from the endpoint registry: docs/openapi.json and
// docs/reference.md. test/docs/docs.test.ts fails when the committed files differ from these.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { openApiText } from '../gateway/openapi.ts';
import { referenceText } from '../gateway/reference.ts';

const DOCS = path.join(import.meta.dirname, '..', 'docs');
writeFileSync(path.join(DOCS, 'openapi.json'), openApiText());
writeFileSync(path.join(DOCS, 'reference.md'), referenceText());
process.stdout.write('docs/openapi.json and docs/reference.md written\n');
