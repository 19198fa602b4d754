// What every entry point (bin/*.js) does before it loads its .ts: a Node.js outside package.json's
// engines range gets one line naming the range and the version found, and exit 1. An older Node
// cannot even load a .ts file (ERR_UNKNOWN_FILE_EXTENSION and a stack), so this file and the
// entry points are plain JavaScript modules that Node 12.22 and later parse (no top-level await).
// The range is read, not repeated here; semver reads it as npm does.
import { readFileSync } from 'fs';
import semver from 'semver';

/** Returns on a Node.js the engines range allows; else prints `<name>: …` on stderr and exits 1. */
export function requireNode(name) {
  const range = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).engines.node;
  const found = process.versions.node;
  if (semver.satisfies(found, range, { includePrerelease: true })) return;
  process.stderr.write(`${name}: needs Node.js ${range} (package.json engines.node); found Node.js ${found} (${process.execPath}).\n`);
  process.exit(1);
}
