// A small environment served over adapt's environment protocol (v1), in Node with nothing but
// node:http: "lamps", a row of lamps to switch into a target pattern.
//
//   node server.mjs [PORT]          # binds 127.0.0.1:PORT (default 8200)
//   LAMPS_TOKEN=... node server.mjs # clients must then send Authorization: Bearer ...
//
// Register it with a worker:
//   ADAPT_REMOTE_ENVIRONMENTS='{"lamps": {"url": "http://127.0.0.1:8200"}}'
//   ADAPT_REMOTE_ENVIRONMENT_ALLOWED_NETWORKS='["127.0.0.1/32"]'
//
// The protocol (docs/remote-environments.md, docs/remote-environments.openapi.json): metadata,
// sessions, steps numbered by the client (a number already applied is answered with the stored
// answer, never applied again), verdicts, task observations, problem details, idle sessions
// forgotten. Everything about the world is below `// -- the world`.

import { createServer } from "node:http";
import { randomUUID, timingSafeEqual } from "node:crypto";

const PORT = Number(process.argv[2] || process.env.PORT || 8200);
const TOKEN = process.env.LAMPS_TOKEN || "";
const IDLE_SECONDS = Number(process.env.LAMPS_IDLE_SECONDS || 600);
const MAX_SESSIONS = 100;
const MAX_BODY = 1 << 20;
const KEEP_ANSWERS = 64;
const PROBLEM = "urn:adapt:env-problem:";

// -- the world ---------------------------------------------------------------------------------

const META = {
  protocol: 1,
  name: "lamps",
  description: "Switch a row of lamps into the pattern the goal names (reward 1 when it holds).",
  config_schema: {
    type: "object",
    additionalProperties: false,
    properties: {
      seed: { type: "integer", minimum: 0, default: 0, description: "Which pattern.", examples: [3] },
      lamps: { type: "integer", minimum: 3, maximum: 9, default: 5, description: "How many lamps." },
    },
  },
  default_max_steps: 12,
  action_grammar: "toggle <n>  (switch lamp n on or off)\nlook  (see every lamp)",
  state_fields: ["lamps on"],
  success_reward: 1.0,
  verifies: true,
};

const PROMPTS = {
  executor:
    "You switch lamps. Write exactly one action per line; its observation follows.\n" +
    "Actions:\n" + META.action_grammar + "\n\n" +
    "A line that starts with think: is a thought. When your task is done, write a thought that " +
    "ends with Task completed! If you cannot do it, end with Task failed!\n\n" +
    "Here is your task.\n\n$task\n$context\n",
  planner:
    "Split the task into steps, one lamp each, as:\nStep 1: turn on lamp 2\n...\n" +
    "Execution Order: (Step 1 AND Step 2)\n\nHere is your task.\n\n$task\n$context\n",
};

