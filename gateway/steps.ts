// restify runs each handler on a tick of its own, with a timer and closures, so the gateway's
// steps run here as one handler on each side of the router. A step refuses by next(err).
import type { Refusals } from './refusals.ts';
import type { Handler, Next } from './types.ts';

/** One restify handler running `steps` in order: next() goes on, next(false) ends, next(err) refuses. */
export function inSequence(steps: readonly Handler[], { refuse }: Refusals): Handler {
  return function gatewaySteps(req, res, next) {
    let index = 0;
    const step: Next = (result) => {
      if (result === false) return next(false);
      if (result !== undefined) return refuse(req, res, result, () => next(false));
      const handler = steps[index++];
      if (handler === undefined) return next();
      handler(req, res, step);
    };
    step();
  };
}
