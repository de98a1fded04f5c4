// harness.js: the real Phaseflow binary for the client's tests: built once from this
// checkout (or PHASEFLOW_BIN), run with the scripted upstream on free loopback ports and
// SQLite in a temporary folder, and a token signed with its secret.

import { execFileSync, spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const secret = 'client-test-secret-0123456789abcdef';

let built = null;

// binary builds phaseflow once per test process.
export function binary() {
  if (process.env.PHASEFLOW_BIN) return process.env.PHASEFLOW_BIN;
  if (!built) {
    const dir = mkdtempSync(join(tmpdir(), 'phaseflow-client-'));
    built = join(dir, 'phaseflow');
    execFileSync('go', ['build', '-o', built, './cmd/phaseflow'], { cwd: root, stdio: 'inherit' });
  }
  return built;
}

// start runs cmd with env until the test ends and answers the first stdout line matching
// re (its first group) and the process.
function start(args, env, re) {
  const proc = spawn(binary(), args, { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (b) => {
    stderr = (stderr + b).slice(-4000);
  });
  const lines = createInterface({ input: proc.stdout });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${args[0]} did not start:\n${stderr}`)), 30000);
    const found = [];
    lines.on('line', (line) => {
      const m = re.exec(line);
      if (m) found.push(m[1]);
      if (found.length === (re.count ?? 1)) {
        clearTimeout(timer);
        resolve({ proc, values: found });
      }
    });
    proc.on('exit', (code) => reject(new Error(`${args[0]} exited ${code}:\n${stderr}`)));
  });
}

// startServer runs the scripted upstream and a server on it; extraEnv adds settings.
// close() stops both and removes the data folder.
export async function startServer(extraEnv = {}) {
  const mockRe = /^PHASEFLOW_(?:UPSTREAM_URL|MCP_SERVERS)=(.*)$/;
  mockRe.count = 2;
  const mock = await start(['mock-upstream', '--addr', '127.0.0.1:0'], {}, mockRe);
  const data = mkdtempSync(join(tmpdir(), 'phaseflow-data-'));
  const server = await start(['serve'], {
    PHASEFLOW_ADDR: '127.0.0.1:0',
    PHASEFLOW_DATA_DIR: data,
    PHASEFLOW_JWT_SECRET: secret,
    PHASEFLOW_UPSTREAM_URL: mock.values[0],
    PHASEFLOW_MCP_SERVERS: mock.values[1],
    PHASEFLOW_UPSTREAM_MODEL: 'scripted-model',
    PHASEFLOW_HEARTBEAT_INTERVAL: '200ms',
    PHASEFLOW_LOG_LEVEL: 'warn',
    ...extraEnv,
  }, /^phaseflow listening on (\S+)$/);
  return {
    baseUrl: server.values[0],
    token: (sub = 'alice') => sign(sub),
    // stop sends the server SIGTERM (its graceful shutdown) and answers once it has exited.
    stop() {
      const exited = new Promise((resolve) => server.proc.once('exit', resolve));
      server.proc.kill('SIGTERM');
      return exited;
    },
    close() {
      server.proc.kill('SIGTERM');
      mock.proc.kill('SIGTERM');
      rmSync(data, { recursive: true, force: true });
    },
  };
}

// sign makes an HS256 user token for sub with the server's secret.
function sign(sub) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const body = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ sub, iat: now, exp: now + 3600, role: 'user' })}`;
  return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`;
}

// cuttingProxy forwards loopback connections to target and cuts an event stream's
// connection after the server has sent cut(n) bytes of it (n counts the event-stream
// requests from 0; Infinity: never), in the middle of whatever frame those bytes end in.
// Other requests pass whole, also on a connection a stream later uses. record(n, chunk)
// hears each chunk the server sent on event stream n, before any cut.
export async function cuttingProxy(target, cut, record = () => {}) {
  const { hostname, port } = new URL(target);
  let n = 0;
  const sockets = new Set();
  const srv = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    let limit = Infinity;
    let sent = 0;
    let stream = -1;
    client.on('data', (chunk) => {
      if (/^GET [^ ]*\/events/.test(chunk.toString('latin1', 0, 200))) {
        stream = n;
        limit = cut(n++);
        sent = 0;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (stream >= 0) record(stream, chunk);
      if (sent + chunk.length >= limit) {
        client.end(chunk.subarray(0, Math.max(0, limit - sent)));
        upstream.destroy();
        return;
      }
      sent += chunk.length;
      client.write(chunk);
    });
    const done = () => {
      client.destroy();
      upstream.destroy();
    };
    upstream.on('end', done).on('error', done);
    client.on('error', done).on('close', done);
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${srv.address().port}`,
    streams: () => n,
    close() {
      for (const s of sockets) s.destroy();
      srv.close();
    },
  };
}
