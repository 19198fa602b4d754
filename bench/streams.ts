// The bench's `streams` part: many open GET /v1/event/stream connections on one web process, all
// following one project, while changes are made through the API at a steady rate. Measures, for
// every (change, stream) pair, the time from the change's 2xx arriving here to its event arriving
// on that stream, samples the web process's RSS, and checks each stream got exactly the changes'
// events, each once, in sequence order.
//
// The load generator shares the cores with the service, so the stream clients are kept cheap: a
// raw TLS connection each with a hand-written GET (no HTTP client machinery on every read), bytes
// read as latin1, and per event only the `id:` line and the related id inside `data:` are looked
// at (found by position, never JSON.parse).
import { readdirSync, readFileSync } from 'node:fs';
import tls from 'node:tls';
import { performance } from 'node:perf_hooks';

export interface StreamBenchOptions {
  base: string;
  key: string;
  /** The web process holding the streams: its RSS is sampled. */
  pid: number;
  streams: number;
  ratePerS: number;
  /** Changes made before the measured ones (their events are checked, their latency not counted). */
  warmupChanges: number;
  changes: number;
  /** The project's last sequence before the first change: every stream resumes after it. */
  after: number;
  /** One change through the API; resolves with the id of the record its event relates to. */
  change: (n: number) => Promise<string>;
}

export interface StreamBenchResult {
  streams: number;
  changes: number;
  /** (change, stream) pairs measured. */
  pairs: number;
  p50: number;
  p99: number;
  max: number;
  /**
   * Where the time goes: per change, until its event reached the first stream (the audit job, the
   * notice, the fetch), and from the first stream to the last (the fan-out): p50 and p99 of each.
   */
  firstP50: number;
  firstP99: number;
  spreadP50: number;
  spreadP99: number;
  /** Pairs whose event arrived before the change's own response did (counted as 0 ms). */
  beforeResponse: number;
  /** Sampled VmRSS peak, and the kernel's own high-water mark (VmHWM), MB. */
  rssPeakMb: number;
  rssHwmMb: number;
  /** How long opening every stream took, ms. */
  openMs: number;
  /** CPU time over the changes' span (first change to last event delivered), in cores: the web process, this load generator. */
  webCpu: number;
  benchCpu: number;
  /** The whole machine's busy CPU over the same span, in cores (the service, this generator, anything else running). */
  machineCpu: number;
  /** Of it, what the bench's own processes used (this generator, the service's processes, PostgreSQL): the rest ran beside it. */
  benchTreeCpu: number;
  /** Events per read on a stream, on average: how many events the service sends per write. */
  eventsPerRead: number;
  /** The web process's RSS once every stream is open, before the first change, MB. */
  rssOpenMb: number;
  /** Every way a stream's events disagree with the changes made; empty when all is well. */
  problems: string[];
}

const OPEN_CONCURRENCY = 50;
const DELIVERY_TIMEOUT_MS = 60_000;
const RSS_SAMPLE_MS = 100;

function status(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(text)![1]) / 1024;
}

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // utime and stime are fields 14 and 15 of the whole line, in clock ticks (100 a second on Linux).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds used so far by this process and every process descended from it (the service, PostgreSQL). */
function treeCpuSeconds(): number {
  const processes: Array<{ pid: number; ppid: number; seconds: number }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ');
      processes.push({ pid: Number(entry), ppid: Number(fields[1]), seconds: (Number(fields[11]) + Number(fields[12])) / 100 });
    } catch { /* gone meanwhile */ }
  }
  const mine = new Set([process.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of processes) if (!mine.has(p.pid) && mine.has(p.ppid)) { mine.add(p.pid); grew = true; }
  }
  return processes.filter((p) => mine.has(p.pid)).reduce((sum, p) => sum + p.seconds, 0);
}

/** The machine's busy and total CPU time so far, in clock ticks (/proc/stat's first line). */
function machineTicks(): { busy: number; total: number } {
  const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.split(/\s+/).slice(1, 9).map(Number);
  const total = ticks.reduce((sum, t) => sum + t, 0);
  // idle and iowait are the 4th and 5th.
  return { busy: total - ticks[3]! - ticks[4]!, total };
}

const RELATED = '"related":{';
const ID = '"id":"';

/** One stream: where each sequence arrived, checked as it comes. */
class BenchStream {
  /** performance.now() of each event's arrival, by sequence - after - 1. */
  readonly arrivals: Float64Array;
  /** The next sequence expected. */
  next: number;
  received = 0;
  /** Reads that carried at least one event: events / reads says how the service batches. */
  reads = 0;
  readonly problems: string[] = [];
  ended = false;
  /** Decrypted bytes (as latin1) not yet taken apart: the response head, then chunked framing. */
  private raw = '';
  /** The event stream, de-chunked, from the end of the last complete block. */
  private buffered = '';
  private head = true;
  private chunked = false;
  /** Bytes left of the chunk being read. */
  private chunkLeft = 0;
  private socket: tls.TLSSocket | undefined;
  private readonly after: number;
  private readonly related: Array<string | undefined>;

