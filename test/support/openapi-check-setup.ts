// In every test file: the responses the tests' client saw are checked against the OpenAPI document
// after each test (outside the test's own timing) and once more after the file's last hook; a
// test during which a response did not match fails, naming it (openapi-check.ts).
import { afterAll, afterEach } from 'vitest';
import { describeMismatch, flushOpenApiChecks } from './openapi-check.js';

function failOnMismatches(): void {
  const found = flushOpenApiChecks();
  if (found.length) throw new Error(`${found.length} responses did not match the OpenAPI document:\n${found.slice(0, 10).map(describeMismatch).join('\n')}`);
}

afterEach(failOnMismatches);
// Registered first, so it runs after the file's own afterAll hooks: responses seen there count too.
afterAll(failOnMismatches);
