// `wordCount`: counts the lines, words and bytes of text files, like `wc`
// (the JavaScript twin of examples/components/word-count and
// examples/python/word-count). It streams one line per file, reads through
// the backend (`--grant wordCount=fs-read`), and with `remember: true` adds
// the totals to a running count in the agent state (`--grant
// wordCount=state`, `toolhost call --session NAME`).

import { ToolError, backend, chunk, exportTool, state } from './toolhost-sdk.js';

function counts(bytes) {
  const text = new TextDecoder().decode(bytes);
  let lines = 0;
  for (const b of bytes) if (b === 10) lines++;
  return [lines, text.split(/\s+/).filter(Boolean).length, bytes.length];
}

const pad = (n) => String(n).padStart(8);

/**
 * Counts lines, words and bytes of text files (like `wc`). Pass absolute paths.
 *
 * @param {object} input
 * @param {string[]} input.paths - Absolute paths of the files to count.
 * @param {boolean} [input.remember=false] - Add the totals to the running count kept for this session.
 */
export function* wordCount({ paths, remember = false }) {
  if (paths.length === 0) throw ToolError.invalidInput('pass at least one path');
  const total = [0, 0, 0];
  const rows = [];
  for (const path of paths) {
    const [lines, words, bytes] = counts(backend.readFile(path));
    yield `${pad(lines)} ${pad(words)} ${pad(bytes)} ${path}\n`;
    rows.push({ path, lines, words, bytes });
    total[0] += lines; total[1] += words; total[2] += bytes;
  }
  if (paths.length > 1) yield `${pad(total[0])} ${pad(total[1])} ${pad(total[2])} total\n`;
  if (remember) {
    const seen = state.get('word_count.words', 0) + total[1];
    state.set('word_count.words', seen);
    yield `${seen} words counted in this session\n`;
  }
  yield chunk([], { metadata: { files: rows } });
}

export const tool = exportTool(wordCount, {
  readOnly: ({ remember }) => !remember,
  concurrencySafe: true,
  reads: ['$WORKDIRS'],
  state: true,
});
