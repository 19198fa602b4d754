// A web process's watch on its database's host. A host gone silent (cut off, packets dropped)
// ends no connection: a statement in flight would wait for its own bound (statement timeout +
// 1 s) and a new connection for its connect timeout. The gateway's thread asks a statement of
// its own every quarter of DB_SILENCE_MS; unanswered that long while no other connection of the
// thread read a byte, the host is silent: every thread cuts its connections to it (what is in
// flight fails, 503) and each new one fails at once, until the watch's statement is answered again.
import { Socket } from 'node:net';
import { BroadcastChannel } from 'node:worker_threads';
import type pg from 'pg';
import { errorFields, type Logger } from './log.ts';
import { SocketClient, socketOf } from './pg-internals.ts';
import { CHANNEL, databaseSockets, isSilent, setSilent, type SilenceMessage } from './database-sockets.ts';

/** A check that ran this late (the event loop was busy) proves nothing: answers may be unread. */
const LATE_CHECK_MS = 100;
const CHECK_EVERY_MS = 100;

export interface DatabaseWatch {
  stop(): Promise<void>;
}

/** Starts the watch in the gateway's thread; `silenceMs` 0 starts none. */
export function watchDatabase(connectionString: string, silenceMs: number, log: Logger): DatabaseWatch {
  if (silenceMs === 0) return { stop: async () => {} };
  const everyMs = Math.max(1, Math.floor(silenceMs / 4));
  const channel = new BroadcastChannel(CHANNEL);
  channel.unref();
  let stopped = false;
  let client: pg.Client | undefined;
  /** When the watch's connect or statement now outstanding was sent. */
  let askedAtMs: number | undefined;
  let silentSinceMs = 0;
  let bytesRead = 0;
  let bytesMovedAtMs = Date.now();
  let checkDueMs = Date.now() + CHECK_EVERY_MS;

  const announce = (silent: boolean) => {
    const message: SilenceMessage = { database: connectionString, silent };
    setSilent(message);
    channel.postMessage(message);
  };
  const drop = () => {
    const old = client;
    client = undefined;
    if (!old) return;
    old.end().catch(() => {});
    // end() waits for what is in flight; the socket goes now.
    socketOf(old).destroy();
  };

  const check = () => {
    const nowMs = Date.now();
    const late = nowMs - checkDueMs > LATE_CHECK_MS;
    checkDueMs = nowMs + CHECK_EVERY_MS;
    let read = 0;
    for (const socket of databaseSockets(connectionString)) read += socket.bytesRead;
    if (read !== bytesRead) {
      bytesRead = read;
      bytesMovedAtMs = nowMs;
    }
    if (isSilent(connectionString) || late || askedAtMs === undefined) return;
    if (nowMs - askedAtMs < silenceMs || nowMs - bytesMovedAtMs < silenceMs) return;
    silentSinceMs = nowMs;
    log.warn({ silentMs: nowMs - askedAtMs }, 'database host silent: connections cut, requests answered 503 until it answers');
    announce(true);
    drop();
  };
  const checker = setInterval(check, CHECK_EVERY_MS);
  checker.unref();

  const ask = async () => {
    while (!stopped) {
      const started = Date.now();
      try {
        if (!client) {
          // A plain socket: the watch's own connection is neither cut nor refused by the silence.
          const made = new SocketClient({
            connectionString, connectionTimeoutMillis: silenceMs, keepAlive: true, application_name: 'pms-database-watch',
          }, () => new Socket());
          made.on('error', () => { if (client === made) drop(); });
          client = made;
          askedAtMs = Date.now();
          await made.connect();
        }
        askedAtMs = Date.now();
        await client.query('SELECT 1');
        askedAtMs = undefined;
        if (isSilent(connectionString)) {
          log.info({ silentMs: Date.now() - silentSinceMs }, 'database host answers again');
          announce(false);
        }
      } catch (err) {
        askedAtMs = undefined;
        if (!stopped && !isSilent(connectionString)) log.debug({ err: errorFields(err) }, 'database watch failed');
        drop();
      }
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + everyMs - Date.now())).unref());
    }
  };
  void ask();

  return {
    async stop() {
      stopped = true;
      clearInterval(checker);
      drop();
      channel.close();
    },
  };
}
