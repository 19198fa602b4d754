// Temporary directories of a test process, made under os.tmpdir() (which test/run.ts points at the
// run's own directory) and removed when the process exits, however its tests ended.
// TEST_KEEP_TMP=1 keeps them, and the run's directory, for looking into after a failure.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const made = new Set<string>();

process.on('exit', () => {
  if (process.env.TEST_KEEP_TMP) return;
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A new directory `<tmpdir>/<prefix>XXXXXX`, removed at exit. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}

/** Removes a directory of tempDir's now. */
export function removeTempDir(dir: string): void {
  if (process.env.TEST_KEEP_TMP) return;
  rmSync(dir, { recursive: true, force: true });
  made.delete(dir);
}
