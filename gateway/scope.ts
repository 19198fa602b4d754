// Step 7: the route's scope, by the one rule in domain/scopes.ts.
import { errors } from '../domain/errors.ts';
import { holdsScope } from '../domain/scopes.ts';
import { sendError } from './envelope.ts';
import type { KnownKeys } from './known-keys.ts';
import type { Handler } from './types.ts';

export function requireScope(scope: string, known: KnownKeys): Handler {
  return function checkScope(req, res, next) {
    if (req.caller && holdsScope(req.caller.scope, scope)) return next();
    known.answerAfterCheck(req, res, () => sendError(res, errors.missingScope(scope)), () => next(false));
  };
}
