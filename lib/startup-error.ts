// A reason a process cannot start that the person starting it can act on (a port taken, a
// directory the database cannot reach): its message is one line naming the cause and the fix,
// printed as it is, without a stack trace (bin/lifecycle.ts).
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** An error's message as the one line a command prints on stderr (never its stack). */
export function oneLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, ' ');
}
