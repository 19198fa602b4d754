// Reading a metrics listener as Prometheus does: GET /metrics, its text exposition parsed into
// series (name and labels) and values.
import http from 'node:http';

export interface Series {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Scrape {
  status: number;
  contentType: string | undefined;
  text: string;
  series: Series[];
}

const LINE = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): Series[] {
  const series: Series[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(LABEL)) labels[name!] = value!;
    series.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return series;
}

export function get(port: number, path: string, method = 'GET'): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => { text += chunk; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

export async function scrape(port: number): Promise<Scrape> {
  const reply = await get(port, '/metrics');
  return { status: reply.status, contentType: reply.headers['content-type'], text: reply.text, series: parseExposition(reply.text) };
}

/** The sum of the series named so whose labels include `labels`. */
export function sum(scraped: Scrape, name: string, labels: Record<string, string> = {}): number {
  return scraped.series
    .filter((s) => s.name === name && Object.entries(labels).every(([label, value]) => s.labels[label] === value))
    .reduce((total, s) => total + s.value, 0);
}

/** How many series of the service's own (pms_) the scrape holds. */
export function ownSeries(scraped: Scrape): number {
  return scraped.series.filter((s) => s.name.startsWith('pms_')).length;
}
