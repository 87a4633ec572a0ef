import assert from 'node:assert/strict';
import { test } from 'node:test';
import { {{tool}} } from './tool.js';

test('greets', () => {
  assert.equal({{tool}}({ name: 'Ada', times: 2 }), 'Hello, Ada!\nHello, Ada!');
});
