// What the fleet needs of the machine: root (namespaces, routes), and Debian's HAProxy, PgBouncer
// and PostgreSQL 15, installed here with apt-get when missing. Anything lacking is one line: why
// the fleet cannot run, and the fault file skips with it.
import { existsSync } from 'node:fs';
import { run } from './hosts.ts';

export const PROGRAMS = {
  haproxy: '/usr/sbin/haproxy',
  pgbouncer: '/usr/sbin/pgbouncer',
  postgres: '/usr/lib/postgresql/15/bin/postgres',
  initdb: '/usr/lib/postgresql/15/bin/initdb',
  setpriv: '/usr/bin/setpriv',
};
export const DEBIAN_PACKAGES = ['haproxy', 'pgbouncer', 'postgresql-15'];
const INSTALL_TIMEOUT_MS = 600_000;

const missing = () => Object.values(PROGRAMS).filter((program) => !existsSync(program));

/** Undefined when the fleet can run; else why not, in one line. */
export async function fleetSkipReason(): Promise<string | undefined> {
  if (process.platform !== 'linux') return 'the fleet needs Linux network namespaces';
  if (process.getuid?.() !== 0) return 'the fleet needs root (network namespaces, routes, apt-get)';
  try {
    await run('ip', ['netns', 'list']);
  } catch (err) {
    return `ip netns does not work here: ${(err as Error).message}`;
  }
  if (missing().length === 0) return undefined;
  try {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    await run('apt-get', ['update', '-qq'], { timeoutMs: INSTALL_TIMEOUT_MS, env });
    await run('apt-get', ['install', '-y', '-qq', ...DEBIAN_PACKAGES], { timeoutMs: INSTALL_TIMEOUT_MS, env });
  } catch (err) {
    return `apt-get could not install ${DEBIAN_PACKAGES.join(', ')}: ${(err as Error).message.split('\n')[0]}`;
  }
  const still = missing();
  return still.length === 0 ? undefined : `missing after apt-get install: ${still.join(', ')}`;
}
