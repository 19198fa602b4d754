// Every query lives in sql/queries/<name>.sql (and the few built around another in
// sql/templates/); this reads them once per process (or thread). A statement of many parameters
// names them (`:name`), so that a call passes each by name rather than by its place in a long list;
// they are numbered once here, and the server still gets $1, $2, ... and the values apart.
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

/** A statement's text with its parameters numbered, and their names in that order when it takes them by name. */
export interface NumberedSql {
  readonly text: string;
  /** Empty for a statement that takes its parameters in order ($1, $2, ...). */
  readonly names: readonly string[];
}

/** A statement's values by parameter name. */
export type NamedValues = Readonly<Record<string, unknown>>;

const WORD = /[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*/y;
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const POSITIONAL = /\$[0-9]+/y;
const DOLLAR_QUOTE = /\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/y;

function match(pattern: RegExp, sql: string, at: number): string | undefined {
  pattern.lastIndex = at;
  return pattern.exec(sql)?.[0];
}

/** Where the quoted text opening at `at` ends: `quote` doubled is one, and with `backslashes` a backslash escapes. */
function quotedEnd(sql: string, at: number, quote: string, backslashes: boolean): number {
  for (let i = at + 1; i < sql.length; i++) {
    if (backslashes && sql[i] === '\\') i++;
    else if (sql[i] === quote) {
      if (sql[i + 1] !== quote) return i + 1;
      i++;
    }
  }
  throw new Error(`unterminated ${quote} from offset ${at}`);
}

function blockCommentEnd(sql: string, at: number): number {
  let depth = 0;
  for (let i = at; i < sql.length - 1; i++) {
    if (sql[i] === '/' && sql[i + 1] === '*') {
      depth++;
      i++;
    } else if (sql[i] === '*' && sql[i + 1] === '/') {
      depth--;
      i++;
      if (depth === 0) return i + 1;
    }
  }
  throw new Error(`unterminated comment from offset ${at}`);
}

/**
 * A statement's `:name` parameters numbered $1, $2, ... in the order the names first come (a name
 * used again keeps its number). Only the placeholders change: what is in string literals, quoted
 * identifiers and comments, and `::` casts, stay as they are, and no value ever enters the text.
 * A statement that takes $1, $2, ... already is left as it is; one that mixes the two is refused.
 */
export function numberParameters(sql: string): NumberedSql {
  const names: string[] = [];
  let text = '';
  let copied = 0;
  let positional = false;
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    const next = sql[i + 1];
    let token: string | undefined;
    if (c === '-' && next === '-') {
      const end = sql.indexOf('\n', i);
      i = end === -1 ? sql.length : end + 1;
    } else if (c === '/' && next === '*') {
      i = blockCommentEnd(sql, i);
    } else if (c === "'" || c === '"') {
      i = quotedEnd(sql, i, c, false);
    } else if (c === ':' && next === ':') {
      i += 2;
    } else if (c === ':' && (token = match(NAME, sql, i + 1)) !== undefined) {
      let number = names.indexOf(token) + 1;
      if (number === 0) number = names.push(token);
      text += `${sql.slice(copied, i)}$${number}`;
      i += 1 + token.length;
      copied = i;
    } else if (c === '$' && (token = match(POSITIONAL, sql, i)) !== undefined) {
      positional = true;
      i += token.length;
    } else if (c === '$' && (token = match(DOLLAR_QUOTE, sql, i)) !== undefined) {
      const end = sql.indexOf(token, i + token.length);
      if (end === -1) throw new Error(`unterminated ${token} from offset ${i}`);
      i = end + token.length;
    } else if ((token = match(WORD, sql, i)) !== undefined) {
      i += token.length;
      // E'...': a string in which a backslash escapes.
      if ((token === 'E' || token === 'e') && sql[i] === "'") i = quotedEnd(sql, i, "'", true);
    } else {
      i++;
    }
  }
  if (positional && names.length > 0) throw new Error('both $n and :name parameters');
  return { text: text + sql.slice(copied), names };
}

/**
 * The values to send for `statement`: `values` as they are for one that takes them in order; by
 * name, every name given and no other, for one that takes them by name.
 */
export function parameterValues(statement: NumberedSql, values: readonly unknown[] | NamedValues, label: string): unknown[] {
  const { names } = statement;
  if (Array.isArray(values)) {
    if (names.length > 0) throw new Error(`${label} takes its parameters by name: ${names.join(', ')}`);
    return values as unknown[];
  }
  const byName = values as NamedValues;
  if (names.length === 0) throw new Error(`${label} takes its parameters in order, not by name`);
  const unknown = Object.keys(byName).filter((key) => !names.includes(key));
  if (unknown.length > 0) throw new Error(`${label} has no parameter ${unknown.join(', ')}`);
  return names.map((name) => {
    if (!Object.hasOwn(byName, name)) throw new Error(`${label}: no value for :${name}`);
    return byName[name];
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
  'key_route',
]);

const QUERY_SOURCES: ReadonlyMap<string, string> = readDir(path.join(SQL_DIR, 'queries'));
const QUERIES: ReadonlyMap<string, NumberedSql> = new Map([...QUERY_SOURCES].map(([name, source]) => {
  try {
    return [name, numberParameters(source)];
  } catch (err) {
    throw new Error(`sql/queries/${name}.sql: ${(err as Error).message}`);
  }
}));
for (const name of LANE_QUERIES) if (!QUERIES.has(name)) throw new Error(`No SQL file sql/queries/${name}.sql for its lane`);

export function ridesLane(name: string): boolean {
  return LANE_QUERIES.has(name);
}

/** sql/queries/<name>.sql as it is sent. */
export function queryStatement(name: string): NumberedSql {
  const file = QUERIES.get(name);
  if (file === undefined) throw new Error(`No SQL file sql/queries/${name}.sql`);
  return file;
}

/** The text sql/queries/<name>.sql is sent as. */
export function queryText(name: string): string {
  return queryStatement(name).text;
}

/** Every statement of sql/queries, by name. */
export function queryNames(): string[] {
  return [...QUERIES.keys()];
}

/**
 * sql/templates/<name>.sql around sql/queries files, as one statement: each `{{slot}}` takes the
 * file `queries` names for it, then its parameters are numbered as a query file's are.
 */
export function composeQuery(name: string, queries: Readonly<Record<string, string>>): NumberedSql {
  const slots = Object.fromEntries(Object.entries(queries).map(([slot, query]) => {
    const source = QUERY_SOURCES.get(query);
    if (source === undefined) throw new Error(`No SQL file sql/queries/${query}.sql`);
    return [slot, source];
  }));
  return numberParameters(fillTemplate(name, slots));
}
