// The tool's logic, free of host imports so that `node --test` runs it.

/**
 * Greets someone by name.
 *
 * @param {object} input
 * @param {string} input.name - Who to greet.
 * @param {integer} [input.times=1] - How many times to say it.
 */
export function {{tool}}({ name, times = 1 }) {
  return Array(times).fill(`Hello, ${name}!`).join('\n');
}
