// toolhost-sdk for JavaScript: write toolhost tools and middleware as
// WebAssembly components with componentize-js 0.23.0 (`toolhost build`).
//
//   import { tool, exportTool } from './toolhost-sdk.js';
//   /** Upper-cases text.
//    * @param {string} text - What to shout. */
//   export function shout({ text }) { return text.toUpperCase(); }
//   export const tool = exportTool(shout, { readOnly: true });
//
// The guide, beside Rust and Python: docs/plugin-authors.md.

import * as wlog from 'toolhost:tool/log@0.1.0';
import * as woutput from 'toolhost:tool/output@0.1.0';
import * as wbackend from 'toolhost:tool/backend@0.1.0';
import * as wstate from 'toolhost:tool/state@0.1.0';
// Written by `toolhost build`: the JSDoc of the exported functions, read in Node.
import docs from './toolhost-docs.js';

/** The message of a function tool's own permission check (as AgentScope's
 * FunctionTool and the Rust and Python SDKs). */
export const FUNCTION_TOOL_ASK = 'Custom function tools must be explicitly allowed by the user.';

const KINDS = ['invalid-input', 'denied', 'not-found', 'timeout', 'io', 'unsupported', 'internal'];

/** Ends a call with the WIT `tool-error` case `kind` (`invalid-input`,
 * `denied`, `not-found`, `timeout`, `io`, `unsupported`, `internal`). The
 * backend and state functions throw it too. Any other exception a function
 * tool throws becomes an error result `Error: <name>: <message>`. */
export class ToolError extends Error {
  constructor(message, kind = 'internal') {
    if (!KINDS.includes(kind)) throw new Error(`ToolError kind ${kind} is not one of ${KINDS.join(', ')}`);
    super(message);
    this.kind = kind;
    // componentize-js returns a thrown value (or its `payload`) as the `err`.
    this.tag = kind;
    this.val = String(message);
    this.payload = { tag: kind, val: String(message) };
  }
  static invalidInput(m) { return new ToolError(m, 'invalid-input'); }
  static denied(m) { return new ToolError(m, 'denied'); }
  static notFound(m) { return new ToolError(m, 'not-found'); }
  static timeout(m) { return new ToolError(m, 'timeout'); }
  static io(m) { return new ToolError(m, 'io'); }
  static unsupported(m) { return new ToolError(m, 'unsupported'); }
  static internal(m) { return new ToolError(m, 'internal'); }
}

function fromWit(e) {
  const v = e && Object.prototype.hasOwnProperty.call(e, 'payload') ? e.payload : e;
  if (v && typeof v === 'object' && KINDS.includes(v.tag)) return new ToolError(v.val, v.tag);
  return new ToolError(typeof v === 'string' ? v : String(e), 'denied');
}

function unwrap(f, ...args) {
  try {
    return f(...args);
  } catch (e) {
    throw fromWit(e);
  }
}

/** A chunk of output: `content` is a list of strings (text) and
 * `{data: Uint8Array, mediaType, name?, id?}` (binary), `state` a WIT
 * `result-state` name, `metadata` an object merged into the response. */
export function chunk(content = [], { state = 'running', metadata } = {}) {
  return { content: Array.isArray(content) ? content : [content], state, metadata };
}

/** The text blocks of a chunk, joined. */
export function textOf(c) {
  return c.content.filter((b) => typeof b === 'string').join('');
}

/** A copy of a chunk with every text block replaced by `f(text)`. */
export function mapText(c, f) {
  return { ...c, content: c.content.map((b) => (typeof b === 'string' ? f(b) : b)) };
}

function toChunk(v) {
  if (v && typeof v === 'object' && Array.isArray(v.content)) return v;
  if (typeof v === 'string') return chunk([v]);
  if (v instanceof Uint8Array) return chunk([new TextDecoder().decode(v)]);
  return chunk([JSON.stringify(v)]);
}

function toWitChunk(c) {
  return {
    content: c.content.map((b) => (typeof b === 'string'
      ? { tag: 'text', val: b }
      : { tag: 'data', val: { id: b.id, mediaType: b.mediaType, data: b.data, name: b.name } })),
    state: c.state || 'running',
    metadata: c.metadata ? JSON.stringify(c.metadata) : '',
  };
}

function fromWitChunk(c) {
  return {
    content: c.content.map((b) => (b.tag === 'text' ? b.val : { ...b.val })),
    state: c.state,
    metadata: c.metadata ? JSON.parse(c.metadata) : undefined,
  };
}

/** Sending output while a call runs; `emit` returns false once the output
 * cap is reached (stop producing). */
export const output = {
  emit(c) { return woutput.emit(toWitChunk(toChunk(c))); },
  text(text, metadata) { return output.emit(chunk([text], { metadata })); },
  error(text) { return output.emit(chunk([text], { state: 'error' })); },
};

