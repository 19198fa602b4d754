// The bench's own HTTPS calls (projects, keys and apps to measure, health checks): keep-alive, the
// self-signed certificate accepted, the answer's JSON parsed.
import https from 'node:https';

export const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false, maxSockets: 64 });

/**
 * One call, made again once when it failed on a kept-alive connection the service had just closed
 * as idle (Node's documented race: the request never reached the service, so the retry cannot
 * make a change twice).
 */
export function call(url: string, method: string, key: string, body?: object, retried = false): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = https.request(url, { method, agent, headers: { authorization: `Bearer ${key}`, ...(payload ? { 'content-type': 'application/json' } : {}) } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (!retried && req.reusedSocket && err.code === 'ECONNRESET') resolve(call(url, method, key, body, true));
      else reject(err);
    });
    req.end(payload);
  });
}
