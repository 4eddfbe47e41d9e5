// The one check of an error answer: its status, and exactly the envelope every error has
// (`{success: false, error: {code, message, details?, docs_url?}}`), as JSON.
import { expect } from 'vitest';
import type { ApiResponse } from './client.js';

export function expectError(res: ApiResponse, status: number, code: string): { code: string; message: string; details?: any } {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get('content-type') ?? '', res.text).toMatch(/application\/json/);
  expect(res.body, res.text).toEqual({ success: false, error: expect.objectContaining({ code, message: expect.any(String) }) });
  expect(Object.keys(res.body).sort(), res.text).toEqual(['error', 'success']);
  expect(Object.keys(res.body.error).every((k) => ['code', 'message', 'details', 'docs_url'].includes(k)), res.text).toBe(true);
  return res.body.error;
}
