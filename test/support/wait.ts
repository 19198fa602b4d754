// Time in tests: the clock in Unix seconds, sleeping, and polling until something holds.

export const nowSeconds = () => Math.floor(Date.now() / 1000);

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs`.
 * `what` names what is awaited; as a function it is asked only on timeout, so it can tell the
 * last state seen.
 */
export async function waitFor<T>(what: string | (() => string), probe: () => Promise<T | undefined>, timeoutMs = 5000, intervalMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(typeof what === 'string' ? `timed out waiting for ${what}` : what());
    await sleep(intervalMs);
  }
}
