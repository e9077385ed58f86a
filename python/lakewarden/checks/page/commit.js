"use strict";
const parts = location.pathname.split("/").filter(Boolean);  // ui, repositories, REPO, refs, REF
const repo = decodeURIComponent(parts[2] || ""), ref = decodeURIComponent(parts[4] || "");
const api = `/api/v1/repositories/${encodeURIComponent(repo)}/refs/${encodeURIComponent(ref)}/checks`;
const tokenInput = document.getElementById("api-token");
tokenInput.value = sessionStorage.getItem("lakewarden-api-token") || "";
tokenInput.addEventListener("change", () => sessionStorage.setItem("lakewarden-api-token", tokenInput.value));

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else if (k.startsWith("data-")) node.setAttribute(k, v); else node[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}
// Only http(s) links are shown: a committed action file must not put javascript: into the page.
function safeLink(url) {
  try { const u = new URL(url, location.href); return u.protocol === "http:" || u.protocol === "https:" ? u.href : null; }
  catch (e) { return null; }
}
const logs = new Map();  // check id -> last log text fetched
async function loadLog(c) {
  try {
    const r = await fetch(c.log_url);
    if (r.ok) logs.set(c.id, await r.text());
  } catch (e) { /* the row shows what it had */ }
}
function merge(body) {
  const box = document.getElementById("merge");
  const items = (body.merge || []).map(m => {
    const list = el("ul", {});
    for (const c of m.checks) {
      const state = c.status === null ? "not run" : c.status + (c.pinned ? "" : " (not the protected definition)");
      list.append(el("li", { "data-mandatory": c.id }, el("strong", {}, c.id), `: ${state}`));
    }
    for (const r of m.reasons.filter(r => r.check === null)) list.append(el("li", {}, r.reason));
    const verdict = m.mergeable ? `Mergeable into ${m.branch}` : `Not mergeable into ${m.branch}`;
    return el("div", { class: `branch ${m.mergeable ? "ok" : "no"}`, "data-branch": m.branch || "",
                       "data-mergeable": String(m.mergeable) },
      el("div", { class: "verdict" }, verdict),
      el("div", { class: "muted" }, m.mandatory_checks.length ? `mandatory checks: ${m.mandatory_checks.join(", ")}` : "no mandatory checks"),
      list);
  });
  box.replaceChildren(...items);
  box.hidden = items.length === 0;
}
function when(ts) { return ts ? new Date(ts).toLocaleString() : "–"; }
function duration(a, b) {
  if (!a) return "";
  const s = Math.max(0, Math.round(((b ? new Date(b) : new Date()) - new Date(a)) / 1000));
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${Math.floor(s / 3600)}h ${Math.floor(s % 3600 / 60)}m`;
}
function say(text, bad) {
  const m = document.getElementById("message");
  m.textContent = text; m.className = bad ? "bad" : "";
}
async function post(url) {
  const r = await fetch(url, { method: "POST", headers: { "Authorization": `Bearer ${tokenInput.value}` } });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || `HTTP ${r.status}`);
  return body;
}
function row(c) {
  const meta = el("dl", { class: "meta" });
  for (const [k, v] of Object.entries(c.metadata || {})) meta.append(el("dt", {}, k), el("dd", {}, v));
  const times = el("div", {},
    el("div", {}, `started ${when(c.started_at)}`),
    c.finished_at ? el("div", {}, `finished ${when(c.finished_at)} (${duration(c.started_at, c.finished_at)})`)
                  : el("div", { class: "muted" }, `running ${duration(c.started_at)} · deadline ${when(c.deadline_at)}`),
    el("div", { class: "muted" }, `attempt ${c.attempt}`));
  const link = c.output_url ? safeLink(c.output_url) : null;
  const output = el("div", {},
    link ? el("a", { href: link, target: "_blank", rel: "noopener noreferrer" }, "logs") : el("span", { class: "muted" }, link === null && c.output_url ? "(link hidden: not http/https)" : ""),
    logs.get(c.id) ? el("pre", { class: "log" }, logs.get(c.id)) : null);
  let action = null;
  if (c.status === "FAILED" || c.status === "LOST") {
    action = el("button", { type: "button", "data-check": c.id, class: "retry" }, "Retry");
    action.addEventListener("click", async () => {
      action.disabled = true;
      try { await post(`${api}/${encodeURIComponent(c.id)}/retry`); say(`Retried ${c.id}.`); }
      catch (e) { say(`Retry of ${c.id} failed: ${e.message}`, true); }
      await load();
    });
  }
  return el("tr", { "data-check": c.id },
    el("td", {}, el("strong", {}, c.id), el("div", { class: "muted" }, `${c.type}${c.description ? " · " + c.description : ""}`)),
    el("td", {}, el("span", { class: `status ${c.status}`, "data-status": c.status }, c.status),
      c.error ? el("div", { class: "error" }, c.error) : null),
    el("td", {}, times), el("td", {}, meta), el("td", {}, output), el("td", {}, action));
}
async function load() {
  try {
    const r = await fetch(api);
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || `HTTP ${r.status}`);
    document.title = `Checks · ${body.repository}/${body.ref}`;
    document.getElementById("title").textContent = `${body.repository} / ${body.ref}`;
    document.getElementById("commit").textContent = body.commit_id;
    document.getElementById("commit-message").textContent = body.commit_message ? `— ${body.commit_message}` : "";
    merge(body);
    await Promise.all(body.checks.map(loadLog));
    const tbody = document.querySelector("#checks tbody");
    tbody.replaceChildren(...body.checks.map(row));
    document.getElementById("checks").hidden = body.checks.length === 0;
    document.getElementById("empty").hidden = body.checks.length !== 0;
    document.getElementById("refreshed").textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (e) { say(`Cannot load checks: ${e.message}`, true); }
}
document.getElementById("run").addEventListener("click", async () => {
  try { const b = await post(api); say(`Triggered ${b.checks.filter(c => c.triggered).length} check(s).`); }
  catch (e) { say(`Run failed: ${e.message}`, true); }
  await load();
});
load();
setInterval(load, 2000);
