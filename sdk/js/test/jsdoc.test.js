// The JSDoc schema derivation, in plain Node: node --test sdk/js/test
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { documentedFunctions, jsonType, parseJsdoc } from '../jsdoc.js';

test('the word-count example documents its schema in JSDoc', () => {
  const source = readFileSync(new URL('../../../examples/js/word-count/app.js', import.meta.url), 'utf8');
  const { wordCount } = documentedFunctions(source);
  assert.equal(wordCount.description, 'Counts lines, words and bytes of text files (like `wc`). Pass absolute paths.');
  assert.deepEqual(wordCount.schema, {
    type: 'object',
    properties: {
      paths: { type: 'array', items: { type: 'string' }, description: 'Absolute paths of the files to count.' },
      remember: { type: 'boolean', description: 'Add the totals to the running count kept for this session.', default: false },
    },
    required: ['paths'],
    additionalProperties: false,
  });
});

test('top-level params, enums, optionals and continuation lines', () => {
  const { schema, description } = parseJsdoc(`
   * Greets.
   * @param {string} name - Who
   *   to greet.
   * @param {'loud'|'soft'} [tone='soft'] - How.
   * @param {number[]} [weights]
   * @returns {string}`);
  assert.equal(description, 'Greets.');
  assert.deepEqual(schema.properties.name, { type: 'string', description: 'Who to greet.' });
  assert.deepEqual(schema.properties.tone, { type: 'string', enum: ['loud', 'soft'], description: 'How.', default: 'soft' });
  assert.deepEqual(schema.properties.weights, { type: 'array', items: { type: 'number' } });
  assert.deepEqual(schema.required, ['name']);
});

test('unknown JSDoc types are refused with the fix', () => {
  assert.throws(() => jsonType('Map<string,number>'), /cannot turn the JSDoc type/);
});
