// Procfile `release`, `npm run release`: bin/release.ts, once bin/node-version.js has found this
// Node.js new enough (an older one could not load a .ts file). release.ts is a library too (start
// and the workspace run its steps), so it runs only when asked.
import { requireNode } from './node-version.js';

requireNode('release');
import('./release.ts').then((release) => release.main());
