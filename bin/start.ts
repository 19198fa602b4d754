// `npm start`: everything on one machine in one process: release, then web and worker. On the
// very first start it also creates a first project and prints its `*` key, once. npm runs it
// through bin/detach.ts, which keeps a Ctrl-C at the terminal from reaching its PostgreSQL.
import { createProject, countProjects } from '../domain/projects.ts';
import { SYSTEM_ACTOR } from '../domain/actor.ts';
import { startGateway } from '../gateway/server.ts';
import { createPool } from '../lib/pool.ts';
import { startProducer } from '../lib/jobs.ts';
import type { Logger } from '../lib/log.ts';
import { startJobWorkers } from '../workers/start.ts';
import type { Config } from '../lib/config.ts';
import { runProcess } from './lifecycle.ts';
import { release } from './release.ts';

/** On the very first start: a first project, and the text that shows its key, once. */
async function createFirstProject(config: Config, log: Logger, databaseUrl: string): Promise<string | undefined> {
  const pool = createPool(config, log, databaseUrl, 2);
  const boss = await startProducer(pool, log);
  try {
    const services = { pool, db: pool, boss, log, config };
    if ((await countProjects(services)) > 0) return undefined;
    const first = await createProject(services, SYSTEM_ACTOR, 'First project');
    return [
      '',
      'First start: created a project and its first API key. The key is shown this once:',
      `  project ${first.project.id}`,
      `  key     ${first.key.key}`,
      '',
    ].join('\n') + '\n';
  } finally {
    await boss.stop({ graceful: false });
    await pool.end();
  }
}

await runProcess('start', async (config, log, database) => {
  await release(config, log, database.ownerUrl);
  const firstKey = await createFirstProject(config, log, database.url);
  // Shown once the API listens, so that whoever reads it can use it at once; and shown whatever
  // happens on the way there, since it is never shown again.
  try {
    const workers = await startJobWorkers(config, log, database.url);
    const gateway = await startGateway(config, log, database.url);
    return [gateway, workers];
  } finally {
    if (firstKey) process.stdout.write(firstKey);
  }
}, { listens: true });
