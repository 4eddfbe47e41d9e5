// Every kind of secret is found in a sentence around it. The scan tries the fifteen secret patterns
// only in a text with one of their literals (SECRET_LITERAL): each kind here, found, shows its
// literal is listed, and a kind without an example fails the first test.
import { describe, expect, it } from 'vitest';
import { detectPii, SECRET_PATTERNS } from '../../server/guardrails/pii.js';

const EXAMPLES: Record<string, string> = {
  private_key: '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1x2y3z\n-----END RSA PRIVATE KEY-----',
  jwt: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
  openai_key: 'sk-proj-4fT9qLx2Vb7nKp3RzW8yHc1Md6Ej0Ua5',
  stripe_key: 'rk_live_4eC39HqLyjWDarjtT1zdp7dc',
  liya_api_key: 'svc_Xq3k9ZfT1pLm7Vb2Nc8Rw4Hd6Jy0Ge5Ks',
  aws_access_key: 'ASIAZ7Q2M4X9LK3TB8PW',
  github_token: 'github_pat_11ABCDEFG0123456789abcdefghijklmnopqrstuvwxyzABCD',
  gitlab_token: 'glpat-xY7zK2mN9pQ4rS6tU8vW',
  slack_token: 'xoxp-2718281828-3141592653-aB3dE5fG7hJ9kL1mN3pQ5rS7',
  slack_webhook: 'https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/abcdefghijklmnopqrstuvwx',
  google_api_key: `AIza${'SyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHIxy'.slice(0, 35)}`,
  npm_token: `npm_${'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8'.slice(0, 36)}`,
  huggingface_token: 'hf_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z',
  url_credentials: 'postgres://admin:Tq8vL2xK9mZ4@db.internal.example.com:5432/app',
  bearer_token: 'Bearer 9fK2mQ7xL4pZ8vR1tY6wN3cB5hJ0dS',
};

describe('secret detection', () => {
  it('has an example of every kind', () => {
    expect(Object.keys(EXAMPLES).sort()).toEqual(SECRET_PATTERNS.map((p) => p.kind).sort());
  });

  it.each(Object.entries(EXAMPLES))('finds a %s in a sentence', (kind, secret) => {
    const text = `Notes from the call with the candidate. They pasted ${secret} by mistake, then went on about the role.`;
    const found = detectPii(text, ['secret']);
    expect(found.map((m) => m.kind)).toContain(kind);
  });

  it('finds nothing in prose without a secret', () => {
    expect(detectPii('Led the migration of 40 services to Kubernetes; cut p99 latency by 35%. Skills: Go, Kafka.', ['secret'])).toEqual([]);
  });
});
