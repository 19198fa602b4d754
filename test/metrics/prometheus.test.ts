// A real Prometheus (Debian's package, installed here when missing and root) scrapes a web and a
// worker process every second, with docs/metrics-alerts.yml loaded; counters are read back through
// its HTTP API. The rules also pass `promtool check rules`. Without the binaries, the test skips.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { ROOT } from '../support/cli.ts';
import { freePort } from '../support/ports.ts';
import { ProcessGroup, tail, type ServiceProcess } from '../support/processes.ts';
import { createTestDatabase, type TestProject } from '../support/service.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';

const RULES = path.join(ROOT, 'docs', 'metrics-alerts.yml');
const INSTALL_TIMEOUT_MS = 600_000;

const has = (program: string) => spawnSync('sh', ['-c', `command -v ${program}`]).status === 0;

/** Why Prometheus cannot run here, or undefined once it can (installed now if need be). */
function missing(): string | undefined {
  if (has('prometheus') && has('promtool')) return undefined;
  if (process.getuid?.() !== 0) return 'prometheus is not installed and this user is not root to apt-get install it';
  const installed = spawnSync('sh', ['-c', 'apt-get update -qq && apt-get install -y -qq prometheus'], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, stdio: 'ignore', timeout: INSTALL_TIMEOUT_MS,
  });
  if (installed.status !== 0 || !has('prometheus')) return 'prometheus is not installed and apt-get install prometheus failed';
  return undefined;
}

const skip = missing();

let group: ProcessGroup;
let web: ServiceProcess;
let prometheus: ChildProcess | undefined;
let prometheusPort: number;
let prometheusLog: string;
let project: TestProject;
let databaseUrl: string;

/** Prometheus' HTTP API: an instant query's samples as label sets and their values. */
function query(expression: string): Promise<Array<{ metric: Record<string, string>; value: number }>> {
  return new Promise((resolve, reject) => {
    const url = `http://127.0.0.1:${prometheusPort}/api/v1/query?query=${encodeURIComponent(expression)}`;
    http.get(url, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => { text += chunk; });
      res.on('end', () => {
        const body = JSON.parse(text);
        if (body.status !== 'success') return reject(new Error(`${expression}: ${text}`));
        resolve(body.data.result.map((r: { metric: Record<string, string>; value: [number, string] }) => ({ metric: r.metric, value: Number(r.value[1]) })));
      });
    }).on('error', reject);
  });
}

function apiGet(pathname: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    http.get(`http://127.0.0.1:${prometheusPort}${pathname}`, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => { text += chunk; });
      res.on('end', () => {
        let body: unknown;
        try { body = JSON.parse(text); } catch { body = text; }
        resolve({ status: res.statusCode ?? 0, body });
      });
    }).on('error', reject);
  });
}

/** Polls an instant query until it answers one sample of `expected`; its last answer otherwise. */
async function settlesAt(expression: string, expected: number): Promise<number | undefined> {
  let last: number | undefined;
  try {
    await waitFor(`${expression} to be ${expected}`, async () => {
      const samples = await query(expression);
      last = samples.length === 1 ? samples[0]!.value : undefined;
      return last === expected ? true : undefined;
    }, 30_000, 250);
  } catch {
    // The assertion below names the value seen.
  }
  return last;
}

