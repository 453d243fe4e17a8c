// levers9 dashboard script: only the live parts (log following and the
// cost estimate). Every page works without it. Text from the server is
// only ever put into the page as text (textContent), never as HTML.
"use strict";

// followLogs appends the lines of a running service as the server streams
// them (server-sent events). The log opens at its end; while "Follow the
// end" is ticked each new line scrolls into view, scrolling up unticks it
// and "Jump to end" (or scrolling back down) ticks it again. The job page's
// own live stream (data-live) shows the final status when the job ends.
function followLogs(pre) {
  const url = pre.dataset.follow;
  const state = document.getElementById("logs-state");
  const follow = document.getElementById("log-follow");
  const toEnd = () => { pre.scrollTop = pre.scrollHeight; };
  if (url) {
    const es = new EventSource(url);
    es.addEventListener("line", (ev) => {
      const l = JSON.parse(ev.data);
      const span = document.createElement("span");
      span.className = l.stream;
      span.textContent = l.text + "\n";
      pre.appendChild(span);
      if (!follow || follow.checked) toEnd();
    });
    es.addEventListener("end", () => {
      es.close();
      if (state) state.textContent = "The job has ended.";
    });
    es.onerror = () => {
      if (state) state.textContent = "Reconnecting…";
    };
    es.onopen = () => {
      if (state) state.textContent = "Following while the job runs…";
    };
  }
  const tools = document.getElementById("log-tools");
  if (tools) tools.hidden = false;
  pre.addEventListener("scroll", () => {
    if (follow) follow.checked = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  });
  if (follow) follow.addEventListener("change", () => { if (follow.checked) toEnd(); });
  const jump = document.getElementById("log-jump");
  if (jump) jump.addEventListener("click", () => { if (follow) follow.checked = true; toEnd(); });
  toEnd();
}

// watchEstimate prices the submit form as it changes, through the same
// check and pricing the server charges with (GET /submit/estimate). A
// problem shows only once the user has acted: next to its field once that
// field was changed, above the estimate (job-wide ones) once anything was.
function watchEstimate(form) {
  const out = document.getElementById("estimate");
  const problems = document.getElementById("estimate-problems");
  const touched = new Set();
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
      showProblems(form, problems, body.problems || [], touched);
      const mounts = document.getElementById("mounts");
      if (body.mountable && mounts && mounts.dataset.queue !== body.queue) {
        renderMounts(mounts, body.queue, body.mountable);
        renderGPUTypes(form, body.gpuTypes || []);
      }
    } catch (e) {
      if (mine === seq) out.textContent = "—";
    }
  };
  const soon = (ev) => {
    if (ev && ev.target && ev.target.name) touched.add(ev.target.name);
    clearTimeout(timer);
    timer = setTimeout(update, 150);
  };
  form.addEventListener("input", soon);
  form.addEventListener("change", soon);
  update();
}

// showProblems puts each problem next to its field (a list after the
// server's own errors of that field), or in the list above the estimate.
function showProblems(form, summary, list, touched) {
  for (const ul of form.querySelectorAll("ul.live-errors")) ul.remove();
  summary.replaceChildren();
  if (touched.size === 0) return;
  for (const p of list) {
    const el = p.id ? document.getElementById(p.id) : null;
    if (el && p.field && near(p.field, touched)) {
      const box = el.closest(".field") || el;
      let ul = box.querySelector("ul.live-errors");
      if (!ul) {
        ul = document.createElement("ul");
        ul.className = "field-errors live-errors";
        box.appendChild(ul);
      }
      const li = document.createElement("li");
      li.textContent = p.message;
      ul.appendChild(li);
    } else if (!el) {
      const li = document.createElement("li");
      li.textContent = (p.label ? p.label + ": " : "") + p.message;
      summary.appendChild(li);
    }
  }
}

