// TLS 1.2 offers AEAD suites with forward secrecy only: a client that knows nothing but CBC
// suites (LUCKY13's ground) cannot connect; GCM, ChaCha20 and TLS 1.3 can.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import { after, before, test } from 'node:test';
import { TestService } from '../support/service.ts';

let service: TestService;
before(async () => {
  service = await TestService.start({ jobWorkers: false });
});
after(() => service.stop());

function handshake(options: tls.ConnectionOptions): Promise<{ protocol: string | null; cipher: string } | { error: string }> {
  return new Promise((resolve) => {
    const socket = tls.connect({
      host: '127.0.0.1', port: service.config.httpsPort === 0 ? Number(new URL(service.baseUrl).port) : service.config.httpsPort,
      ca: readFileSync(service.config.tlsCertFile!), servername: 'localhost', ...options,
    }, () => {
      resolve({ protocol: socket.getProtocol(), cipher: socket.getCipher().standardName });
      socket.end();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
  });
}

test('TLS 1.2 with only CBC suites is refused in the handshake', async () => {
  for (const ciphers of ['ECDHE-ECDSA-AES128-SHA', 'ECDHE-ECDSA-AES256-SHA384', 'ECDHE-ECDSA-AES128-SHA256']) {
    const outcome = await handshake({ maxVersion: 'TLSv1.2', ciphers });
    assert.ok('error' in outcome, `${ciphers} must be refused, got ${JSON.stringify(outcome)}`);
  }
});

test('TLS 1.2 with GCM or ChaCha20, and TLS 1.3, connect', async () => {
  assert.deepEqual(await handshake({ maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' }),
    { protocol: 'TLSv1.2', cipher: 'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256' });
  assert.deepEqual(await handshake({ maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-CHACHA20-POLY1305' }),
    { protocol: 'TLSv1.2', cipher: 'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256' });
  const modern = await handshake({});
  assert.equal('protocol' in modern && modern.protocol, 'TLSv1.3');
});

test('TLS 1.1 is refused', async () => {
  const outcome = await handshake({ minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' });
  assert.ok('error' in outcome, JSON.stringify(outcome));
});
