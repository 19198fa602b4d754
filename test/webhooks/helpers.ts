// Webhook receivers for the tests: HTTPS servers on 127.0.0.1 serving the receivers' certificate
// (test/run.ts adds it to NODE_EXTRA_CA_CERTS, as an operator would a private CA), recording
// every delivery and answering as each test tells them.
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { assertSuccess } from '../support/assertions.ts';
import type { TestService } from '../support/service.ts';
import { waitFor } from '../support/wait.ts';

export interface Received {
  at: number;
  /** When its answer was sent (not for `raw` answers). */
  answeredAt?: number;
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** How to answer one delivery: a status, headers, a body, or no answer before `delayMs`. */
export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
  delayMs?: number;
}

export class Receiver {
  readonly received: Received[] = [];
  /** Answers every delivery; 204 unless a test says otherwise. */
  answer: (delivery: Received) => Answer = () => ({ status: 204 });
  /** Answers by hand instead, once the delivery's body is read. */
  raw: ((res: import('node:http').ServerResponse) => void) | undefined;
  private readonly server: https.Server;
  private port = 0;

  private constructor(options: https.ServerOptions) {
    this.server = https.createServer(options, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const delivery: Received = {
          at: Date.now(), path: req.url ?? '', headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8'),
        };
        this.received.push(delivery);
        if (this.raw) return this.raw(res);
        const { status = 204, headers = {}, body, delayMs = 0 } = this.answer(delivery);
        const send = () => {
          if (res.destroyed) return;
          delivery.answeredAt = Date.now();
          res.writeHead(status, headers);
          res.end(body);
        };
        if (delayMs > 0) setTimeout(send, delayMs).unref();
        else send();
      });
    });
    this.server.keepAliveTimeout = 1000;
  }

  /** A receiver with the receivers' certificate, or with `tls` (an untrusted one). */
  static async start(tls?: { cert: string; key: string }): Promise<Receiver> {
    const receiver = new Receiver(tls ?? { cert: readFileSync(process.env.TEST_RECEIVER_CERT_FILE!), key: readFileSync(process.env.TEST_RECEIVER_KEY_FILE!) });
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    receiver.port = (receiver.server.address() as AddressInfo).port;
    return receiver;
  }

  url(path = '/hook'): string {
    return `https://127.0.0.1:${this.port}${path}`;
  }

  /** The deliveries of one event id, in arrival order. */
  of(eventId: string): Received[] {
    return this.received.filter((delivery) => delivery.headers['webhook-id'] === eventId);
  }

  async waitFor(what: string, count: (received: Received[]) => boolean, timeoutMs = 10_000): Promise<void> {
    await waitFor(() => `${what}: ${this.received.length} deliveries received`, async () => (count(this.received) ? true : undefined), timeoutMs);
  }

  /** Listening again on the same port, after a stop. */
  async restart(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(this.port, '127.0.0.1', resolve));
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Verifies a delivery as a receiver does: the Standard Webhooks package's Webhook.verify. */
export function verified(secret: string, delivery: Received): any {
  return new Webhook(secret).verify(delivery.body, delivery.headers);
}

/** Creates an endpoint through the API; returns its object, the secret included. */
export async function createEndpoint(service: TestService, key: string, body: Record<string, unknown>): Promise<any> {
  return assertSuccess(await service.request('POST', '/v1/webhook', { key, body }), 201, 'creating a webhook endpoint');
}

/** The endpoint's delivery log, newest first. */
export async function deliveryLog(service: TestService, key: string, endpointId: string): Promise<any[]> {
  return assertSuccess(await service.request('GET', `/v1/webhook/${endpointId}/delivery?limit=100`, { key })).data;
}

/** Waits until the endpoint's log holds `count` attempts matching `which`. */
export async function waitForAttempts(service: TestService, endpointId: string, count: number, which = 'true', timeoutMs = 15_000): Promise<any[]> {
  let rows: any[] = [];
  await waitFor(() => `${count} attempts at ${endpointId} where ${which}: ${JSON.stringify(rows)}`, async () => {
    rows = (await service.db.query(
      `SELECT event_id, attempt, status_code, error, duration_ms, created_at FROM webhook_attempts WHERE endpoint_id = $1 AND (${which}) ORDER BY created_at`,
      [endpointId])).rows;
    return rows.length >= count ? rows : undefined;
  }, timeoutMs);
  return rows;
}

/** A key change through the API, so the project gets an event: returns the key's id. */
export async function makeEvent(service: TestService, key: string, name = 'webhook test key'): Promise<string> {
  return assertSuccess(await service.request('POST', '/v1/key', { key, body: { name, scope: ['key:read'] } }), 201).id;
}

/** The id of the event written for a change of `relatedId` of this type. */
export async function eventOf(service: TestService, relatedId: string, type: string): Promise<{ id: string; sequence: number }> {
  return waitFor(`the ${type} event of ${relatedId}`, async () => {
    const { rows: [row] } = await service.db.query(
      `SELECT e.id, e.sequence::int AS sequence FROM events e JOIN event_types t ON t.id = e.type_id WHERE e.related_id = $1 AND t.name = $2`, [relatedId, type]);
    return row;
  });
}
