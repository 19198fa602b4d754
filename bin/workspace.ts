// The workspace command line (decisions.md, "Running it"): acts with origin `workspace` on the
// same database as `npm start`, prints one JSON object on stdout, exits 0; on failure a message
// on stderr and a non-zero exit.
import { parseArgs } from 'node:util';
import { NotFound, createProject, disableConsumer, disableProject } from '../domain/projects.ts';
import type { Actor, Services } from '../domain/services.ts';
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
  consumer disable <cons_id>`;

type Command = (services: Services, actor: Actor, args: { positionals: string[]; name?: string }) => Promise<object>;

const COMMANDS: Record<string, Command> = {
  'project create': (services, actor, { name }) => {
    if (!name?.trim()) throw new UsageError('project create needs --name <name>.');
    return createProject(services, actor, name);
  },
  'project disable': (services, actor, { positionals }) => disableProject(services, actor, one(positionals, 'proj_id')),
  'consumer disable': (services, actor, { positionals }) => disableConsumer(services, actor, one(positionals, 'cons_id')),
};

function one(positionals: string[], what: string): string {
  if (positionals.length !== 1) throw new UsageError(`expected exactly one <${what}>.`);
  return positionals[0]!;
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { name: { type: 'string' }, ip: { type: 'string', default: '127.0.0.1' } },
  });
  const command = COMMANDS[positionals.slice(0, 2).join(' ')];
  if (!command) throw new UsageError(`unknown command.\n${USAGE}`);

  const config = readConfig();
  const log = createLogger(process.env.LOG_LEVEL ?? 'warn', 'workspace', 2);
  const database = await openDatabase(config, log);
  const pool = createPool(config, log, database.url, 2);
  try {
    await release(config, log, database.url);
    const boss = await startProducer(pool, log);
    try {
      const result = await command({ pool, boss, log }, { origin: 'workspace', ip: values.ip }, { positionals: positionals.slice(2), name: values.name });
      process.stdout.write(`${JSON.stringify(result)}\n`);
      return 0;
    } finally {
      await boss.stop({ graceful: false });
    }
  } catch (err) {
    if (!(err instanceof NotFound)) log.error({ err: errorFields(err) }, 'workspace command failed');
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
