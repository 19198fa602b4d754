// One PostgreSQL for the whole run: DATABASE_URL if given, else Testcontainers where a container
// engine answers, else the embedded server. The run says which one it used.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbedded } from '../../lib/embedded-server.ts';
import type { Logger } from '../../lib/log.ts';
import { freePort } from './ports.ts';

export interface TestPostgres {
  kind: 'DATABASE_URL' | 'Testcontainers' | 'embedded';
  /** A database URL with the rights to create databases. */
  adminUrl: string;
  stop(): Promise<void>;
}

const CONTAINER_PROBE_MS = 5000;
const CONTAINER_IMAGE = 'postgres:17-alpine';
// A throwaway cluster: durability buys nothing and costs every test time. pg_stat_statements lets
// a test count the statements the service ran (a refusal answered without a database lookup).
const THROWAWAY_FLAGS = ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off',
  '-c', 'shared_preload_libraries=pg_stat_statements'];

async function containerEngineAnswers(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    const probe = getContainerRuntimeClient().then(() => true, () => false);
    const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), CONTAINER_PROBE_MS).unref());
    return await Promise.race([probe, timeout]);
  } catch {
    return false;
  }
}

export async function startTestPostgres(log: Logger): Promise<TestPostgres> {
  if (process.env.DATABASE_URL) {
    return { kind: 'DATABASE_URL', adminUrl: process.env.DATABASE_URL, stop: async () => {} };
  }
  if (await containerEngineAnswers()) {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const container = await new PostgreSqlContainer(CONTAINER_IMAGE).withCommand(['postgres', ...THROWAWAY_FLAGS]).start();
    return { kind: 'Testcontainers', adminUrl: container.getConnectionUri(), stop: async () => { await container.stop(); } };
  }
  // A private directory (0700) is fine: as root the server runs as the user postgres, which needs
  // no path to its data (lib/embedded-programs.ts).
  const parent = mkdtempSync(path.join(tmpdir(), 'pms-test-'));
  const dir = path.join(parent, 'pg');
  const server = await startEmbedded({
    dir, port: await freePort(), log, flags: THROWAWAY_FLAGS, persistent: false,
    // The port is a free one picked here; the directory is under TMPDIR.
    settings: { dir: 'TMPDIR', port: null },
  });
  return {
    kind: 'embedded',
    adminUrl: server.url('postgres'),
    // The data goes with the server (persistent: false); its passwords beside it go here.
    stop: async () => {
      await server.stop();
      rmSync(parent, { recursive: true, force: true });
    },
  };
}

/** Whether the tests' role is a superuser; a test that needs one skips on any other. */
export async function isSuperuser(db: pg.Pool | pg.ClientBase): Promise<boolean> {
  const { rows: [row] } = await db.query("SELECT current_setting('is_superuser') = 'on' AS superuser");
  return row.superuser as boolean;
}