function rng(seed) { // mulberry32: the same pattern for the same seed, everywhere
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function validate(config) {
  const errors = [];
  if (config === null || typeof config !== "object" || Array.isArray(config)) {
    return { errors: [{ field: "config", message: "must be an object" }] };
  }
  for (const key of Object.keys(config)) {
    if (!(key in META.config_schema.properties)) errors.push({ field: key, message: "unknown field" });
  }
  const seed = config.seed ?? 0;
  const lamps = config.lamps ?? 5;
  if (!Number.isInteger(seed) || seed < 0) errors.push({ field: "seed", message: "must be an integer >= 0" });
  if (!Number.isInteger(lamps) || lamps < 3 || lamps > 9) errors.push({ field: "lamps", message: "must be an integer from 3 to 9" });
  return { errors, seed, lamps };
}

class Lamps {
  constructor({ seed, lamps }) {
    const draw = rng(seed * 31 + lamps);
    this.on = new Array(lamps).fill(false);
    this.target = this.on.map(() => draw() < 0.5);
    if (!this.target.some(Boolean)) this.target[Math.floor(draw() * lamps)] = true;
    const wanted = this.target.map((v, i) => (v ? i + 1 : 0)).filter(Boolean);
    this.goal = `turn on lamps ${wanted.join(", ")} and no other`;
  }
  listing() {
    return "Lamps: " + this.on.map((v, i) => `${i + 1} ${v ? "on" : "off"}`).join(", ");
  }
  state() {
    const lit = this.on.map((v, i) => (v ? i + 1 : 0)).filter(Boolean);
    return `lamps on: ${lit.length ? lit.join(", ") : "none"}`;
  }
  task(goal) { return `${this.listing()}\nGoal: ${goal.trim().replace(/\.$/, "")}.`; }
  solved() { return this.on.every((v, i) => v === this.target[i]); }
  step(action) {
    const text = action.trim().toLowerCase();
    if (text === "look") return { observation: this.listing(), failed: false };
    const m = /^toggle\s+(\d+)$/.exec(text);
    const n = m ? Number(m[1]) : 0;
    if (!m || n < 1 || n > this.on.length) {
      return { observation: `Nothing happens: ${action.slice(0, 200)}`, failed: true };
    }
    this.on[n - 1] = !this.on[n - 1];
    return { observation: `Lamp ${n} is now ${this.on[n - 1] ? "on" : "off"}.`, failed: false };
  }
  verify(goal) { // "turn on lamp N" / "turn off lamp N"; the root goal; else unknown
    const m = /^turn (on|off) lamp (\d+)\.?$/.exec(goal.trim().toLowerCase());
    if (m && Number(m[2]) >= 1 && Number(m[2]) <= this.on.length) {
      const held = this.on[Number(m[2]) - 1] === (m[1] === "on");
      return { verdict: held ? "confirmed" : "refuted", evidence: `lamp ${m[2]} is ${this.on[Number(m[2]) - 1] ? "on" : "off"}` };
    }
    if (goal.trim().replace(/\.$/, "") === this.goal) {
      return { verdict: this.solved() ? "confirmed" : "refuted", evidence: this.state() };
    }
    return { verdict: "unknown", evidence: "" };
  }
}

// -- the protocol ------------------------------------------------------------------------------

const sessions = new Map(); // id -> {world, seq, answers: Map, lastUsed}

function send(res, status, body, type = "application/json") {
  const text = body === undefined ? "" : JSON.stringify(body);
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function problem(res, status, slug, detail) {
  send(res, status, { type: PROBLEM + slug, title: slug.replace(/-/g, " "), status, detail },
    "application/problem+json");
}

function authorized(req) {
  if (!TOKEN) return true;
  const given = Buffer.from((req.headers.authorization || "").replace(/^Bearer /, ""));
  const want = Buffer.from(TOKEN);
  return given.length === want.length && timingSafeEqual(given, want);
}

function expire() {
  const now = Date.now();
  for (const [id, s] of sessions) if (now - s.lastUsed > IDLE_SECONDS * 1000) sessions.delete(id);
}

function readJson(req) {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks = [];
    req.on("data", (c) => {
      size += c.length;
      if (size > MAX_BODY) { reject(Object.assign(new Error("too large"), { status: 413 })); req.destroy(); }
      else chunks.push(c);
    });
    req.on("end", () => {
      try { resolve(JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}")); }
      catch { reject(Object.assign(new Error("the body is not JSON"), { status: 400 })); }
    });
    req.on("error", reject);
  });
}

function change(res, session, body, apply) {
  const seq = body.seq;
  if (!Number.isInteger(seq) || seq < 1) return problem(res, 422, "invalid-request", "seq: an integer >= 1");
  if (seq <= session.seq) {
    const stored = session.answers.get(seq);
    if (!stored) return problem(res, 409, "sequence-conflict", `change ${seq} is no longer kept`);
    return send(res, 200, { ...stored, repeated: true });
  }
  if (seq !== session.seq + 1) return problem(res, 409, "sequence-conflict", `the next change is ${session.seq + 1}`);
  const answer = { ...apply(), seq, repeated: false };
  session.seq = seq;
  session.answers.set(seq, answer);
  if (session.answers.size > KEEP_ANSWERS) session.answers.delete(session.answers.keys().next().value);
  return send(res, 200, answer);
}

async function handle(req, res) {
  const path = new URL(req.url, "http://x").pathname;
  if (req.method === "GET" && path === "/v1/health") return send(res, 200, { status: "ok", sessions: sessions.size });
  if (!authorized(req)) return problem(res, 401, "unauthorized", "send Authorization: Bearer <token>");
  expire();
  if (req.method === "GET" && path === "/v1/environment") return send(res, 200, META);
  if (req.method === "POST" && path === "/v1/sessions") {
    if (sessions.size >= MAX_SESSIONS) return problem(res, 503, "too-many-sessions", "too many sessions");
    const body = await readJson(req);
    const { errors, seed, lamps } = validate(body.config ?? {});
    if (errors.length) {
      return problem(res, 422, "invalid-config", errors.map((e) => `${e.field}: ${e.message}`).join("; "));
    }
    const world = new Lamps({ seed, lamps });
    const id = randomUUID().replace(/-/g, "");
    sessions.set(id, { world, seq: 0, answers: new Map(), lastUsed: Date.now() });
    return send(res, 201, {
      session: id, observation: world.task(world.goal), goal: world.goal, state: world.state(),
      prompts: PROMPTS, prompt_variables: {}, rolls_back: false, tools: [], idle_seconds: IDLE_SECONDS,
    });
  }
  const m = /^\/v1\/sessions\/([^/]+)(?:\/([a-z-]+))?$/.exec(path);
  if (!m) return problem(res, 404, "not-found", `no route ${req.method} ${path}`);
  const session = sessions.get(m[1]);
  if (!session) return problem(res, 404, "session-not-found", "no such session; start a new one");
  session.lastUsed = Date.now();
  const world = session.world;
  if (req.method === "DELETE" && !m[2]) { sessions.delete(m[1]); res.writeHead(204); return res.end(); }
  if (req.method !== "POST") return problem(res, 405, "method-not-allowed", `${req.method} ${path}`);
  const body = await readJson(req);
  switch (m[2]) {
    case "steps":
      if (typeof body.action !== "string") return problem(res, 422, "invalid-request", "action: a string");
      return change(res, session, body, () => {
        const { observation, failed } = world.step(body.action);
        const solved = world.solved();
        return { observation, failed, reward: solved ? 1 : 0, done: solved, info: {}, state: world.state() };
      });
    case "task-observation":
      return send(res, 200, { observation: world.task(String(body.goal ?? "")) });
    case "verify":
      return send(res, 200, world.verify(String(body.goal ?? "")));
    default:
      return problem(res, 404, "not-found", `no route POST ${path}`);
  }
}

createServer((req, res) => {
  handle(req, res).catch((err) => {
    if (!res.headersSent) problem(res, err.status || 500, err.status ? "invalid-request" : "environment-error", err.status ? err.message : "the environment failed");
  });
}).listen(PORT, "127.0.0.1", () => {
  console.log(`lamps: adapt's environment protocol on http://127.0.0.1:${PORT}`);
});