  constructor(after: number, capacity: number, related: Array<string | undefined>) {
    this.after = after;
    this.next = after + 1;
    this.arrivals = new Float64Array(capacity);
    this.related = related;
  }

  /** A raw TLS connection and a hand-written GET: no HTTP client machinery per read. */
  open(base: string, key: string): Promise<void> {
    const { hostname, port } = new URL(base);
    return new Promise((resolve, reject) => {
      const socket = tls.connect({ host: hostname, port: Number(port), rejectUnauthorized: false });
      this.socket = socket;
      socket.setEncoding('latin1');
      socket.once('secureConnect', () => {
        socket.write(`GET /v1/event/stream?after=${this.after} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n` +
          `Authorization: Bearer ${key}\r\nAccept: text/event-stream\r\n\r\n`);
      });
      socket.on('data', (text: string) => {
        if (!this.head) return this.body(text);
        this.raw += text;
        const end = this.raw.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = this.raw.slice(0, end);
        const rest = this.raw.slice(end + 4);
        this.raw = '';
        this.head = false;
        if (!head.startsWith('HTTP/1.1 200')) {
          socket.destroy();
          reject(new Error(`a stream answered ${head.split('\r\n')[0]}`));
          return;
        }
        this.chunked = /\r\ntransfer-encoding:\s*chunked/i.test(head);
        resolve();
        if (rest) this.body(rest);
      });
      socket.on('close', () => { this.ended = true; });
      socket.on('error', (err) => { this.ended = true; reject(err); });
    });
  }

  close(): void {
    this.socket?.destroy();
  }

  /** Takes the chunked framing off (sizes are in bytes: latin1 keeps one character a byte). */
  private body(text: string): void {
    if (!this.chunked) return this.read(text);
    const raw = this.raw + text;
    let pos = 0;
    let events = '';
    for (;;) {
      if (this.chunkLeft === 0) {
        const eol = raw.indexOf('\r\n', pos);
        if (eol < 0) break;
        // The CRLF that ends a chunk's data.
        if (eol === pos) { pos += 2; continue; }
        const size = parseInt(raw.slice(pos, eol), 16);
        pos = eol + 2;
        if (size === 0) break;
        this.chunkLeft = size;
      }
      const n = Math.min(this.chunkLeft, raw.length - pos);
      if (n === 0) break;
      events += raw.slice(pos, pos + n);
      pos += n;
      this.chunkLeft -= n;
    }
    this.raw = raw.slice(pos);
    if (events) this.read(events);
  }

  private read(text: string): void {
    const now = performance.now();
    const buffered = this.buffered + text;
    let start = 0;
    let end: number;
    let events = 0;
    while ((end = buffered.indexOf('\n\n', start)) >= 0) {
      if (buffered.charCodeAt(start) !== 58 /* ':' a comment */) {
        this.event(buffered, start, end, now);
        events += 1;
      }
      start = end + 2;
    }
    if (events > 0) this.reads += 1;
    this.buffered = start === buffered.length ? '' : buffered.slice(start);
  }

