// The Procfile's processes as node arguments and environment, so tools run each process exactly as
// deployed.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export type ProcessKind = 'release' | 'web' | 'worker';

const PROCFILE = path.join(import.meta.dirname, '..', 'Procfile');
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=(\S*)$/;

/** A Procfile line's words: `NAME=value` assignments first (as a shell reads them), then node and its arguments. */
function procfileLine(kind: ProcessKind): { env: Record<string, string>; args: string[] } {
  const line = readFileSync(PROCFILE, 'utf8').split('\n').find((l) => l.startsWith(`${kind}:`));
  if (!line) throw new Error(`the Procfile has no ${kind} process`);
  const words = line.slice(kind.length + 1).trim().split(/\s+/);
  const env: Record<string, string> = {};
  let match: RegExpExecArray | null;
  while (words.length > 0 && (match = ASSIGNMENT.exec(words[0]!))) {
    env[match[1]!] = match[2]!;
    words.shift();
  }
  const [command, ...args] = words;
  if (command !== 'node') throw new Error(`Procfile ${kind} does not run node`);
  return { env, args };
}

/** The node arguments of a Procfile line (`web: node --max-semi-space-size=8 --no-allocation-site-pretenuring bin/web.js`). */
export function procfileArgs(kind: ProcessKind): string[] {
  return procfileLine(kind).args;
}

/** The variables a Procfile line sets for its process, over those it is started with. */
export function procfileEnv(kind: ProcessKind): Record<string, string> {
  return procfileLine(kind).env;
}
