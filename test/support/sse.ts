// A test's reader of GET /v1/event/stream: the raw Server-Sent Events as they arrive, each event's
// data checked against the OpenAPI document's Event schema.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import https from 'node:https';
import { checkAgainstSchema } from './openapi-check.ts';
import type { TestService } from './service.ts';
import { sleep } from './wait.ts';

export interface StreamedEvent {
  id: number;
  event: string;
  data: any;
}

export class EventStreamReader {
  readonly events: StreamedEvent[] = [];
  comments = 0;
  status = 0;
  headers: IncomingHttpHeaders = {};
  ended = false;
  /** The connection is gone, whichever end closed it. */
  isClosed = false;
  readonly closed: Promise<void>;
  private readonly req: ReturnType<typeof https.request>;
  private res: IncomingMessage | undefined;
  private buffered = '';
  private readonly service: TestService;

  private constructor(service: TestService, pathAndQuery: string, key: string, headers: Record<string, string>, paused: boolean) {
    this.service = service;
    let markClosed!: () => void;
    this.closed = new Promise((resolve) => { markClosed = () => { this.isClosed = true; resolve(); }; });
    this.req = https.request(new URL(pathAndQuery, service.baseUrl), {
      headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...headers },
      agent: false, ca: readFileSync(service.config.tlsCertFile!),
    }, (res) => {
      this.status = res.statusCode ?? 0;
      this.headers = res.headers;
      this.res = res;
      if (paused) res.pause();
      res.on('data', (chunk: Buffer) => this.parse(chunk.toString('utf8')));
      res.on('end', () => { this.ended = true; markClosed(); });
      res.on('close', markClosed);
      res.on('error', markClosed);
    });
    this.req.on('error', markClosed);
    this.req.end();
  }

  /** Opens a stream and waits for its status line. */
  static async open(service: TestService, pathAndQuery: string, key: string, headers: Record<string, string> = {}, paused = false): Promise<EventStreamReader> {
    const reader = new EventStreamReader(service, pathAndQuery, key, headers, paused);
    for (let waited = 0; reader.status === 0; waited += 10) {
      if (waited > 5000) throw new Error('the stream did not answer');
      await sleep(10);
    }
    return reader;
  }

  /** Starts reading a stream opened paused. */
  resume(): void {
    this.res?.resume();
  }

  close(): void {
    this.req.destroy();
  }

  /** Waits until `count` events have arrived (or fails after timeoutMs). */
  async waitFor(count: number, timeoutMs = 10_000): Promise<StreamedEvent[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.events.length < count) {
      if (Date.now() >= deadline) {
        assert.fail(`${this.events.length} of ${count} events arrived within ${timeoutMs} ms (the stream ` +
          `${this.isClosed ? `was closed${this.ended ? ' by the service' : ''}` : 'is open'}, ${this.comments} keep-alives); ` +
          `the service's last warnings: ${this.lastWarnings()}`);
      }
      await sleep(10);
    }
    return this.events;
  }

  /** What the service logged at warn or above most recently, for a failure's message. */
  private lastWarnings(): string {
    const lines = this.service.logText().split('\n').filter((line) => /"level":(4|5|6)0/.test(line));
    return lines.slice(-3).map((line) => line.slice(0, 400)).join(' | ') || 'none';
  }

  private parse(text: string): void {
    this.buffered += text;
    let end: number;
    while ((end = this.buffered.indexOf('\n\n')) >= 0) {
      const block = this.buffered.slice(0, end);
      this.buffered = this.buffered.slice(end + 2);
      if (block.split('\n').every((line) => line.startsWith(':'))) {
        this.comments++;
        continue;
      }
      const fields = Object.fromEntries(block.split('\n').map((line) => {
        const colon = line.indexOf(': ');
        return [line.slice(0, colon), line.slice(colon + 2)];
      }));
      assert.deepEqual(Object.keys(fields), ['id', 'event', 'data'], `an event block: ${block}`);
      const data = JSON.parse(fields.data);
      checkAgainstSchema('Event', data, `streamed event ${fields.id}`);
      assert.equal(String(data.sequence), fields.id, 'id: is the sequence');
      assert.equal(data.type.name, fields.event, 'event: is the type name');
      this.events.push({ id: Number(fields.id), event: fields.event, data });
    }
  }
}