/** Lines for the host's log (`toolhost -v`), never shown to the model. */
export const log = Object.fromEntries(['trace', 'debug', 'info', 'warn', 'error']
  .map((level) => [level, (message) => wlog.log(level, String(message))]));

/** The backend's files and processes, as far as the user granted them.
 * Failures throw `ToolError` (`denied` outside the grants). */
export const backend = {
  cwd: () => wbackend.cwd(),
  expandUser: (p) => wbackend.expandUser(p),
  os: () => wbackend.os(),
  readFile: (p) => unwrap(wbackend.readFile, p),
  readText: (p) => new TextDecoder().decode(unwrap(wbackend.readFile, p)),
  writeFile: (p, data) => unwrap(wbackend.writeFile, p, typeof data === 'string' ? new TextEncoder().encode(data) : data),
  stat: (p) => unwrap(wbackend.stat, p),
  listDir: (p) => unwrap(wbackend.listDir, p),
  createDir: (p) => unwrap(wbackend.createDir, p),
  remove: (p) => unwrap(wbackend.remove, p),
  realPath: (p) => unwrap(wbackend.realPath, p),
  walk(root, { globs = [], hidden = false, respectIgnoreFiles = true, maxEntries = 0, matchNames = [] } = {}) {
    return unwrap(wbackend.walk, {
      root, globs, fileType: undefined, hidden, respectIgnoreFiles, followSymlinks: false, maxEntries, matchNames,
    }).map((e) => e.path);
  },
  /** Runs a program (needs the `exec` grant): `{code, stdout, stderr}` once it ended. */
  run(argv, { cwd, env = {}, timeoutMs = 60000 } = {}) {
    const p = unwrap(wbackend.spawn, { argv, cwd, env: Object.entries(env), timeoutMs: BigInt(timeoutMs), maxOutputBytes: 0n });
    const out = [], err = [];
    for (let piece; (piece = p.nextOutput()) !== undefined; ) (piece.tag === 'stdout' ? out : err).push(piece.val);
    const status = p.wait();
    const text = (parts) => parts.map((b) => new TextDecoder().decode(b)).join('');
    return { code: status.code, stdout: text(out), stderr: text(err) };
  },
};

/** The agent state, for tools declared with `state: true`: JSON values
 * under keys, kept by the host between calls of a session. */
export const state = {
  get(key, fallback) {
    const text = unwrap(wstate.get, key);
    return text === undefined ? fallback : JSON.parse(text);
  },
  set: (key, value) => unwrap(wstate.set, key, JSON.stringify(value)),
  compareAndSet: (key, expected, value) => unwrap(wstate.compareAndSet, key,
    expected === undefined ? undefined : JSON.stringify(expected), JSON.stringify(value)),
  cacheFile: (p, content) => wstate.cacheFile(p, content),
  cachedFile: (p) => wstate.cachedFile(p),
  forgetFile: (p) => wstate.forgetFile(p),
};

/** Permission answers for `checkPermissions`. */
export const allow = (message = '', reason) => ({ behavior: 'allow', message, reason });
export const deny = (message, reason) => ({ behavior: 'deny', message, reason });
export const ask = (message, { reason, bypassImmune = false } = {}) => ({ behavior: 'ask', message, reason, bypassImmune });
export const passthrough = (message = '') => ({ behavior: 'passthrough', message });

/** A tool with the whole `tool` interface in your hands: set the fields
 * (`name`, `description`, `inputSchema`, `readOnly`, `concurrencySafe`,
 * `reads`, `writes`, `exec`, `network`, `state`) and override `call(input)`;
 * `checkReadOnly`, `checkPermissions` (passthrough), `matchRule` (never)
 * and `suggestions` (the tool) have AgentScope's defaults. */
export class ToolBase {
  constructor(fields = {}) {
    Object.assign(this, { description: '', inputSchema: { type: 'object', properties: {} }, readOnly: false,
      concurrencySafe: false, reads: [], writes: [], exec: false, network: false, state: false }, fields);
  }
  checkReadOnly(_input) { return Boolean(this.readOnly); }
  checkPermissions(_input, _context) { return passthrough(); }
  matchRule(_behavior, _content, _input, _context) { return false; }
  suggestions(_input, _context) { return [{ toolName: this.name }]; }
  call(_input) { throw ToolError.internal(`${this.name}: ToolBase.call is not overridden`); }
}

/** A function as a tool. Name: the function's name or `options.name`;
 * description and schema: the function's JSDoc (read by `toolhost build`)
 * or `options.description` / `options.schema`. Options: `readOnly` (a bool
 * or a function of the input), `concurrencySafe`, `reads`, `writes`,
 * `exec`, `network`, `state`. The function takes the input object and
 * returns output (string, chunk, JSON value) or, as a generator, yields
 * chunks as they come (streaming); throwing `ToolError` ends the call with
 * it. Permission: like AgentScope's function tools, an ask. */
