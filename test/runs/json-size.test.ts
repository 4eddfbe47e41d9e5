// jsonSize measures a value as JSON without building the JSON, and stops early past its maximum.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonSize } from '../../server/runs/json-size.js';

describe('jsonSize', () => {
  it('equals the JSON length for values without escapes', () => {
    const plain = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.string({ unit: fc.constantFrom('a', 'b', ' ', '1') }),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('value'), { maxLength: 5 }),
        fc.dictionary(fc.string({ unit: fc.constantFrom('k', 'x', '_'), minLength: 1 }), tie('value'), { maxKeys: 5 }),
      ),
    })).value;
    fc.assert(fc.property(plain, (value) => jsonSize(value, Number.MAX_SAFE_INTEGER) === JSON.stringify(value).length), { seed: 20261126, numRuns: 500 });
  });

  it('stops at the maximum: a list of a million references to one large string costs no more than the maximum', () => {
    const big = 'x'.repeat(1024 * 1024);
    const many = new Array(1_000_000).fill(big);
    expect(jsonSize(many, 4 * 1024 * 1024)).toBe(4 * 1024 * 1024 + 1);
    // Deep nesting is walked without recursion.
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(jsonSize(deep, Number.MAX_SAFE_INTEGER)).toBe(400_001);
  });
});
