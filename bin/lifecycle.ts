// What every entry point shares: config read once, a logger, the database, and shutdown on signal.
import { checkListenPorts } from '../lib/ports.ts';
import { readConfig, type Config } from '../lib/config.ts';
import { openDatabase, type DatabaseHandle } from '../lib/open-database.ts';
import { createLogger, errorFields, flushLog, type Logger } from '../lib/log.ts';
import { oneLine, StartupError } from '../lib/startup-error.ts';

/** Asynchronous log lines still buffered would be lost to a bare process.exit. */
function exit(log: Logger, code: number): void {
  flushLog(log, () => process.exit(code));
  setTimeout(() => process.exit(code), 1000).unref();
}

export interface Running {
  stop(): Promise<void>;
}

export interface ProcessOptions {
  /** The process serves HTTPS and HTTP: their ports are checked before anything starts. */
  listens?: boolean;
}

/** A process exits within this long of SIGTERM even if something hangs. */
const SHUTDOWN_DEADLINE_MS = 10_000;
/**
 * SIGHUP too: a closed terminal sends it, and Node's default for it is to die on the spot,
 * leaving the embedded PostgreSQL this process started running with nobody to stop it.
 */
const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

export async function runProcess(
  name: string,
  start: (config: Config, log: Logger, database: DatabaseHandle) => Promise<Running[]>,
  options: ProcessOptions = {},
): Promise<void> {
  let config: Config;
  try {
    config = readConfig();
  } catch (err) {
    // Before any logger: the one line is all there is.
    process.stderr.write(`${name}: ${oneLine(err)}\n`);
    process.exit(1);
  }
  const log = createLogger(config.logLevel, name, config.logFile, { gathered: true });
  let stopping = false;
  let database: DatabaseHandle | undefined;
  try {
    if (options.listens) await checkListenPorts(config);
    database = await openDatabase(config, log);
    const parts = await start(config, log, database);
    // The lines of the start (listening, its ports) go out now, not with the next 4 kB of them.
    log.flush();
    if (parts.length === 0) {
      // A one-shot step (release): done once start returns.
      await database.release();
      return exit(log, 0);
    }
    const opened = database;
    const shutdown = async (cause: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal: cause }, 'shutting down');
      setTimeout(() => {
        log.error('shutdown deadline passed; exiting');
        process.exit(1);
      }, SHUTDOWN_DEADLINE_MS).unref();
      for (const part of parts) await part.stop().catch((err) => log.error({ err: errorFields(err) }, 'stop failed'));
      await opened.release().catch((err) => log.error({ err: errorFields(err) }, 'database stop failed'));
      log.info('stopped');
      exit(log, 0);
    };
    for (const signal of STOP_SIGNALS) process.on(signal, () => void shutdown(signal));
    // Started by bin/detach.ts (`npm start`): its IPC channel closes when it dies, however it dies.
    if (process.channel) {
      process.channel.unref();
      if (!process.connected) void shutdown('disconnect');
      else process.once('disconnect', () => void shutdown('disconnect'));
    }
  } catch (err) {
    if (err instanceof StartupError) {
      log.fatal({ reason: err.message }, 'could not start');
      process.stderr.write(`${name}: ${err.message}\n`);
    } else {
      // The log has the stack; whoever started the process sees the reason, in one line.
      log.fatal({ err: errorFields(err) }, 'could not start');
      process.stderr.write(`${name}: could not start: ${oneLine(err)}\n`);
    }
    // An embedded PostgreSQL this process started must not outlive it.
    await database?.release().catch((releaseErr) => log.error({ err: errorFields(releaseErr) }, 'database stop failed'));
    exit(log, 1);
  }
}
