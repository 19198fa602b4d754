// Step 7: the route's scope, by the one rule in domain/scopes.ts.
import { errors } from '../domain/errors.ts';
import { holdsScope } from '../domain/scopes.ts';
import type { Handler } from './types.ts';

export function requireScope(scope: string): Handler {
  return function checkScope(req, _res, next) {
    if (req.caller && holdsScope(req.caller.scope, scope)) return next();
    next(errors.missingScope(scope));
  };
}
