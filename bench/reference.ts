// The benchmark's reference servers, built from the same restify, pg and certificate as the
// service: R1 answers a small JSON envelope; R2 runs one prepared SELECT by a text key through a
// pg Pool and answers its row. Usage: node bench/reference.ts r1|r2 <port> [database-url]
import { readFileSync } from 'node:fs';
import pg from 'pg';
import restify from 'restify';

const [mode, portArg, databaseUrl] = process.argv.slice(2);
const tls = { cert: readFileSync(process.env.TLS_CERT_FILE!), key: readFileSync(process.env.TLS_KEY_FILE!) };
const server = restify.createServer({ name: '', httpsServerOptions: tls, handleUncaughtExceptions: false });
const JSON_HEADERS = { 'Content-Type': 'application/json; charset=utf-8' };

if (mode === 'r1') {
  server.get('/ref', function envelope(_req, res, next) {
    const body = JSON.stringify({ code: 200, title: 'OK', response: { ok: true } });
    res.sendRaw(200, body, { ...JSON_HEADERS, 'Content-Length': String(Buffer.byteLength(body)) });
    next(false);
  });
} else {
  // Connections kept however long R2 waits for its next turn, as the service's pool keeps its own:
  // R2 is not to reconnect at the start of each measurement.
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 8, idleTimeoutMillis: 0 });
  server.get('/ref', function selectByKey(_req, res, next) {
    pool.query({ name: 'ref_select', text: 'SELECT k, v FROM bench_reference WHERE k = $1', values: ['key-42'] }).then(({ rows }) => {
      const body = JSON.stringify({ code: 200, title: 'OK', response: rows[0] });
      res.sendRaw(200, body, { ...JSON_HEADERS, 'Content-Length': String(Buffer.byteLength(body)) });
      next(false);
    }, () => {
      res.sendRaw(503, '{}', JSON_HEADERS);
      next(false);
    });
  });
}

server.listen(Number(portArg), '127.0.0.1', () => process.send?.('ready'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
// The bench gone (crashed, or killed) closes this channel: a reference server never outlives it.
process.on('disconnect', () => process.exit(0));
