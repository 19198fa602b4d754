// The one scope rule, used both by the gateway's per-route check and by key creation.

export const SCOPE_RESOURCES = ['key', 'app', 'event', 'webhook', 'run', 'file', 'team', 'feedback', 'catalog', 'usage', 'reasoning'] as const;
const SCOPE_ACTIONS = ['read', 'write', '*'] as const;

/** Every scope a key may hold: `*`, or `<resource>:<action>`. */
export const KNOWN_SCOPES: readonly string[] = ['*', ...SCOPE_RESOURCES.flatMap((resource) => SCOPE_ACTIONS.map((action) => `${resource}:${action}`))];
const KNOWN = new Set(KNOWN_SCOPES);

export function isKnownScope(entry: unknown): entry is string {
  return typeof entry === 'string' && KNOWN.has(entry);
}

/** Whether `granted` covers `wanted` (`*`, `<resource>:*` or exact); also the subset rule for new keys. */
export function holdsScope(granted: readonly string[], wanted: string): boolean {
  if (granted.includes('*') || granted.includes(wanted)) return true;
  const colon = wanted.indexOf(':');
  return colon > 0 && granted.includes(`${wanted.slice(0, colon)}:*`);
}
