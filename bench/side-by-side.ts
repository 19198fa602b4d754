// `npm run -s bench:side-by-side -- <other checkout> [GET path ...]`: this checkout's service and
// another's (the commit before a change, say: `git worktree add ../before HEAD~1`, with its own
// `npm ci` or a node_modules link), each started as bench:serve starts it, and R2 beside them,
// measured in turns: SIDE_ROUNDS (6) rounds of SIDE_S (5) seconds each of R2, this, the other, for
// each path (default /v1/key/current). On a machine whose speed drifts from one minute to the
// next, only figures taken in turns like this compare two builds; the full bench's ratios do not.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import pg from 'pg';
import { freePort } from '../test/support/ports.ts';
import { finished } from './children.ts';
import { certificateFiles, createReferenceTable } from './setup.ts';

const CONNECTIONS = 32;
const ROUNDS = Number(process.env.SIDE_ROUNDS ?? 6);
const SECONDS = Number(process.env.SIDE_S ?? 5);
const [other, ...givenPaths] = process.argv.slice(2);
if (!other) {
  process.stderr.write('usage: npm run -s bench:side-by-side -- <other checkout> [GET path ...]\n');
  process.exit(2);
}
const paths = givenPaths.length ? givenPaths : ['/v1/key/current'];

interface Served { child: ChildProcess; base: string; key: string; database: string }

/** bench:serve in `dir`, once it has printed its BASE, KEY and DATABASE. */
function serve(dir: string): Promise<Served> {
  const child = spawn(process.execPath, ['bench/serve.ts'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
  const values: Record<string, string> = {};
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bench:serve in ${dir} exited ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const [name, value] = [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)];
      values[name] = value;
      if (values.BASE && values.KEY && values.DATABASE) resolve({ child, base: values.BASE, key: values.KEY, database: values.DATABASE });
    });
  });
}

function requests(url: string, key?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    autocannon({ url, connections: CONNECTIONS, duration: SECONDS, headers: key ? { authorization: `Bearer ${key}` } : {} }, (err, result) => {
      if (err) return reject(err);
      if (result.non2xx || result.errors) return reject(new Error(`${url}: ${result.non2xx} answers not 2xx, ${result.errors} errors`));
      resolve(result.requests.total);
    });
  });
}

const scratch = mkdtempSync(path.join(tmpdir(), 'pms-side-'));
const [here, there] = await Promise.all([serve(path.join(import.meta.dirname, '..')), serve(path.resolve(other))]);
const db = new pg.Client({ connectionString: here.database });
await db.connect();
await createReferenceTable(db);
await db.end();
const certificate = await certificateFiles(scratch);
const r2Port = await freePort();
const r2 = spawn(process.execPath, ['bench/reference.ts', 'r2', String(r2Port), here.database], {
  cwd: path.join(import.meta.dirname, '..'),
  env: { ...process.env, ...certificate },
  stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
});
await new Promise((resolve) => r2.once('message', resolve));

try {
  for (const p of paths) {
    const total = { r2: 0, here: 0, there: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      total.r2 += await requests(`https://127.0.0.1:${r2Port}/ref`);
      total.here += await requests(`${here.base}${p}`, here.key);
      total.there += await requests(`${there.base}${p}`, there.key);
    }
    const perS = (n: number) => Math.round(n / (ROUNDS * SECONDS));
    console.log(`${p}: R2 ${perS(total.r2)}/s, this ${perS(total.here)}/s (${(total.here / total.r2).toFixed(2)}x R2), `
      + `other ${perS(total.there)}/s (${(total.there / total.r2).toFixed(2)}x R2); this / other ${(total.here / total.there).toFixed(3)}`);
  }
} finally {
  r2.kill('SIGTERM');
  for (const { child } of [here, there]) child.kill('SIGINT');
  await Promise.all([finished(r2), finished(here.child), finished(there.child)]);
  rmSync(scratch, { recursive: true, force: true });
}
