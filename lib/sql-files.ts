// Every query lives in sql/queries/<name>.sql; this reads them once per process (or thread).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const SQL_DIR = path.join(import.meta.dirname, '..', 'sql');

function readDir(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.sql')).sort()) {
    files.set(file.slice(0, -'.sql'.length), readFileSync(path.join(dir, file), 'utf8'));
  }
  return files;
}

const QUERIES: ReadonlyMap<string, string> = readDir(path.join(SQL_DIR, 'queries'));

export function migrationFiles(): Map<string, string> {
  return readDir(path.join(SQL_DIR, 'migrations'));
}

/** An administrative script of sql/roles/, run by `release`. */
export function roleScript(name: string): string {
  return readFileSync(path.join(SQL_DIR, 'roles', `${name}.sql`), 'utf8');
}

export function queryText(name: string): string {
  const text = QUERIES.get(name);
  if (text === undefined) throw new Error(`No SQL file sql/queries/${name}.sql`);
  return text;
}
