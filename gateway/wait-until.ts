// A wait that ends at a moment on performance.now()'s clock, to within one event-loop turn.
// setTimeout sleeps whole milliseconds from its call, so two paths to one deadline would end apart
// by their starts' fractions (a timing leak). The fraction is spent first in setImmediate turns,
// and only whole milliseconds are left to the timer.
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
