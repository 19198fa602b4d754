// restify runs each handler of a chain on a tick of its own, with a timer, closures and a
// nextTick each, and the gateway has eight steps: they run here one after another as one handler
// on each side of the router (the checks before routing, the scope and the endpoint after it).
// A step refuses by next(err): the one error path (refusals.ts) answers, and the chain ends.
import type { Refusals } from './refusals.ts';
import type { Handler, Next } from './types.ts';

/** One restify handler that runs `steps` in order: each one's next() starts the following one, next(false) ends the request's chain, next(err) refuses it. */
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
