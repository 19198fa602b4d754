// A wait that ends at a moment on performance.now()'s clock, to within the event loop's turn,
// whenever it began. setTimeout alone cannot: it sleeps whole milliseconds counted from when it
// was called, so a wait for 3.4 ms ends 0.6 ms late, and a wait begun 0.3 ms later in the same
// millisecond ends at another point of it. Two ways of reaching the same deadline (a refusal after
// one lookup, another after a thread hop) would end apart by the fractions of their starts. So the
// fraction is spent first, a turn of the loop at a time (setImmediate: other requests are served
// in between), and only whole milliseconds are left to the timer.
import { performance } from 'node:perf_hooks';

/** A deadline's leftover smaller than this is not worth turns of the loop: the timer oversleeps more. */
const FRACTION_SPENT_TO_MS = 0.02;

export function waitUntil(deadlineMs: number): Promise<void> {
  return new Promise((resolve) => {
    const step = () => {
      const left = deadlineMs - performance.now();
      // A deadline that is not a moment (NaN, infinite) is no reason to hold an answer.
      if (!Number.isFinite(left) || left <= 0) {
        resolve();
        return;
      }
      const whole = Math.floor(left);
      // A timer may also wake up to a millisecond early: what is left then is spent turn by turn.
      if (whole === 0 || left - whole > FRACTION_SPENT_TO_MS) setImmediate(step);
      else setTimeout(step, whole);
    };
    step();
  });
}
