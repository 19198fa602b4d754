import type { Request, Response } from 'restify';
import type { CallerKey } from '../domain/requests.ts';

/** What the gateway's checks learn about a request as it passes them. */
export interface GatewayRequest extends Request {
  /** performance.now() when the gateway's first step saw the request. */
  arrivedMs: number;
  requestId: string;
  clientIp: string;
  rawBody?: Buffer;
  caller?: CallerKey;
  /** The SHA-256 of the caller's secret, by which known-keys.ts remembers it. */
  callerHash?: string;
  /** Authentication looked the key up for this request; false while a key known from memory is unchecked. */
  callerChecked?: boolean;
}

/** Nothing: go on; false: the answer is written, stop; an error: refuse (refusals.ts). */
export type Next = (result?: false | Error) => void;
export type Handler = (req: GatewayRequest, res: Response, next: Next) => void;
