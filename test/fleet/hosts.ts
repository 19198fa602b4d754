// The fleet's network, as root: one network namespace per host, each joined by a veth pair to a
// router namespace that routes 10.77.0.0/24 between them. A host is cut off silently by two
// blackhole rules in the router (nothing answers, not even ICMP), as a dead host or a dropped link is.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Every namespace of the fleet starts with this; a stale one from a killed run is found by it. */
export const NAMESPACE_PREFIX = 'pmsf-';
const ROUTER = `${NAMESPACE_PREFIX}router`;
const ROUTER_ADDRESS = '10.77.0.1';
const SUBNET = '10.77.0.0/24';

export type HostName = 'db' | 'lb' | 'web1' | 'web2' | 'worker1' | 'worker2' | 'client';

export const HOSTS: Record<HostName, string> = {
  db: '10.77.0.20',
  lb: '10.77.0.10',
  web1: '10.77.0.31',
  web2: '10.77.0.32',
  worker1: '10.77.0.41',
  worker2: '10.77.0.42',
  client: '10.77.0.50',
};

export const namespaceOf = (host: HostName) => `${NAMESPACE_PREFIX}${host}`;
/** The router's end of a host's veth pair (at most 15 characters). */
const routerLink = (host: HostName) => `pf-${host}`;
/** Rule priorities of a host's cut: after the local table (0), before main (32766). */
const cutPriority = (host: HostName) => 100 + 2 * Object.keys(HOSTS).indexOf(host);

export async function run(command: string, args: string[], { timeoutMs = 30_000, env = process.env } = {}): Promise<string> {
  try {
    const { stdout } = await execFileAsync(command, args, { timeout: timeoutMs, env, maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const { stderr, message } = err as { stderr?: string; message: string };
    throw new Error(`${command} ${args.join(' ')}: ${(stderr || message).trim()}`);
  }
}

const inRouter = (...args: string[]) => run('ip', ['netns', 'exec', ROUTER, ...args]);
const inHost = (host: HostName, ...args: string[]) => run('ip', ['netns', 'exec', namespaceOf(host), ...args]);

export async function fleetNamespaces(): Promise<string[]> {
  const listed = await run('ip', ['netns', 'list']);
  return listed.split('\n').map((line) => line.split(' ')[0]!).filter((name) => name.startsWith(NAMESPACE_PREFIX));
}

/** Kills every process in the fleet's namespaces and deletes them (their links go with them). */
export async function destroyNetwork(): Promise<void> {
  for (const ns of await fleetNamespaces()) {
    const pids = (await run('ip', ['netns', 'pids', ns]).catch(() => '')).split('\n').map(Number).filter((pid) => pid > 0);
    for (const pid of pids) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
    await run('ip', ['netns', 'del', ns]).catch(() => undefined);
  }
}

/** The same at once, for a process stopped by a signal, which has no time to wait. */
export function destroyNetworkSync(): void {
  const sync = (args: string[]) => {
    try {
      return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 });
    } catch {
      return '';
    }
  };
  const namespaces = sync(['netns', 'list']).split('\n').map((line) => line.split(' ')[0]!).filter((name) => name.startsWith(NAMESPACE_PREFIX));
  for (const ns of namespaces) {
    for (const pid of sync(['netns', 'pids', ns]).split('\n').map(Number).filter((p) => p > 0)) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
    sync(['netns', 'del', ns]);
  }
}

export async function createNetwork(): Promise<void> {
  await run('ip', ['netns', 'add', ROUTER]);
  await inRouter('ip', 'link', 'set', 'lo', 'up');
  await inRouter('sysctl', '-q', '-w', 'net.ipv4.ip_forward=1');
  for (const [host, address] of Object.entries(HOSTS) as Array<[HostName, string]>) {
    const ns = namespaceOf(host);
    await run('ip', ['netns', 'add', ns]);
    await run('ip', ['link', 'add', routerLink(host), 'netns', ROUTER, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
    await inHost(host, 'ip', 'link', 'set', 'lo', 'up');
    await inHost(host, 'ip', 'addr', 'add', `${address}/32`, 'dev', 'eth0');
    await inHost(host, 'ip', 'link', 'set', 'eth0', 'up');
    await inHost(host, 'ip', 'route', 'add', `${ROUTER_ADDRESS}/32`, 'dev', 'eth0', 'scope', 'link');
    await inHost(host, 'ip', 'route', 'add', SUBNET, 'via', ROUTER_ADDRESS, 'dev', 'eth0');
    await inRouter('ip', 'addr', 'add', `${ROUTER_ADDRESS}/32`, 'dev', routerLink(host));
    await inRouter('ip', 'link', 'set', routerLink(host), 'up');
    await inRouter('ip', 'route', 'add', `${address}/32`, 'dev', routerLink(host), 'scope', 'link');
  }
}

/** Every packet to or from the host is dropped in the router, silently. */
export async function cut(host: HostName): Promise<void> {
  const priority = cutPriority(host);
  await inRouter('ip', 'rule', 'add', 'to', `${HOSTS[host]}/32`, 'blackhole', 'priority', String(priority));
  await inRouter('ip', 'rule', 'add', 'iif', routerLink(host), 'blackhole', 'priority', String(priority + 1));
}

export async function restore(host: HostName): Promise<void> {
  const priority = cutPriority(host);
  await inRouter('ip', 'rule', 'del', 'priority', String(priority)).catch(() => undefined);
  await inRouter('ip', 'rule', 'del', 'priority', String(priority + 1)).catch(() => undefined);
}
