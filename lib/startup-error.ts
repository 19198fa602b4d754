// A reason a process cannot start that its operator can act on: one line naming the cause and the
// fix, printed without a stack trace.
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** An error's message as the one line a command prints on stderr (never its stack). */
export function oneLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, ' ');
}
