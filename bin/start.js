// What bin/detach.js starts for `npm start`: bin/start.ts, once bin/node-version.js has found this
// Node.js new enough (an older one could not load a .ts file).
import { requireNode } from './node-version.js';

requireNode('start');
import('./start.ts');