  private event(text: string, start: number, end: number, now: number): void {
    // `id: <sequence>\nevent: <type>\ndata: {"id":"evnt_…","object":"event","type":{…},"related":{"table":"…","id":"…"},…}`
    const sequence = Number(text.slice(start + 4, text.indexOf('\n', start)));
    const at = text.indexOf(RELATED, start);
    const idAt = at < 0 || at > end ? -1 : text.indexOf(ID, at + RELATED.length) + ID.length;
    const relatedId = idAt > 0 ? text.slice(idAt, text.indexOf('"', idAt)) : undefined;
    if (sequence !== this.next) {
      if (this.problems.length < 5) this.problems.push(sequence < this.next ? `sequence ${sequence} again (expected ${this.next})` : `a gap: sequence ${sequence} after ${this.next - 1}`);
      if (sequence < this.next) return;
    }
    this.next = sequence + 1;
    const index = sequence - this.after - 1;
    if (index >= this.arrivals.length) {
      if (this.problems.length < 5) this.problems.push(`sequence ${sequence}: more events than changes made`);
      return;
    }
    this.received += 1;
    this.arrivals[index] = now;
    const known = this.related[index];
    if (known === undefined) this.related[index] = relatedId;
    else if (known !== relatedId && this.problems.length < 5) this.problems.push(`sequence ${sequence}: related id ${relatedId}, another stream had ${known}`);
  }
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export async function streamDelivery(options: StreamBenchOptions): Promise<StreamBenchResult> {
  const total = options.warmupChanges + options.changes;
  const related: Array<string | undefined> = new Array(total);
  const streams = Array.from({ length: options.streams }, () => new BenchStream(options.after, total, related));
  let rssPeakMb = status(options.pid, 'VmRSS');
  const sampler = setInterval(() => { rssPeakMb = Math.max(rssPeakMb, status(options.pid, 'VmRSS')); }, RSS_SAMPLE_MS);
  try {
    const openStarted = performance.now();
    for (let i = 0; i < streams.length; i += OPEN_CONCURRENCY) {
      await Promise.all(streams.slice(i, i + OPEN_CONCURRENCY).map((s) => s.open(options.base, options.key)));
    }
    const openMs = performance.now() - openStarted;
    await new Promise((r) => setTimeout(r, 500));
    const rssOpenMb = status(options.pid, 'VmRSS');

    // Changes at a steady rate; each change's response time, by the id its event relates to.
    const answered = new Map<string, { at: number; measured: boolean }>();
    const webCpuBefore = cpuSeconds(options.pid);
    const benchCpuBefore = process.cpuUsage();
    const machineBefore = machineTicks();
    const treeBefore = treeCpuSeconds();
    const started = performance.now();
    const pending: Promise<void>[] = [];
    const failedChanges: string[] = [];
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / options.ratePerS;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      // Caught at once: a change failing while later ones are still being paced must not be an
      // unhandled rejection (which ends the bench and leaves its processes behind).
      pending.push(options.change(i).then(
        (id) => { answered.set(id, { at: performance.now(), measured: i >= options.warmupChanges }); },
        (err: Error) => { failedChanges.push(`change ${i}: ${err.message}`); },
      ));
    }
    await Promise.all(pending);
    const deadline = Date.now() + DELIVERY_TIMEOUT_MS;
    while (streams.some((s) => s.received < total && !s.ended) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const spanS = (performance.now() - started) / 1000;
    const webCpu = (cpuSeconds(options.pid) - webCpuBefore) / spanS;
    const benchUsage = process.cpuUsage(benchCpuBefore);
    const benchCpu = (benchUsage.user + benchUsage.system) / 1e6 / spanS;
    const machineAfter = machineTicks();
    const machineCpu = (machineAfter.busy - machineBefore.busy) / 100 / spanS;
    const benchTreeCpu = (treeCpuSeconds() - treeBefore) / spanS;
    // Anything beyond the changes' events would show up now.
    await new Promise((r) => setTimeout(r, 300));

    const problems: string[] = failedChanges.slice(0, 3);
    const relatedIds = new Set(related);
    if (relatedIds.size !== total || [...answered.keys()].some((id) => !relatedIds.has(id))) {
      problems.push(`the streams' events relate to ${relatedIds.size} distinct records; ${total} changes were made`);
    }
    const latencies = new Float64Array(options.streams * options.changes);
    let pairs = 0;
    let beforeResponse = 0;
    let incomplete = 0;
    for (const [n, stream] of streams.entries()) {
      if (stream.received !== total) {
        incomplete += 1;
        if (incomplete <= 5) problems.push(`stream ${n}: ${stream.received} of ${total} events${stream.ended ? ' (ended)' : ''}`);
      }
      for (const p of stream.problems) problems.push(`stream ${n}: ${p}`);
      for (let index = 0; index < total; index++) {
        const change = answered.get(related[index]!);
        if (!change?.measured || stream.arrivals[index] === 0) continue;
        const ms = stream.arrivals[index]! - change.at;
        if (ms < 0) beforeResponse += 1;
        latencies[pairs++] = Math.max(0, ms);
      }
    }
    if (incomplete > 5) problems.push(`… ${incomplete} streams incomplete in all`);
    const sorted = latencies.subarray(0, pairs).sort();
    const firsts: number[] = [];
    const spreads: number[] = [];
    for (let index = 0; index < total; index++) {
      const change = answered.get(related[index]!);
      if (!change?.measured) continue;
      let first = Infinity;
      let last = 0;
      for (const stream of streams) {
        const at = stream.arrivals[index]!;
        if (at === 0) continue;
        first = Math.min(first, at);
        last = Math.max(last, at);
      }
      if (first === Infinity) continue;
      firsts.push(Math.max(0, first - change.at));
      spreads.push(last - first);
    }
    const p = (values: number[], q: number) => (values.length ? percentile(Float64Array.from(values).sort(), q) : NaN);
    return {
      streams: options.streams, changes: options.changes, pairs, beforeResponse,
      firstP50: p(firsts, 50), firstP99: p(firsts, 99), spreadP50: p(spreads, 50), spreadP99: p(spreads, 99),
      p50: pairs ? percentile(sorted, 50) : NaN, p99: pairs ? percentile(sorted, 99) : NaN, max: pairs ? sorted[pairs - 1]! : NaN,
      rssPeakMb, rssHwmMb: status(options.pid, 'VmHWM'), rssOpenMb, openMs, webCpu, benchCpu, machineCpu, benchTreeCpu, problems,
      eventsPerRead: streams.reduce((sum, s) => sum + s.received, 0) / Math.max(1, streams.reduce((sum, s) => sum + s.reads, 0)),
    };
  } finally {
    clearInterval(sampler);
    for (const stream of streams) stream.close();
  }
}
