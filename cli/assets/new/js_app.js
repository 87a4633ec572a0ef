// {{tool}}: a toolhost tool written in JavaScript. Build it with `toolhost build`
// (./toolhost-sdk.js is supplied by the build).
import { exportTool } from './toolhost-sdk.js';
import { {{tool}} } from './tool.js';

export const tool = exportTool({{tool}}, { readOnly: true, concurrencySafe: true });