// near: the user changed field, or another field of the same service
// (GPUs asked for without a type is the type's problem).
function near(field, touched) {
  if (touched.has(field)) return true;
  const m = /^services\[\d+\]\./.exec(field);
  return m !== null && [...touched].some((t) => t.startsWith(m[0]));
}

// renderGPUTypes offers, in each service, the GPU types the chosen queue
// prices, keeping the ticked ones it still prices.
function renderGPUTypes(form, types) {
  for (const box of form.querySelectorAll("fieldset.gpu-types")) {
    const name = box.dataset.name;
    const was = new Set([...box.querySelectorAll("input:checked")].map((i) => i.value));
    for (const l of box.querySelectorAll("label")) l.remove();
    const legend = box.querySelector("legend");
    let after = legend;
    for (const t of types) {
      const label = document.createElement("label");
      const cb = document.createElement("input");
      cb.type = "checkbox";
      cb.name = name;
      cb.value = t;
      cb.checked = was.has(t);
      label.append(cb, " " + t);
      after.after(label);
      after = label;
    }
    const none = box.querySelector(".gpu-types-none");
    if (none) none.hidden = types.length > 0;
    const hint = box.querySelector(".gpu-types-hint");
    if (hint) hint.hidden = types.length === 0;
  }
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
  const pre = document.querySelector("pre.logs");
  if (pre) followLogs(pre);
  const form = document.getElementById("submit-form");
  if (form) watchEstimate(form);
});

// ---- live (helper C): pages that follow server state (ui/app/live) ----
// An element with data-live="/stream/url" opens that server-sent events
// stream: "patch" sets the text, class or data-*/title attributes of
// elements by id (data-*, title and hidden only); "stale" shows a notice with a reload link; "reload"
// reloads; "end" stops. Elements with data-since (an RFC 3339 start time)
// show the time since then, counted here each second (no server polling);
// a patch removing data-since stops the count.
function followLive(el) {
  const es = new EventSource(el.dataset.live);
  es.addEventListener("patch", (ev) => {
    for (const p of JSON.parse(ev.data)) {
      const t = document.getElementById(p.id);
      if (!t) continue;
      if (p.text !== undefined) t.textContent = p.text;
      if (p.class !== undefined) t.className = p.class;
      for (const [k, v] of Object.entries(p.attr || {})) {
        if (!k.startsWith("data-") && k !== "title" && k !== "hidden") continue;
        if (v === "") t.removeAttribute(k); else t.setAttribute(k, v);
      }
    }
    document.dispatchEvent(new CustomEvent("live-patched"));
  });
  es.addEventListener("stale", (ev) => {
    const text = JSON.parse(ev.data).text;
    let n = document.getElementById("live-stale");
    if (!n) {
      n = document.createElement("p");
      n.id = "live-stale";
      n.className = "flash";
      n.setAttribute("role", "status");
      el.parentNode.insertBefore(n, el);
    }
    const a = document.createElement("a");
    a.href = location.href;
    a.textContent = "Show them";
    n.replaceChildren(text + " ", a);
  });
  es.addEventListener("reload", () => { es.close(); location.reload(); });
  es.addEventListener("end", () => es.close());
}

// took formats milliseconds as components.Took does on the server.
function took(ms) {
  const d = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(d / 3600), m = Math.floor(d / 60) % 60, s = d % 60;
  const two = (n) => String(n).padStart(2, "0");
  if (h > 0) return h + "h" + two(m) + "m" + two(s) + "s";
  if (m > 0) return m + "m" + two(s) + "s";
  return s + "s";
}

function tickDurations() {
  for (const el of document.querySelectorAll("[data-since]")) {
    const t = Date.parse(el.dataset.since);
    if (!isNaN(t)) el.textContent = took(Date.now() - t);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const el of document.querySelectorAll("[data-live]")) followLive(el);
  if (document.querySelector("[data-since]") || document.querySelector("[data-live]")) {
    setInterval(tickDurations, 1000);
  }
});
// ---- end live ----
