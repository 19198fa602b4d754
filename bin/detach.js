// `npm start` (package.json: `exec node bin/detach.js <node options> bin/start.js`): bin/detach.ts,
// once bin/node-version.js has found this Node.js new enough, so that an older one says so in one
// line as `start` before anything is spawned.
import { requireNode } from './node-version.js';

requireNode('start');
import('./detach.ts');
