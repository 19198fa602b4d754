// A full garbage collection on demand, through the in-process inspector: a public API that needs
// no flag and opens no port. V8 does not shrink an idle heap, so what a flood of connections grew
// would otherwise stay committed for as long as the process sits quiet after it.
import { Session } from 'node:inspector';
import { performance } from 'node:perf_hooks';
import { errorFields, type Logger } from './log.ts';

let session: Session | null | undefined;

/** Resolves once the collection has run: V8 runs it in a task of its own, after the caller's. */
export function collectGarbage(): Promise<void> {
  if (session === undefined) {
    try {
      session = new Session();
      session.connect();
    } catch {
      // A Node built without the inspector: V8 collects when it next needs room.
      session = null;
    }
  }
  const open = session;
  if (!open) return Promise.resolve();
  return new Promise((resolve) => open.post('HeapProfiler.collectGarbage', () => resolve()));
}

/** How long after a cut its collection is looked at: cuts meanwhile join it. */
const DELAY_MS = 2000;

/**
 * Collections after connections cut on purpose. DELAY_MS after a cut, the heap is collected if the
 * process has grown by `growthBytes` since the last collection while cuts go on, or by a quarter
 * of it once they have stopped (what the last ones left). A full collection holds the event loop
 * (up to 160 ms under a flood), so cuts that cost no memory, a trickle of slow clients, lead to none.
 */
export class CollectionAfterCuts {
  readonly #growthBytes: number;
  readonly #log: Logger;
  #cuts = 0;
  #lastCutMs = 0;
  #timer: NodeJS.Timeout | undefined;
  #rssCollected = process.memoryUsage.rss();

  constructor(growthBytes: number, log: Logger) {
    this.#growthBytes = growthBytes;
    this.#log = log;
  }

  cut(): void {
    this.#cuts++;
    this.#lastCutMs = performance.now();
    this.#timer ??= this.#lookIn(DELAY_MS);
  }

  #lookIn(ms: number): NodeJS.Timeout {
    return setTimeout(() => {
      this.#collectIfGrown().catch((err: unknown) => this.#log.warn({ err: errorFields(err) }, 'heap collection after cuts failed'));
    }, ms).unref();
  }

  async #collectIfGrown(): Promise<void> {
    const before = process.memoryUsage.rss();
    const quietMs = performance.now() - this.#lastCutMs;
    const settled = quietMs >= DELAY_MS;
    if (before - this.#rssCollected < (settled ? this.#growthBytes / 4 : this.#growthBytes)) {
      this.#timer = settled ? undefined : this.#lookIn(DELAY_MS - quietMs);
      return;
    }
    const cuts = this.#cuts;
    this.#cuts = 0;
    const startedMs = performance.now();
    await collectGarbage();
    this.#rssCollected = process.memoryUsage.rss();
    // Cuts during the collection wait for the next.
    this.#timer = this.#cuts > 0 ? this.#lookIn(DELAY_MS) : undefined;
    this.#log.info({
      cut: cuts, rssMb: Math.round(before / 2 ** 20), freedMb: Math.round((before - this.#rssCollected) / 2 ** 20),
      ms: Math.round(performance.now() - startedMs),
    }, 'heap collected after connections were cut');
  }
}
