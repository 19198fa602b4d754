// The balancer host: HAProxy terminating TLS, checking /readyz of both web hosts over TLS, and its
// stats socket, which the test reads to see when a server is taken out and how many it was sent.
import { writeFileSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { errors, TITLES } from '../../domain/errors.ts';
import { fill } from './database.ts';
import { HOSTS } from './hosts.ts';
import { PROGRAMS } from './packages.ts';
import { HostProcess } from './processes.ts';

export const PUBLIC_URL = `https://${HOSTS.lb}`;
const READY_MS = 15_000;

export interface ServerState {
  status: string;
  /** Sessions (requests) sent to the server so far. */
  sessions: number;
}

/** What HAProxy answers with no web host in: the service's own 503, Retry-After included. */
function errorfile503(): string {
  const err = errors.unavailable();
  const body = JSON.stringify({ code: 503, title: TITLES[503], response: err.message });
  return [
    'HTTP/1.1 503 Service Unavailable',
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `Retry-After: ${err.retryAfterSeconds}`,
    'Cache-Control: no-store',
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

export class Balancer {
  readonly dir: string;
  readonly statsSocket: string;
  haproxy: HostProcess | undefined;

  constructor(dir: string) {
    this.dir = dir;
    this.statsSocket = path.join(dir, 'haproxy.sock');
  }

  async start(tls: { cert: string; key: string; caFile: string }): Promise<void> {
    const pem = path.join(this.dir, 'lb.pem');
    writeFileSync(pem, `${tls.cert}\n${tls.key}\n`, { mode: 0o600 });
    const errorfile = path.join(this.dir, '503.http');
    writeFileSync(errorfile, errorfile503());
    const cfg = path.join(this.dir, 'haproxy.cfg');
    writeFileSync(cfg, fill(readFileSync(path.join(import.meta.dirname, 'haproxy.cfg'), 'utf8'), {
      STATS_SOCKET: this.statsSocket, LB_ADDRESS: HOSTS.lb, LB_PEM: pem, PUBLIC_HOST: HOSTS.lb,
      ERRORFILE_503: errorfile, CA_FILE: tls.caFile, WEB1_ADDRESS: HOSTS.web1, WEB2_ADDRESS: HOSTS.web2,
    }));
    this.haproxy = new HostProcess('haproxy', 'lb', [PROGRAMS.haproxy, '-db', '-f', cfg], path.join(this.dir, 'haproxy.log'));
    await this.haproxy.waitUntil('its stats socket', async () => (await this.command('show info').catch(() => '')).includes('Name: HAProxy'), READY_MS);
  }

  /** One command on the stats socket; its whole answer. */
  command(text: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(this.statsSocket);
      let answer = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => { answer += chunk; });
      socket.on('end', () => resolve(answer));
      socket.on('error', reject);
      socket.setTimeout(2000, () => socket.destroy(new Error('stats socket timeout')));
      socket.end(`${text}\n`);
    });
  }

  /** The web servers' states (UP, DOWN, "UP 1/2" while changing …) and their session counts. */
  async servers(): Promise<Record<string, ServerState>> {
    const csv = await this.command('show stat');
    const [head, ...rows] = csv.split('\n').filter((line) => line.length > 0);
    const columns = head!.replace(/^# /, '').split(',');
    const at = (name: string) => columns.indexOf(name);
    const states: Record<string, ServerState> = {};
    for (const row of rows) {
      const cells = row.split(',');
      if (cells[at('pxname')] !== 'web' || cells[at('svname')] === 'BACKEND' || cells[at('svname')] === 'FRONTEND') continue;
      states[cells[at('svname')]!] = { status: cells[at('status')]!, sessions: Number(cells[at('stot')]) };
    }
    return states;
  }

  /** Idle connections HAProxy keeps to a web server, ready for reuse (`show servers conn`). */
  async idleConnections(server: string): Promise<number> {
    const [head, ...rows] = (await this.command('show servers conn web')).split('\n').filter((line) => line.length > 0);
    const columns = head!.replace(/^# /, '').split(' ');
    const row = rows.map((r) => r.split(' ')).find((cells) => cells[0] === `web/${server}`);
    return Number(row?.[columns.indexOf('idle_cur')] ?? NaN);
  }

  async stop(): Promise<void> {
    await this.haproxy?.stop('SIGTERM', 5000);
  }
}
