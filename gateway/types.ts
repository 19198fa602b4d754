import type { Request, Response } from 'restify';
import type { CallerKey } from '../domain/requests.ts';

/** What the gateway's checks learn about a request as it passes them. */
export interface GatewayRequest extends Request {
  requestId: string;
  clientIp: string;
  rawBody?: Buffer;
  caller?: CallerKey;
}

export type Next = (err?: false) => void;
export type Handler = (req: GatewayRequest, res: Response, next: Next) => void;
