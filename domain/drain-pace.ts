// The pace of a process's audit drains. A batch's round trips cost the worker and the database far
// more than its events do, so under a heavy stream of changes the batches are spaced out to gather
// more events each (docs/performance.md, "The audit drain's pace").
import { setTimeout as sleep } from 'node:timers/promises';

/** When the process's next drain batch may begin; one batch at a time, whichever drain takes it. */
export class DrainPace {
  #notBefore = 0;
  #lastBegan = 0;
  #underWay: Promise<void> | undefined;
  readonly gatherMs: number;
  readonly fromRate: number;
  readonly fromEvents: number;

  /**
   * @param gatherMs how long after a batch began the next begins, once a batch of `fromEvents` or
   *   more came at `fromRate` a second or more (since the batch before began): a burst of a few
   *   changes is not a stream. A full batch (a backlog) or a slower stream goes on at once.
   */
  constructor(gatherMs: number, fromRate: number, fromEvents: number) {
    this.gatherMs = gatherMs;
    this.fromRate = fromRate;
    this.fromEvents = fromEvents;
  }

  /** Waits for the batch under way and the gathering time; the answer is called with the batch's size once it ends. */
  async begin(signal?: AbortSignal): Promise<(events: number, full: boolean) => void> {
    for (;;) {
      // One reading of the clock: a second one, a millisecond later, could make the wait negative.
      const wait = this.#notBefore - Date.now();
      if (this.#underWay) await this.#underWay;
      else if (signal?.aborted || wait <= 0) break;
      else await sleep(wait, undefined, { signal }).catch(() => undefined);
    }
    let ended!: () => void;
    this.#underWay = new Promise((resolve) => { ended = resolve; });
    const began = Date.now();
    return (events, full) => {
      const rate = (events * 1000) / Math.max(1, began - this.#lastBegan);
      this.#lastBegan = began;
      this.#notBefore = events >= this.fromEvents && !full && rate >= this.fromRate ? began + this.gatherMs : 0;
      this.#underWay = undefined;
      ended();
    };
  }
}
