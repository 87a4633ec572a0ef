// The JSDoc half of the JavaScript SDK: turns the doc comment of an exported
// function into a tool's description and input schema. Pure JavaScript (no
// host imports): `toolhost build` runs it in Node over the sources before
// componentize-js, and `node --test` runs it in the unit tests.

/** JSON Schema of one JSDoc type: `string`, `number`, `integer`, `boolean`,
 * `object`, `any`/`*`, `T[]` / `Array<T>`, `'a'|'b'` (an enum). */
export function jsonType(type) {
  const t = (type || '').trim();
  if (t === '' || t === '*' || t === 'any') return {};
  if (/^(['"]).*\1(\s*\|\s*(['"]).*\3)*$/.test(t)) {
    return { type: 'string', enum: t.split('|').map((s) => s.trim().slice(1, -1)) };
  }
  if (t.endsWith('[]')) return { type: 'array', items: jsonType(t.slice(0, -2)) };
  const arr = /^Array<(.+)>$/.exec(t);
  if (arr) return { type: 'array', items: jsonType(arr[1]) };
  const simple = { string: 'string', number: 'number', integer: 'integer', boolean: 'boolean', object: 'object', Object: 'object' };
  if (simple[t]) return { type: simple[t] };
  throw new Error(`toolhost-sdk cannot turn the JSDoc type {${t}} into a JSON Schema; use string, number, integer, boolean, object, T[], 'a'|'b' or *, or give the schema explicitly`);
}

/** `{description, schema}` from the text of one JSDoc comment (without the
 * `/**` and `*\/`). Parameters are `@param {type} name - text` or, for a
 * function taking one object, `@param {type} input.name - text`;
 * `[name]` is optional and `[name=value]` has a default (JSON). */
export function parseJsdoc(comment) {
  const lines = comment.split('\n').map((l) => l.replace(/^\s*\*\s?/, ''));
  const description = [];
  const params = [];
  let current = null;
  for (const line of lines) {
    const tag = /^@(\w+)\s*(.*)$/.exec(line.trim());
    if (tag) {
      current = null;
      if (tag[1] === 'param' || tag[1] === 'arg' || tag[1] === 'argument') {
        const m = /^(?:\{([^}]*)\})?\s*(\[[^\]]+\]|[\w.$]+)\s*(?:-\s*)?(.*)$/.exec(tag[2]);
        if (!m) throw new Error(`cannot read the JSDoc tag @param ${tag[2]}`);
        let name = m[2], optional = false, def;
        if (name.startsWith('[')) {
          optional = true;
          const inner = name.slice(1, -1);
          const eq = inner.indexOf('=');
          name = eq < 0 ? inner : inner.slice(0, eq);
          if (eq >= 0) def = JSON.parse(inner.slice(eq + 1).trim().replace(/^'(.*)'$/, '"$1"'));
        }
        current = { name: name.trim(), type: m[1], optional, def, text: m[3].trim() };
        params.push(current);
      }
    } else if (current) {
      if (line.trim()) current.text = `${current.text} ${line.trim()}`.trim();
    } else if (params.length === 0) {
      description.push(line);
    }
  }
  const dotted = params.some((p) => p.name.includes('.'));
  const properties = {};
  const required = [];
  for (const p of params) {
    if (dotted && !p.name.includes('.')) continue; // the object holding them
    const name = dotted ? p.name.slice(p.name.indexOf('.') + 1) : p.name;
    const schema = { ...jsonType(p.type) };
    if (p.text) schema.description = p.text;
    if (p.def !== undefined) schema.default = p.def;
    if (!p.optional) required.push(name);
    properties[name] = schema;
  }
  const schema = { type: 'object', properties, additionalProperties: false };
  if (required.length) schema.required = required;
  return { description: description.join('\n').trim(), schema };
}

/** The documented exported functions of a module's source text, by name. */
export function documentedFunctions(source) {
  const found = {};
  const re = /\/\*\*([\s\S]*?)\*\/\s*export\s+(?:async\s+)?function\s*\*?\s*([\w$]+)/g;
  for (let m; (m = re.exec(source)); ) found[m[2]] = parseJsdoc(m[1]);
  return found;
}
