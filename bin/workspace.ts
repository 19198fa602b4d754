// The workspace command line (decisions.md, "Running it"): acts with origin `workspace` on the
// same database as `npm start`, prints one JSON object on stdout, exits 0; on failure a message
// on stderr and a non-zero exit.
import { parseArgs } from 'node:util';
import { NotFound, createProject, disableConsumer, disableProject } from '../domain/projects.ts';
import type { Actor, Services } from '../domain/services.ts';
import { Invalid, activateApp, recordRun, setLogo, setPlan } from '../domain/workspace.ts';
import { readConfig } from '../lib/config.ts';
import { openDatabase } from '../lib/database.ts';
import { createPool } from '../lib/db.ts';
import { startProducer } from '../lib/jobs.ts';
import { createLogger, errorFields } from '../lib/log.ts';
import { release } from './release.ts';

class UsageError extends Error {}

const USAGE = `usage: npm run --silent workspace -- <command> [--ip <address>]
  project create --name <name>
  project disable <proj_id>
  consumer disable <cons_id>
  plan set <proj_id> [--custom-apps true|false] [--app-limit N]
  app logo <mapp_id> --file <path>
  app activate <mapp_id>
  run record --app <mapp_id> --project <proj_id> --status succeeded|error [--input N --output N]`;

interface Args {
  positionals: string[];
  values: Record<string, string | undefined>;
}

type Command = (services: Services, actor: Actor, args: Args) => Promise<object>;

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

function flagText(args: Args, flag: string): string {
  const value = args.values[flag];
  if (!value) throw new UsageError(`--${flag} is required.`);
  return value;
}

const COMMANDS: Record<string, Command> = {
  'project create': (services, actor, { values }) => {
    if (!values.name?.trim()) throw new UsageError('project create needs --name <name>.');
    return createProject(services, actor, values.name);
  },
  'project disable': (services, actor, { positionals }) => disableProject(services, actor, one(positionals, 'proj_id')),
  'consumer disable': (services, actor, { positionals }) => disableConsumer(services, actor, one(positionals, 'cons_id')),
  'plan set': (services, actor, args) => {
    const plan = { customApps: flagBoolean(args, 'custom-apps'), appLimit: flagCount(args, 'app-limit') };
    return setPlan(services, actor, one(args.positionals, 'proj_id'), plan);
  },
  'app logo': (services, actor, args) => setLogo(services, actor, one(args.positionals, 'mapp_id'), flagText(args, 'file')),
  'app activate': (services, actor, { positionals }) => activateApp(services, actor, one(positionals, 'mapp_id')),
  'run record': (services, _actor, args) => {
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
  },
};

function one(positionals: string[], what: string): string {
  if (positionals.length !== 1) throw new UsageError(`expected exactly one <${what}>.`);
  return positionals[0]!;
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      ip: { type: 'string', default: '127.0.0.1' },
      'custom-apps': { type: 'string' },
      'app-limit': { type: 'string' },
      file: { type: 'string' },
      app: { type: 'string' },
      project: { type: 'string' },
      status: { type: 'string' },
      input: { type: 'string' },
      output: { type: 'string' },
    },
  });
  const command = COMMANDS[positionals.slice(0, 2).join(' ')];
  if (!command) throw new UsageError(`unknown command.\n${USAGE}`);

  const config = readConfig();
  const log = createLogger(process.env.LOG_LEVEL ?? 'warn', 'workspace', 2);
  const database = await openDatabase(config, log);
  const pool = createPool(config, log, database.url, 2);
  try {
    await release(config, log, database.ownerUrl);
    const boss = await startProducer(pool, log);
    try {
      const result = await command({ pool, boss, log }, { origin: 'workspace', ip: values.ip! }, { positionals: positionals.slice(2), values: values as Args['values'] });
      process.stdout.write(`${JSON.stringify(result)}\n`);
      return 0;
    } finally {
      await boss.stop({ graceful: false });
    }
  } catch (err) {
    if (!(err instanceof NotFound) && !(err instanceof Invalid)) log.error({ err: errorFields(err) }, 'workspace command failed');
    throw err;
  } finally {
    await pool.end();
    await database.release();
  }
}

main(process.argv.slice(2)).then((code) => process.exit(code), (err: unknown) => {
  const usage = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(usage ? 2 : 1);
});
