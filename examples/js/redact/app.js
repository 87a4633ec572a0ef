// `redact-js`: replaces secrets in the text a tool returns, before anyone
// sees it (the JavaScript twin of examples/components/redact): AWS access
// key ids (`AKIA` and 16 of `0-9A-Z`) and the value of `password=`,
// `passwd=`, `secret=`, `token=` and `api_key=` (any case) up to the next
// whitespace, `&`, `;`, `,` or quote become `[REDACTED]`; a value already
// masked is not masked or counted again. Chunks are redacted one at a time;
// the metadata counts the redactions (`redact-js.count`).

import { chunk, exportMiddleware, mapText, output, textOf } from './toolhost-sdk.js';

const MASK = '[REDACTED]';
const KEY_ID = /(?<![0-9A-Z])AKIA[0-9A-Z]{16}(?![0-9A-Z])/g;
const VALUE = /(?<![0-9a-z])(password|passwd|secret|token|api_key)=([^\s&;,"']+)/gi;

/**
 * `[text with secrets replaced, how many were]`. A value that is already
 * the mask is left alone and not counted, so redacting twice changes
 * nothing (as the Rust rules in guest-tools/lib/redaction).
 */
export function redact(text) {
  let count = 0;
  const out = text
    .replace(KEY_ID, () => { count++; return MASK; })
    .replace(VALUE, (m, key, value) => {
      if (value === MASK) return m;
      count++;
      return `${key}=${MASK}`;
    });
  return [out, count];
}

export const middleware = exportMiddleware(
  { name: 'redact-js', description: 'Redacts AWS access key ids and password=/secret=/token= values from text output.' },
  (_tool, input, next) => {
    const inner = next(input);
    let total = 0;
    for (const c of inner) {
      total += redact(textOf(c))[1];
      output.emit(mapText(c, (t) => redact(t)[0]));
    }
    output.emit(chunk([], { metadata: { 'redact-js': { count: total } } }));
    inner.outcome();
  },
);
