// Run by `toolhost build` for a JavaScript project, from its staging folder
// (.toolhost/js): reads the JSDoc of every exported function of the staged
// modules into toolhost-docs.js (the SDK's `tool()` reads it), then builds
// the component with componentize-js (called as a library: the jco CLI
// fails on Node 20).
//
//   node build.mjs <componentize-js module> <entry.js> <world> <out.wasm>
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { documentedFunctions } from './jsdoc.js';

const [moduleDir, entry, world, out] = process.argv.slice(2);
const docs = {};
for (const file of readdirSync('.')) {
  if (/\.m?js$/.test(file) && !['build.mjs', 'jsdoc.js', 'toolhost-docs.js', 'toolhost-sdk.js'].includes(file)) {
    Object.assign(docs, documentedFunctions(readFileSync(file, 'utf8')));
  }
}
writeFileSync('toolhost-docs.js', `export default ${JSON.stringify(docs, null, 2)};\n`);
const { componentize } = await import(pathToFileURL(`${moduleDir}/src/componentize.js`).href);
const { component } = await componentize({
  sourcePath: entry,
  witPath: 'wit',
  worldName: world,
  // No wasi:http: the host does not link it, and a component importing it fails to load.
  disableFeatures: ['http', 'fetch-event'],
});
writeFileSync(out, component);
