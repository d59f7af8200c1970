// The batch protocol every npm adapter speaks (the same as clients/python/_driver.py; see
// docs/clients.md): jobs as JSON lines on stdin, answers as "@@client-matrix@@ {...}" lines
// on stdout. Whatever a library logs goes to stderr. A job that does not finish within its
// timeout is answered {hung: true} and the process exits (the runner starts a new one).
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const MARK = "@@client-matrix@@ ";
const HERE = dirname(fileURLToPath(import.meta.url));
const write = process.stdout.write.bind(process.stdout);
console.log = console.info = console.warn = console.debug = (...a) =>
  process.stderr.write(a.map(String).join(" ") + "\n");

function say(obj) {
  write(MARK + JSON.stringify(obj) + "\n");
}

export function packageVersion(name) {
  try {
    return JSON.parse(readFileSync(join(HERE, "node_modules", name, "package.json"), "utf8")).version;
  } catch {
    return "not installed";
  }
}

export function userText(request) {
  const users = request.messages.filter((m) => m.role === "user");
  return users.length ? String(users[users.length - 1].content) : "";
}

// One throw-away request to a closed port before "ready": the first use of a library loads
// most of its code, and on a loaded machine that alone can take longer than a job's bound.
const WARM_UP = {
  job: "warm-up", model: "warm-up", timeout: 60,
  request: { messages: [{ role: "user", content: "ping" }],
             tools: [{ type: "function", function: { name: "ping", description: "ping",
                                                     parameters: { type: "object", properties: {} } } }] },
};

async function closedPort() {
  // A port that was just free: nothing listens there.
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function serve(pkg, run) {
  const abort = new AbortController();
  const warmUp = { ...WARM_UP, base_url: `http://127.0.0.1:${await closedPort()}/v1` };
  let timer;
  await Promise.race([
    run(warmUp, abort.signal).catch(() => undefined),
    new Promise((resolve) => { timer = setTimeout(resolve, 60000); }),
  ]);
  clearTimeout(timer);
  abort.abort();
  say({ ready: true, package: pkg, version: packageVersion(pkg) });
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const job = JSON.parse(line);
    const ms = 1000 * Number(job.timeout ?? 10);
    const abort = new AbortController();
    let timer;
    const timeout = new Promise((resolve) => {
      timer = setTimeout(() => resolve({ hung: true }), ms);
    });
    const work = run(job, abort.signal).then(
      (calls) => ({ calls }),
      (error) => ({ exception: { type: error?.name || error?.constructor?.name || "Error",
                                 message: String(error?.message ?? error).slice(0, 500) } }),
    );
    const result = await Promise.race([work, timeout]);
    clearTimeout(timer);
    if (result.hung) {
      abort.abort();
      say({ job: job.job, hung: true, timeout: job.timeout });
      process.exit(3);
    }
    if (result.calls) {
      // invalid: the library's own flag (its reason, or true); a library that exposes no
      // call ids leaves id out (the judge then checks none).
      const calls = result.calls.map((c) => {
        const out = { name: c.name ?? null, arguments: c.arguments ?? null };
        if ("id" in c) out.id = c.id ?? null;
        if (c.invalid) out.invalid = typeof c.invalid === "string" ? c.invalid : true;
        return out;
      });
      say({ job: job.job, calls, count: calls.length });
    } else {
      say({ job: job.job, exception: result.exception });
    }
  }
}
