// The workspace command line (decisions.md, "Running it"): acts with origin `workspace` on the
// same database as `npm start`, prints one JSON object on stdout, exits 0; on failure a message
// on stderr and a non-zero exit (2, with one line, for a usage error).
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { activateApp, setLogo } from '../domain/apps.ts';
import { ApiError, isDatabaseUnavailable } from '../domain/errors.ts';
import { parseNewKey } from '../domain/keys.ts';
import { isRateLimit, MAX_RATE_LIMIT, MAX_RATE_WINDOW_S, type RateLimit } from '../domain/rate-limit.ts';
import { Invalid, NotFound, createProject, createProjectKey, disableConsumer, disableProject, setPlan, verifyProjectChain } from '../domain/projects.ts';
import { recordRun } from '../domain/runs.ts';
import type { Actor } from '../domain/actor.ts';
import type { Services } from '../domain/services.ts';
import { readConfig } from '../lib/config.ts';
import { oneLine } from '../lib/startup-error.ts';
import { openDatabase } from '../lib/open-database.ts';
import { createPool } from '../lib/pool.ts';
import { startProducer } from '../lib/jobs.ts';
import { createLogger, errorFields } from '../lib/log.ts';
import { release } from './release.ts';

class UsageError extends Error {}

/** A command that ran and found a fault: its object still goes to stdout, its reason to stderr, exit 1. */
class Failed extends Error {
  readonly output: object;
  constructor(message: string, output: object) {
    super(message);
    this.output = output;
  }
}

/** The name of a key made by `key create` without --name. */
const DEFAULT_KEY_NAME = 'Workspace key';

const USAGE = `usage: npm run --silent workspace -- <command> [--ip <address>]
  project create --name <name>
  project disable <proj_id>
  consumer disable <cons_id>
  plan set <proj_id> [--custom-apps true|false] [--app-limit N] [--rate-limit N/S|none]
      (--rate-limit: the default limit of the project's keys created from now on,
       N requests per S seconds, N 1..1000000, S 1..86400; none for no default)
  app logo <mapp_id> --file <path>
  app activate <mapp_id>
  run record --app <mapp_id> --project <proj_id> --status succeeded|error [--input N --output N]
  key create --project <proj_id> [--name <name>] [--scope <scope>]...
      (name "${DEFAULT_KEY_NAME}" and scope * when absent; --scope may be repeated)
  events verify <proj_id>
      (recomputes the project's hash chain; exit 1 naming the first sequence that breaks)
  help, --help
Each command prints one JSON object; --ip sets the address recorded on events (default 127.0.0.1).`;

/** What a usage error adds, so that its one line still leads to the commands. */
const SEE_HELP = '`npm run --silent workspace -- --help` lists the commands.';

interface Args {
  positionals: string[];
  values: Record<string, string | undefined>;
  /** --scope, in the order given. */
  scopes: string[] | undefined;
}

type Command = (services: Services, actor: Actor, args: Args) => Promise<object>;

/**
 * What a command takes beside --ip, which every command takes: any other option is refused, as is
 * one given twice but --scope, where it would otherwise be ignored or its first value replaced.
 */
const REPEATABLE = new Set(['scope']);
const EVERY_COMMAND_TAKES = new Set(['ip']);

function checkOptions(command: string, taken: readonly string[], given: readonly string[]): void {
  const seen = new Set<string>();
  for (const option of given) {
    if (!EVERY_COMMAND_TAKES.has(option) && !taken.includes(option)) {
      throw new UsageError(`--${option} is not an option of ${command}; ${SEE_HELP}`);
    }
    if (seen.has(option) && !REPEATABLE.has(option)) throw new UsageError(`--${option} is given more than once.`);
    seen.add(option);
  }
}

function flagBoolean(args: Args, flag: string): boolean | undefined {
  const value = args.values[flag];
  if (value === undefined) return undefined;
  if (value !== 'true' && value !== 'false') throw new UsageError(`--${flag} takes true or false.`);
  return value === 'true';
}

function flagCount(args: Args, flag: string): number | undefined {
  const value = args.values[flag];
  if (value === undefined) return undefined;
  if (!/^\d{1,9}$/.test(value)) throw new UsageError(`--${flag} takes a non-negative integer.`);
  return Number(value);
}

/** --rate-limit N/S, or none. */
function flagRateLimit(args: Args): RateLimit | null | undefined {
  const value = args.values['rate-limit'];
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  const match = /^(\d{1,7})\/(\d{1,5})$/.exec(value);
  const rateLimit = match ? { limit: Number(match[1]), window_s: Number(match[2]) } : undefined;
  if (!isRateLimit(rateLimit)) {
    throw new UsageError(`--rate-limit takes N/S (N requests per S seconds, N 1..${MAX_RATE_LIMIT}, S 1..${MAX_RATE_WINDOW_S}) or none.`);
  }
  return rateLimit;
}

function flagText(args: Args, flag: string): string {
  const value = args.values[flag];
  if (!value) throw new UsageError(`--${flag} is required.`);
  return value;
}

