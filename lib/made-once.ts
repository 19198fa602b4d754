// A key the service makes for itself the first time it needs one, kept in a file under DATA_DIR.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The file's text, or `make()`'s written there first. Written with O_EXCL, so processes of one
 * host starting together all keep the one that was written first.
 */
export function readOrMakeOnce(dir: string, name: string, make: () => string): string {
  const file = path.join(dir, name);
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const made = make();
  mkdirSync(dir, { recursive: true });
  try {
    writeFileSync(file, made, { flag: 'wx', mode: 0o600 });
    return made;
  } catch (raced) {
    if ((raced as NodeJS.ErrnoException).code !== 'EEXIST') throw raced;
    return readFileSync(file, 'utf8');
  }
}
