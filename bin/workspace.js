// `npm run workspace`: bin/workspace.ts, once bin/node-version.js has found this Node.js new
// enough (an older one could not load a .ts file).
import { requireNode } from './node-version.js';

requireNode('workspace');
import('./workspace.ts');
