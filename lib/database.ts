// Which PostgreSQL a process uses: DATABASE_URL, or the embedded server under DATA_DIR.
import path from 'node:path';
import type { Config } from './config.ts';
import { ensureDatabase, startEmbedded } from './embedded-db.ts';
import type { Logger } from './log.ts';

export interface DatabaseHandle {
  url: string;
  embedded: boolean;
  release(): Promise<void>;
}

const EMBEDDED_DATABASE = 'pms';

export async function openDatabase(config: Config, log: Logger): Promise<DatabaseHandle> {
  if (config.databaseUrl) return { url: config.databaseUrl, embedded: false, release: async () => {} };
  const server = await startEmbedded({ dir: path.join(config.dataDir, 'pg'), port: config.embeddedPgPort, log });
  await ensureDatabase(server.url('postgres'), EMBEDDED_DATABASE);
  return { url: server.url(EMBEDDED_DATABASE), embedded: true, release: () => server.stop() };
}
