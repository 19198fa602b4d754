// The HTTPS certificate: TLS_CERT_FILE / TLS_KEY_FILE, or a self-signed pair made once under DATA_DIR.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { generate } from 'selfsigned';
import type { Config } from '../lib/config.ts';

export interface TlsPair {
  cert: string;
  key: string;
}

const SELF_SIGNED_DAYS = 825;

/** TLS 1.3's suites, then TLS 1.2's AEAD suites with forward secrecy only: no CBC (LUCKY13), no RSA key exchange. */
export const TLS_CIPHERS = [
  'TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

export async function loadCertificate(config: Config): Promise<TlsPair> {
  if (config.tlsCertFile && config.tlsKeyFile) {
    return { cert: readFileSync(config.tlsCertFile, 'utf8'), key: readFileSync(config.tlsKeyFile, 'utf8') };
  }
  const dir = path.join(config.dataDir, 'tls');
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  if (existsSync(certFile) && existsSync(keyFile)) {
    return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
  }
  const pair = await selfSigned();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Written beside, then renamed: a second process starting at once never reads half a file.
  writeFileSync(`${keyFile}.${process.pid}`, pair.key, { mode: 0o600 });
  writeFileSync(`${certFile}.${process.pid}`, pair.cert);
  renameSync(`${keyFile}.${process.pid}`, keyFile);
  renameSync(`${certFile}.${process.pid}`, certFile);
  return pair;
}

export async function selfSigned(): Promise<TlsPair> {
  const notAfterDate = new Date(Date.now() + SELF_SIGNED_DAYS * 86_400_000);
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    // EC keys make the handshake cheap for the many short connections of API clients.
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notAfterDate,
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }, { type: 7, ip: '::1' }] }],
  });
  return { cert: pems.cert, key: pems.private };
}
