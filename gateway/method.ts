// Step 2: a method the gateway never accepts is 405, whatever the path.
import { errors } from '../domain/errors.ts';
import type { Handler } from './types.ts';

const ACCEPTED_METHODS = new Set(['GET', 'POST', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);

export function acceptedMethods(): Handler {
  return function refuseUnknownMethod(req, res, next) {
    // `OPTIONS *` and absolute-form targets name no path of ours; restify would answer them bare.
    if (ACCEPTED_METHODS.has(req.method ?? '') && !req.url?.startsWith('/')) return next(errors.gatewayNotFound());
    if (ACCEPTED_METHODS.has(req.method ?? '')) return next();
    res.setHeader('Allow', [...ACCEPTED_METHODS].join(', '));
    next(errors.methodNotAllowed());
  };
}
