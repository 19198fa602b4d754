// The Procfile's processes as node arguments, so tools run each process exactly as deployed.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export type ProcessKind = 'release' | 'web' | 'worker';

const PROCFILE = path.join(import.meta.dirname, '..', 'Procfile');

/** The node arguments of a Procfile line (`web: node --max-semi-space-size=8 --no-allocation-site-pretenuring bin/web.js`). */
export function procfileArgs(kind: ProcessKind): string[] {
  const line = readFileSync(PROCFILE, 'utf8').split('\n').find((l) => l.startsWith(`${kind}:`));
  if (!line) throw new Error(`the Procfile has no ${kind} process`);
  const [command, ...args] = line.slice(kind.length + 1).trim().split(/\s+/);
  if (command !== 'node') throw new Error(`Procfile ${kind} does not run node`);
  return args;
}
