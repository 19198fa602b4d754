// One line per request, but a flood of refusals must not fill the disk: 4xx answers are logged at
// most REFUSAL_LINES_PER_SECOND per client address and second; what was left out is counted, and
// the count logged once a second per address.
import type { Logger } from '../lib/log.ts';
import { loggablePath } from '../domain/secrets.ts';

export interface RequestLine {
  requestId: string;
  method: string;
  path: string;
  status: number;
  ms: number;
  keyId: string | undefined;
  clientIp: string;
}

export interface RequestLog {
  record(line: RequestLine): void;
  stop(): void;
}

export const REFUSAL_LINES_PER_SECOND = 5;
/** Addresses counted apart in one second; past it, further ones are counted together. */
const MAX_COUNTED_ADDRESSES = 10_000;
const OTHER_ADDRESSES = 'other addresses';

export function createRequestLog(log: Logger): RequestLog {
  /** Refusal lines written this second, and lines left out, by address. */
  let written = new Map<string, number>();
  const leftOut = new Map<string, number>();
  const tick = setInterval(() => {
    written = new Map();
    for (const [address, count] of leftOut) log.warn({ clientIp: address, omitted: count }, 'refused requests not logged');
    leftOut.clear();
  }, 1000).unref();
  return {
    record(line) {
      const { clientIp, path, ...rest } = line;
      if (line.status >= 400 && line.status < 500) {
        const key = written.has(clientIp) || written.size < MAX_COUNTED_ADDRESSES ? clientIp : OTHER_ADDRESSES;
        const n = written.get(key) ?? 0;
        if (n >= REFUSAL_LINES_PER_SECOND) {
          leftOut.set(key, (leftOut.get(key) ?? 0) + 1);
          return;
        }
        written.set(key, n + 1);
      }
      log.info({ ...rest, clientIp, path: loggablePath(path) }, 'request');
    },
    stop() {
      clearInterval(tick);
    },
  };
}
