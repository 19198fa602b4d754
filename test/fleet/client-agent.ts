// The client host's HTTP client: run in the client namespace with an IPC channel, it sends the
// requests the test asks for (so they come from the client host's address) and answers what came
// back, or the connection error's code. Keep-alive connections per origin, as an API client keeps.
import http from 'node:http';
import https from 'node:https';

export interface AgentRequest {
  id: number;
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
  /** A connection of its own, closed after the answer. */
  fresh?: boolean;
}

export type AgentReply =
  | { id: number; status: number; headers: Record<string, string | string[] | undefined>; text: string }
  | { id: number; error: string; message: string };

const ca = process.env.FLEET_CA ?? '';
let httpsAgent = new https.Agent({ keepAlive: true, ca });
let httpAgent = new http.Agent({ keepAlive: true });

function send(request: AgentRequest): Promise<AgentReply> {
  return new Promise((resolve) => {
    const url = new URL(request.url);
    const secure = url.protocol === 'https:';
    const agent = request.fresh ? false : secure ? httpsAgent : httpAgent;
    const options = { method: request.method, headers: request.headers, agent, ...(secure && request.fresh ? { ca } : {}) };
    const req = (secure ? https : http).request(url, options);
    const timer = setTimeout(() => req.destroy(Object.assign(new Error(`no answer within ${request.timeoutMs} ms`), { code: 'ETESTTIMEOUT' })), request.timeoutMs);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ id: request.id, status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', (err: Error & { code?: string }) => {
        clearTimeout(timer);
        resolve({ id: request.id, error: err.code ?? 'EBODY', message: err.message });
      });
    });
    req.on('error', (err: Error & { code?: string }) => {
      clearTimeout(timer);
      resolve({ id: request.id, error: err.code ?? 'EUNKNOWN', message: err.message });
    });
    req.end(request.body);
  });
}

process.on('message', (message: AgentRequest | { reset: true }) => {
  if ('reset' in message) {
    httpsAgent.destroy();
    httpAgent.destroy();
    httpsAgent = new https.Agent({ keepAlive: true, ca });
    httpAgent = new http.Agent({ keepAlive: true });
    return;
  }
  void send(message).then((reply) => process.send!(reply));
});
process.on('disconnect', () => process.exit(0));
process.send!({ ready: true });
