// How many web processes share the database, this one included: each says it is alive every few
// seconds (web_processes), and the request limits size their leases by the count.
import { randomUUID } from 'node:crypto';
import { queryFile, type Queryable } from '../lib/pool.ts';
import { errorFields, type Logger } from '../lib/log.ts';

const BEAT_MS = 5000;
/** A process is counted while it was seen this recently: three beats, so one late beat does not drop it. */
const ALIVE_S = 15;

export class WebProcesses {
  readonly id = randomUUID();
  #count = 1;
  #timer: NodeJS.Timeout | undefined;
  #warned = false;
  readonly #db: Queryable;
  readonly #log: Logger;

  constructor(db: Queryable, log: Logger) {
    this.#db = db;
    this.#log = log;
  }

  /** The processes alive as last counted (at least this one). */
  get count(): number {
    return this.#count;
  }

  /** Counted before it serves, so that the others size their leases with it from its first request. */
  async start(): Promise<void> {
    await this.#beat();
    this.#timer = setInterval(() => void this.#beat(), BEAT_MS);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await queryFile(this.#db, 'web_process_leave', [this.id]).catch(() => {});
  }

  async #beat(): Promise<void> {
    try {
      const [row] = await queryFile<{ processes: number }>(this.#db, 'web_process_beat', [this.id, ALIVE_S]);
      this.#count = Math.max(1, row!.processes);
      this.#warned = false;
    } catch (err) {
      // The count last known stands; the database being away is answered elsewhere.
      if (!this.#warned) this.#log.warn({ err: errorFields(err) }, 'could not count the web processes');
      this.#warned = true;
    }
  }
}
