// `node bin/check-node.js <name>`: exits 0 on a Node.js that package.json's engines allow, else
// one line and exit 1 (bin/node-version.js). For npm scripts that start with something else, as
// `npm test` does with tsc, which any Node runs.
import { requireNode } from './node-version.js';

requireNode(process.argv[2] || 'check-node');
