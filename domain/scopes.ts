// The one scope rule, used both by the gateway's per-route check and by key creation.

export const SCOPE_RESOURCES = ['key', 'app', 'event', 'run', 'file', 'team', 'feedback', 'catalog', 'usage', 'reasoning'] as const;
const SCOPE_ACTIONS = ['read', 'write', '*'];

export function isKnownScope(entry: unknown): entry is string {
  if (entry === '*') return true;
  if (typeof entry !== 'string') return false;
  const [resource, action, ...rest] = entry.split(':');
  return rest.length === 0 && action !== undefined
    && (SCOPE_RESOURCES as readonly string[]).includes(resource!) && SCOPE_ACTIONS.includes(action);
}

/**
 * Whether a key holding `granted` may act with `wanted`: it holds `*`, or `<resource>:*` for the
 * wanted scope's resource, or the exact scope. Read with `wanted` = a requested scope this is also
 * the subset rule for new keys: `*` is within `*` alone, `<resource>:*` within `*` or itself.
 */
export function holdsScope(granted: readonly string[], wanted: string): boolean {
  if (granted.includes('*') || granted.includes(wanted)) return true;
  const colon = wanted.indexOf(':');
  return colon > 0 && granted.includes(`${wanted.slice(0, colon)}:*`);
}
