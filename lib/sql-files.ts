// Every query lives in sql/queries/<name>.sql (and the few built around another in
// sql/templates/); this reads them once per process (or thread).
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

const TEMPLATES: ReadonlyMap<string, string> = readDir(path.join(SQL_DIR, 'templates'));

/**
 * sql/templates/<name>.sql with each `{{slot}}` replaced by its text: for the few statements
 * built around another (a query, a quoted literal), which parameters cannot express.
 */
export function fillTemplate(name: string, slots: Readonly<Record<string, string>>): string {
  const text = TEMPLATES.get(name);
  if (text === undefined) throw new Error(`No SQL file sql/templates/${name}.sql`);
  return text.replace(/\{\{(\w+)\}\}/g, (_, slot: string) => {
    const value = slots[slot];
    if (value === undefined) throw new Error(`sql/templates/${name}.sql: no value for {{${slot}}}`);
    return value;
  });
}

/**
 * The statements that ride the gateway's lanes (lib/lanes.ts): single reads of a row or a few,
 * which commit nothing. A page of rows on a lane would hold the statements behind it while it is
 * sent, and the process's memory would grow with what is in flight.
 */
const LANE_QUERIES: ReadonlySet<string> = new Set([
  'app_find_readable',
  'event_chain_heads',
  'event_find',
  'event_list_version',
  'key_authenticate',
  'key_caller',
  'key_check',
  'key_find',
]);
for (const name of LANE_QUERIES) if (!QUERIES.has(name)) throw new Error(`No SQL file sql/queries/${name}.sql for its lane`);

export function ridesLane(name: string): boolean {
  return LANE_QUERIES.has(name);
}

export function queryText(name: string): string {
  const text = QUERIES.get(name);
  if (text === undefined) throw new Error(`No SQL file sql/queries/${name}.sql`);
  return text;
}

/** Every statement of sql/queries, by name. */
export function queryNames(): string[] {
  return [...QUERIES.keys()];
}