const COMMANDS: Record<string, { options: readonly string[]; run: Command }> = {
  'project create': { options: ['name'], run: (services, actor, { values, positionals }) => {
    none(positionals, 'project create');
    if (!values.name?.trim()) throw new UsageError('project create needs --name <name>.');
    return createProject(services, actor, values.name);
  } },
  'project disable': { options: [], run: (services, actor, { positionals }) => disableProject(services, actor, one(positionals, 'proj_id')) },
  'consumer disable': { options: [], run: (services, actor, { positionals }) => disableConsumer(services, actor, one(positionals, 'cons_id')) },
  'plan set': { options: ['custom-apps', 'app-limit', 'rate-limit'], run: (services, actor, args) => {
    const plan = { customApps: flagBoolean(args, 'custom-apps'), appLimit: flagCount(args, 'app-limit'), rateLimit: flagRateLimit(args) };
    return setPlan(services, actor, one(args.positionals, 'proj_id'), plan);
  } },
  'app logo': { options: ['file'], run: (services, actor, args) => setLogo(services, actor, one(args.positionals, 'mapp_id'), flagText(args, 'file')) },
  'app activate': { options: [], run: (services, actor, { positionals }) => activateApp(services, actor, one(positionals, 'mapp_id')) },
  'run record': { options: ['app', 'project', 'status', 'input', 'output'], run: (services, _actor, args) => {
    none(args.positionals, 'run record');
    const status = flagText(args, 'status');
    if (status !== 'succeeded' && status !== 'error') throw new UsageError('--status takes succeeded or error.');
    const input = flagCount(args, 'input');
    const output = flagCount(args, 'output');
    if ((input === undefined) !== (output === undefined)) throw new UsageError('--input and --output go together.');
    return recordRun(services, {
      app_id: flagText(args, 'app'),
      project_id: flagText(args, 'project'),
      status,
      tokens: input === undefined ? null : { input, output: output! },
    });
  } },
  'key create': { options: ['project', 'name', 'scope'], run: (services, actor, args) => {
    none(args.positionals, 'key create');
    const projectId = flagText(args, 'project');
    let input;
    try {
      // The API's own rule (name, scope entries, duplicates dropped); the workspace holds `*`.
      input = parseNewKey({ name: args.values.name ?? DEFAULT_KEY_NAME, scope: args.scopes }, { scope: ['*'], expiresAt: null }, Math.floor(Date.now() / 1000));
    } catch (err) {
      throw err instanceof ApiError ? new UsageError(err.message) : err;
    }
    return createProjectKey(services, actor, projectId, input);
  } },
  'events verify': { options: [], run: async (services, _actor, { positionals }) => {
    const verdict = await verifyProjectChain(services, one(positionals, 'proj_id'));
    if (!verdict.verified) throw new Failed(`the chain breaks at sequence ${verdict.sequence}: ${verdict.reason}.`, verdict);
    return verdict;
  } },
};

/** A command that takes options only: a word beside them would be ignored, so it is refused. */
function none(positionals: string[], command: string): void {
  if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}; ${command} takes options only.`);
}

function one(positionals: string[], what: string): string {
  if (positionals.length !== 1) throw new UsageError(`expected exactly one <${what}>.`);
  return positionals[0]!;
}

async function main(argv: string[]): Promise<number> {
  const { values: { scope: scopes, help, ...values }, positionals, tokens } = parseArgs({
    args: argv,
    allowPositionals: true,
    tokens: true,
    options: {
      help: { type: 'boolean', short: 'h' },
      name: { type: 'string' },
      scope: { type: 'string', multiple: true },
      ip: { type: 'string', default: '127.0.0.1' },
      'custom-apps': { type: 'string' },
      'app-limit': { type: 'string' },
      'rate-limit': { type: 'string' },
      file: { type: 'string' },
      app: { type: 'string' },
      project: { type: 'string' },
      status: { type: 'string' },
      input: { type: 'string' },
      output: { type: 'string' },
    },
  });
  if (help || positionals[0] === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError(`no command given; ${SEE_HELP}`);
  const name = positionals.slice(0, 2).join(' ');
  const command = COMMANDS[name];
  if (!command) throw new UsageError(`unknown command: ${name}; ${SEE_HELP}`);
  checkOptions(name, command.options, tokens.flatMap((token) => (token.kind === 'option' ? [token.name] : [])));
  // Recorded on the events, which keep it for good.
  if (!isIP(values.ip!)) throw new UsageError(`--ip takes an IPv4 or IPv6 address, not ${JSON.stringify(values.ip)}.`);

  const config = readConfig();
  // Quieter than a service by default: its answer is the one line on stdout.
  const log = createLogger(process.env.LOG_LEVEL ? config.logLevel : 'warn', 'workspace', 2);
  const database = await openDatabase(config, log);
  const pool = createPool(config, log, database.url, 2);
  try {
    await release(config, log, database.ownerUrl);
    const boss = await startProducer(pool, log);
    try {
      const result = await command.run({ pool, db: pool, boss, log, config }, { origin: 'workspace', ip: values.ip! }, {
        positionals: positionals.slice(2), values: values as Args['values'], scopes,
      });
      process.stdout.write(`${JSON.stringify(result)}\n`);
      return 0;
    } finally {
      await boss.stop({ graceful: false });
    }
  } catch (err) {
    // The person typing gets one line on stderr (below); a fault's stack with LOG_LEVEL=debug.
    if (!(err instanceof NotFound) && !(err instanceof Invalid) && !(err instanceof UsageError) && !(err instanceof Failed)) {
      log.debug({ err: errorFields(err) }, 'workspace command failed');
    }
    throw err;
  } finally {
    await pool.end();
    await database.release();
  }
}

main(process.argv.slice(2)).then((code) => process.exit(code), (err: unknown) => {
  if (err instanceof Failed) process.stdout.write(`${JSON.stringify(err.output)}\n`);
  const usage = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
  process.stderr.write(`${isDatabaseUnavailable(err) ? 'the database cannot be reached: ' : ''}${oneLine(err)}\n`);
  process.exit(usage ? 2 : 1);
});