before(async () => {
  if (skip) return;
  databaseUrl = await createTestDatabase();
  group = new ProcessGroup(databaseUrl, 'metrics');
  const [webMetrics, workerMetrics] = [await freePort(), await freePort()];
  web = await group.web('web', { METRICS_PORT: String(webMetrics) });
  const worker = group.worker('worker', { WORKER_METRICS_PORT: String(workerMetrics) });
  await Promise.all([web.start(), worker.start()]);
  project = await group.createProject('metrics');

  const dir = tempDir('pms-prometheus-');
  const config = path.join(dir, 'prometheus.yml');
  writeFileSync(config, [
    'global: { scrape_interval: 1s, evaluation_interval: 1s }',
    `rule_files: [${JSON.stringify(RULES)}]`,
    'scrape_configs:',
    `  - { job_name: pms-web, static_configs: [{ targets: ["127.0.0.1:${webMetrics}"] }] }`,
    `  - { job_name: pms-worker, static_configs: [{ targets: ["127.0.0.1:${workerMetrics}"] }] }`,
    '',
  ].join('\n'));
  prometheusPort = await freePort();
  prometheusLog = path.join(dir, 'prometheus.log');
  const out = openSync(prometheusLog, 'a');
  try {
    // Its own instance, on a port and a storage of its own; never the system's service.
    prometheus = spawn('prometheus', [
      `--config.file=${config}`, `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${prometheusPort}`, '--log.level=warn',
    ], { stdio: ['ignore', out, out] });
  } finally {
    closeSync(out);
  }
  await waitFor(() => `prometheus to be ready:\n${tail(prometheusLog)}`, async () => {
    const ready = await apiGet('/-/ready').catch(() => undefined);
    return ready?.status === 200 ? true : undefined;
  }, 30_000, 100);
}, { timeout: INSTALL_TIMEOUT_MS });

after(async () => {
  if (prometheus && prometheus.exitCode === null) {
    const exited = new Promise((resolve) => prometheus!.once('exit', resolve));
    prometheus.kill('SIGTERM');
    const timer = setTimeout(() => prometheus!.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
  await group?.stopAll();
});

test('Prometheus scrapes web and worker and reads back what they counted', { skip }, async () => {
  const client = group.client(web);
  for (let i = 0; i < 7; i++) assert.equal((await client.request('GET', '/v1/key/current', { key: project.key })).status, 200);
  assert.equal((await client.request('GET', '/v1/key/current')).status, 401);

  assert.equal(await settlesAt('up{job="pms-web"}', 1), 1, tail(prometheusLog));
  assert.equal(await settlesAt('up{job="pms-worker"}', 1), 1, tail(prometheusLog));
  assert.equal(await settlesAt('pms_http_requests_total{job="pms-web",route="/v1/key/current",method="GET",status="200"}', 7), 7);
  assert.equal(await settlesAt('pms_http_refusals_total{job="pms-web",reason="no_key"}', 1), 1);
  assert.equal(await settlesAt('pms_http_request_duration_seconds_count{job="pms-web",route="/v1/key/current",method="GET"}', 8), 8);

  // The project's creation handed its events over; the worker's drain wrote them.
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const events = await waitFor('the events written', async () => {
    const { rows: [row] } = await db.query('SELECT (SELECT count(*) FROM events)::int AS n, (SELECT count(*) FROM audit_outbox)::int AS waiting');
    return row.n > 0 && row.waiting === 0 ? row.n as number : undefined;
  }, 15_000);
  await db.end();
  assert.equal(await settlesAt('pms_audit_events_written_total{job="pms-worker"}', events), events);
  assert.equal(await settlesAt('pms_audit_event_lag_seconds_count{job="pms-worker"}', events), events);
  assert.equal(await settlesAt('sum(pms_jobs_failed_total{job="pms-worker"})', 0), 0);

  // The alert rules load and evaluate against these series without error.
  const rules = await waitFor('every rule evaluated', async () => {
    const { body } = await apiGet('/api/v1/rules');
    const all = body.data.groups.flatMap((g: { rules: Array<{ name: string; health: string; lastError?: string }> }) => g.rules);
    return all.length > 0 && all.every((r: { health: string }) => r.health !== 'unknown') ? all : undefined;
  }, 15_000, 250);
  assert.deepEqual(rules.filter((r: { health: string }) => r.health !== 'ok'), []);
  assert.equal(rules.length, 7);
  const { body: alerts } = await apiGet('/api/v1/alerts');
  assert.deepEqual(alerts.data.alerts.filter((a: { state: string }) => a.state === 'firing'), []);
});

test('promtool checks the alert rules', { skip }, () => {
  const checked = spawnSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' });
  assert.equal(checked.status, 0, `${checked.stdout}${checked.stderr}`);
  assert.match(checked.stdout, /SUCCESS: 7 rules found/);
});
