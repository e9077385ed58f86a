"use strict";
const page = (repo, ref) => `/ui/repositories/${encodeURIComponent(repo)}/refs/${encodeURIComponent(ref)}`;
document.getElementById("go").addEventListener("submit", e => {
  e.preventDefault();
  location.href = page(document.getElementById("repo").value, document.getElementById("ref").value);
});
fetch("/api/v1/recent").then(r => r.json()).then(body => {
  const tbody = document.getElementById("recent");
  for (const c of body.commits) {
    const tr = document.createElement("tr");
    const link = document.createElement("a");
    link.href = page(c.repository, c.commit_id);
    link.textContent = c.commit_id.slice(0, 16);
    const cells = [c.repository, link, c.ref, String(c.checks), new Date(c.updated_at).toLocaleString()];
    for (const v of cells) { const td = document.createElement("td"); td.append(v); tr.append(td); }
    tbody.append(tr);
  }
});
