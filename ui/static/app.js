// levers9 dashboard script: only the live parts (log following and the
// cost estimate). Every page works without it. Text from the server is
// only ever put into the page as text (textContent), never as HTML.
"use strict";

// followLogs appends the lines of a running service as the server streams
// them (server-sent events), and reloads the page once the job has ended
// so its final status shows.
function followLogs(pre) {
  const url = pre.dataset.follow;
  const state = document.getElementById("logs-state");
  const es = new EventSource(url);
  es.addEventListener("line", (ev) => {
    const l = JSON.parse(ev.data);
    const span = document.createElement("span");
    span.className = l.stream;
    span.textContent = l.text + "\n";
    const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.appendChild(span);
    if (atBottom) pre.scrollTop = pre.scrollHeight;
  });
  es.addEventListener("end", () => {
    es.close();
    if (state) state.textContent = "The job has ended.";
    setTimeout(() => location.reload(), 500);
  });
  es.onerror = () => {
    if (state) state.textContent = "Reconnecting…";
  };
  es.onopen = () => {
    if (state) state.textContent = "Following while the job runs…";
  };
}

// watchEstimate prices the submit form as it changes, through the same
// check and pricing the server charges with (GET /submit/estimate).
function watchEstimate(form) {
  const out = document.getElementById("estimate");
  const problems = document.getElementById("estimate-problems");
  let seq = 0;
  let timer = null;
  const update = async () => {
    const mine = ++seq;
    const q = new URLSearchParams(new FormData(form));
    q.delete("csrf");
    try {
      const res = await fetch("/submit/estimate?" + q.toString(), { headers: { Accept: "application/json" } });
      const body = await res.json();
      if (mine !== seq) return; // an older answer arriving late
      if (body.perMinute !== undefined) {
        out.textContent = body.perMinute + " tokens/minute + " + body.startFee + " to start; " + body.total + " for " + body.minutes + " minutes";
        out.dataset.perMinute = body.perMinute;
      } else {
        out.textContent = "—";
        delete out.dataset.perMinute;
      }
      problems.replaceChildren();
      for (const p of body.problems || []) {
        const li = document.createElement("li");
        li.textContent = (p.field ? p.field + ": " : "") + p.message;
        problems.appendChild(li);
      }
      const mounts = document.getElementById("mounts");
      if (body.mountable && mounts && mounts.dataset.queue !== body.queue) {
        renderMounts(mounts, body.queue, body.mountable);
      }
    } catch (e) {
      if (mine === seq) out.textContent = "—";
    }
  };
  const soon = () => { clearTimeout(timer); timer = setTimeout(update, 150); };
  form.addEventListener("input", soon);
  form.addEventListener("change", soon);
  update();
}

// renderMounts offers the buckets mountable from the chosen queue.
function renderMounts(box, queue, names) {
  box.dataset.queue = queue;
  const list = box.querySelector("ul");
  list.replaceChildren();
  names.forEach((name) => {
    const li = document.createElement("li");
    const label = document.createElement("label");
    const cb = document.createElement("input");
    cb.type = "checkbox";
    cb.name = "mount";
    cb.value = name;
    label.append(cb, " " + name + " at ");
    const path = document.createElement("input");
    path.name = "mountpath." + name;
    path.value = "/mnt/" + name;
    path.setAttribute("aria-label", "Mount path of " + name);
    li.append(label, path);
    list.appendChild(li);
  });
  const empty = box.querySelector(".empty");
  if (empty) empty.hidden = names.length > 0;
}

document.addEventListener("DOMContentLoaded", () => {
  const pre = document.querySelector("pre[data-follow]");
  if (pre) followLogs(pre);
  const form = document.getElementById("submit-form");
  if (form) watchEstimate(form);
});
