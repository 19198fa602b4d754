// Which PostgreSQL a process uses: DATABASE_URL, or the embedded server under DATA_DIR.
import path from 'node:path';
import type { Config } from './config.ts';
import { ensureDatabase, startEmbedded } from './embedded-server.ts';
import type { Logger } from './log.ts';

export interface DatabaseHandle {
  /** For `release` only: the role that owns the schema and runs migrations. */
  ownerUrl: string;
  /** For everything else: the role that reads and writes rows and nothing more (lib/app-role.ts). */
  url: string;
  embedded: boolean;
  release(): Promise<void>;
}

const EMBEDDED_DATABASE = 'pms';

/**
 * With DATABASE_URL both are that URL: a deployment gives `release` the owner's and `web` and
 * `worker` a member of pms_app (README, "Database roles").
 */
export async function openDatabase(config: Config, log: Logger): Promise<DatabaseHandle> {
  if (config.databaseUrl) return { ownerUrl: config.databaseUrl, url: config.databaseUrl, embedded: false, release: async () => {} };
  const server = await startEmbedded({ dir: path.join(config.dataDir, 'pg'), port: config.embeddedPgPort, log });
  await ensureDatabase(server.url('postgres'), EMBEDDED_DATABASE);
  return { ownerUrl: server.url(EMBEDDED_DATABASE), url: server.appUrl(EMBEDDED_DATABASE), embedded: true, release: () => server.stop() };
}
