// A full garbage collection on demand, through the in-process inspector: a public API that needs
// no flag and opens no port. V8 does not shrink an idle heap, so what a flood of connections grew
// would otherwise stay committed for as long as the process sits quiet after it.
import { Session } from 'node:inspector';

let session: Session | null | undefined;

export function collectGarbage(): void {
  if (session === undefined) {
    try {
      session = new Session();
      session.connect();
    } catch {
      // A Node built without the inspector: V8 collects when it next needs room.
      session = null;
    }
  }
  session?.post('HeapProfiler.collectGarbage');
}
