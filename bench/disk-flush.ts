// The disk's flush latency while the bench runs, beside the embedded PostgreSQL's data: a commit
// answers only once its WAL is flushed, so one slow fdatasync holds every change in flight, and a
// write's p99 at 32 connections follows the disk's stalls more than the service. A small write
// and its fdatasync every PROBE_INTERVAL_MS, on libuv's threads (the load generator's loop shares
// this process); each run then reports the stalls inside its own window.
import { open } from 'node:fs/promises';
import path from 'node:path';

const PROBE_INTERVAL_MS = 20;
/** A flush slower than this is a stall: the disk's usual flush here takes about 0.1 ms. */
export const STALL_MS = 20;

export interface FlushStalls {
  /** Flushes measured in the window. */
  flushes: number;
  /** Of them, those slower than STALL_MS. */
  stalls: number;
  maxMs: number;
}

export class FlushProbe {
  /** [end of the flush (performance.now()), its latency in ms] */
  private readonly flushes: Array<[number, number]> = [];
  private running = true;
  private readonly done: Promise<void>;

  constructor(dir: string) {
    this.done = this.run(path.join(dir, 'flush-probe'));
  }

  private async run(file: string): Promise<void> {
    const handle = await open(file, 'w');
    const block = Buffer.alloc(4096, 1);
    try {
      while (this.running) {
        const started = performance.now();
        await handle.write(block, 0, block.length, 0);
        await handle.datasync();
        const ended = performance.now();
        this.flushes.push([ended, ended - started]);
        await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS));
      }
    } finally {
      await handle.close();
    }
  }

  /** The flushes that ended between `from` and `to` (performance.now()). */
  between(from: number, to: number): FlushStalls {
    const inside = this.flushes.filter(([at]) => at >= from && at <= to).map(([, ms]) => ms);
    return {
      flushes: inside.length,
      stalls: inside.filter((ms) => ms > STALL_MS).length,
      maxMs: Math.round(Math.max(0, ...inside) * 10) / 10,
    };
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}
