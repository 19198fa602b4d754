// A full garbage collection on demand, through the in-process inspector: a public API that needs
// no flag and opens no port. V8 does not shrink an idle heap, so what a flood of connections grew
// would otherwise stay committed for as long as the process sits quiet after it.
import { Session } from 'node:inspector';

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