export function tool(fn, options = {}) {
  const doc = docs[fn.name] || {};
  const t = new ToolBase({
    name: options.name || fn.name,
    description: options.description || doc.description,
    inputSchema: options.schema || doc.schema,
    readOnly: typeof options.readOnly === 'function' ? false : Boolean(options.readOnly),
    concurrencySafe: Boolean(options.concurrencySafe),
    reads: options.reads || [], writes: options.writes || [],
    exec: Boolean(options.exec), network: Boolean(options.network), state: Boolean(options.state),
  });
  if (!t.description) throw new Error(`tool ${t.name}: give the function a JSDoc comment (the model reads it) or options.description`);
  if (!t.inputSchema) throw new Error(`tool ${t.name}: no JSDoc @param found; give options.schema`);
  t.checkReadOnly = (input) => (typeof options.readOnly === 'function' ? Boolean(options.readOnly(input)) : t.readOnly);
  t.checkPermissions = () => ask(FUNCTION_TOOL_ASK);
  t.call = (input) => fn(input);
  t.function = true;
  return t;
}

function context(c) {
  return { ...c, toolConfig: JSON.parse(c.toolConfig || '{}') };
}

function decision(d) {
  return { behavior: d.behavior, message: d.message || '', reason: d.reason, bypassImmune: Boolean(d.bypassImmune),
    suggestedRules: (d.suggestedRules || []).map(rule) };
}

function rule(r) {
  return { toolName: r.toolName, ruleContent: r.content ?? r.ruleContent, behavior: r.behavior || 'allow' };
}

function send(result) {
  if (result === undefined || result === null) return;
  if (typeof result === 'object' && typeof result.next === 'function' && typeof result[Symbol.iterator] === 'function') {
    for (const item of result) if (item !== undefined && item !== null && !output.emit(item)) break;
    return;
  }
  if (typeof result.then === 'function') throw ToolError.internal('tool functions must be synchronous (componentize-js)');
  output.emit(result);
}

/** The `tool` export of the component (`export const tool = exportTool(t)`),
 * for a `tool(...)` function tool, a `ToolBase` instance, or a function and
 * its options (`exportTool(fn, options)`). */
export function exportTool(t, options) {
  if (typeof t === 'function') t = tool(t, options);
  const metadata = {
    name: t.name, description: t.description, inputSchema: JSON.stringify(t.inputSchema),
    concurrencySafe: Boolean(t.concurrencySafe), readOnly: Boolean(t.readOnly), external: false,
    stateInjected: Boolean(t.state), mcpOrigin: undefined, resultMetadataSchema: undefined,
    capabilities: { fsRead: [...t.reads], fsWrite: [...t.writes], processExec: Boolean(t.exec), network: Boolean(t.network) },
  };
  const parse = (text) => (text ? JSON.parse(text) : {});
  return {
    metadata: () => metadata,
    checkReadOnly: (input) => Boolean(t.checkReadOnly(parse(input))),
    checkPermissions: (input, ctx) => decision(t.checkPermissions(parse(input), context(ctx))),
    matchRule(behavior, contents, input, ctx) {
      const args = parse(input), c = context(ctx);
      const i = contents.findIndex((content) => t.matchRule(behavior, content, args, c));
      return i < 0 ? undefined : i;
    },
    generateSuggestions: (input, ctx) => t.suggestions(parse(input), context(ctx)).map(rule),
    call(input) {
      try {
        send(t.call(parse(input)));
      } catch (e) {
        if (e instanceof ToolError) throw e;
        if (!t.function) throw ToolError.internal(`${e && e.name}: ${e && e.message}`);
        output.emit(chunk([`Error: ${e && e.name}: ${e && e.message}`], { state: 'error' }));
      }
    },
  };
}

/** The `middleware` export (`export const middleware = exportMiddleware(
 * {name, description}, (tool, input, next) => ...)`). `next(input)` runs
 * the inner layers and returns an iterable of chunks with `outcome()`
 * (throws their `ToolError`); pass a changed object to change the input.
 * Send chunks with `output.emit`; throw `ToolError` to fail the call. */
export function exportMiddleware({ name, description = '' }, fn) {
  if (!name) throw new Error('a middleware needs a name (settings attach it by name)');
  return {
    info: () => ({ name, description }),
    onToolCall(meta, input, next) {
      const info = { name: meta.name, description: meta.description, inputSchema: JSON.parse(meta.inputSchema),
        readOnly: meta.readOnly, concurrencySafe: meta.concurrencySafe };
      const run = (value) => {
        const inner = unwrap((text) => next.run(text), typeof value === 'string' ? value : JSON.stringify(value));
        return {
          *[Symbol.iterator]() {
            for (let c; (c = inner.nextChunk()) !== undefined; ) yield fromWitChunk(c);
          },
          outcome: () => unwrap(() => inner.outcome()),
        };
      };
      try {
        fn(info, JSON.parse(input), run);
      } catch (e) {
        if (e instanceof ToolError) throw e;
        throw ToolError.internal(`middleware ${name}: ${e && e.name}: ${e && e.message}`);
      }
    },
  };
}
