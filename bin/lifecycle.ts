// What every entry point shares: config read once, a logger, the database, and shutdown on signal.
import { readConfig, type Config } from '../lib/config.ts';
import { openDatabase, type DatabaseHandle } from '../lib/database.ts';
import { createLogger, errorFields, flushLog, type Logger } from '../lib/log.ts';
import { StartupError } from '../lib/startup-error.ts';

/** Asynchronous log lines still buffered would be lost to a bare process.exit. */
function exit(log: Logger, code: number): void {
  flushLog(log, () => process.exit(code));
  setTimeout(() => process.exit(code), 1000).unref();
}

export interface Running {
  stop(): Promise<void>;
}

/** A process exits within this long of SIGTERM even if something hangs. */
const SHUTDOWN_DEADLINE_MS = 10_000;

export async function runProcess(
  name: string,
  start: (config: Config, log: Logger, database: DatabaseHandle) => Promise<Running[]>,
): Promise<void> {
  const config = readConfig();
  const log = createLogger(config.logLevel, name, config.logFile);
  let stopping = false;
  try {
    const database = await openDatabase(config, log);
    const parts = await start(config, log, database);
    if (parts.length === 0) {
      // A one-shot step (release): done once start returns.
      await database.release();
      return exit(log, 0);
    }
    const shutdown = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'shutting down');
      setTimeout(() => {
        log.error('shutdown deadline passed; exiting');
        process.exit(1);
      }, SHUTDOWN_DEADLINE_MS).unref();
      for (const part of parts) await part.stop().catch((err) => log.error({ err: errorFields(err) }, 'stop failed'));
      await database.release().catch((err) => log.error({ err: errorFields(err) }, 'database stop failed'));
      exit(log, 0);
    };
    process.on('SIGTERM', () => void shutdown('SIGTERM'));
    process.on('SIGINT', () => void shutdown('SIGINT'));
  } catch (err) {
    if (err instanceof StartupError) {
      log.fatal({ reason: err.message }, 'could not start');
      process.stderr.write(`${name}: ${err.message}\n`);
    } else {
      log.fatal({ err: errorFields(err) }, 'could not start');
    }
    exit(log, 1);
  }
}
