// The web view of mcp-tasks (crates/server/src/http/ui.rs): hand-written, no framework and no
// build step. Routes are in the hash (#/ the list, #/task/<id> a task); data comes from
// /ui/api/ with the bearer token kept in sessionStorage; live updates come from the SSE
// stream /ui/api/events, read with fetch so that it carries the token too. Every value from
// the server is put in the page as text (textContent), never as markup.
"use strict";

const STATES = ["working", "input_required", "completed", "failed", "cancelled"];
const LABELS = { working: "Working", input_required: "Needs input", completed: "Completed", failed: "Failed", cancelled: "Cancelled" };
const $ = (id) => document.getElementById(id);

const view = {
  status: "", tool: "", text: "",
  cursors: [null], // the `before` of each page seen; the last is the current page's
  next: null,
  taskId: null,
  refetch: null,
};

function token() { return sessionStorage.getItem("mcp-tasks-token") || ""; }

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  if (token()) headers["Authorization"] = "Bearer " + token();
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (response.status === 401) {
    askToken();
    throw new Error("This server needs a bearer token.");
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    // The API answers {"error": text}; the checks shared with /mcp answer a JSON-RPC error.
    const message = typeof body.error === "string" ? body.error : (body.error && body.error.message) || response.statusText;
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return body;
}

function askToken() {
  const dialog = $("token-dialog");
  if (!dialog.open) dialog.showModal();
}

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "text") node.textContent = value; else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) node.append(child);
  return node;
}

function showError(error) {
  const box = $("error");
  box.textContent = error ? String(error.message || error) : "";
  box.hidden = !error;
}

function time(ms) { return ms ? new Date(ms).toLocaleString() : ""; }

function duration(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1000) return ms + " ms";
  const s = Math.round(ms / 100) / 10;
  if (s < 60) return s + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + " min " + Math.round(s % 60) + " s";
  return Math.floor(m / 60) + " h " + (m % 60) + " min";
}

function badge(status) { return el("span", { class: "status " + status, "data-status": status, text: LABELS[status] || status }); }

// ---- the list ----

function listQuery() {
  const params = new URLSearchParams();
  if (view.status) params.set("status", view.status);
  if (view.tool) params.set("tool", view.tool);
  if (view.text) params.set("q", view.text);
  const before = view.cursors[view.cursors.length - 1];
  if (before) params.set("before", before);
  return params.toString();
}

async function loadList() {
  const page = await api("/ui/api/tasks?" + listQuery());
  showError(null);
  $("principal").textContent = page.principal;
  renderCounts(page.counts);
  renderTools(page.tools);
  const body = $("tasks").tBodies[0];
  body.replaceChildren(...page.tasks.map(row));
  $("empty").hidden = page.tasks.length > 0;
  view.next = page.next;
  $("older").disabled = !page.next;
  $("newer").disabled = view.cursors.length < 2;
}

function row(task) {
  const link = el("a", { href: "#/task/" + task.id, text: task.id.slice(0, 12) });
  return el("tr", { "data-id": task.id, "data-status": task.status },
    el("td", { class: "id" }, link),
    el("td", { text: task.tool }),
    el("td", {}, badge(task.status)),
    el("td", { class: "message", title: task.statusMessage || "", text: task.statusMessage || "" }),
    el("td", { text: time(task.createdAt) }),
    el("td", { text: duration(task.durationMs) }));
}

function renderCounts(counts) {
  const total = STATES.reduce((sum, state) => sum + (counts[state] || 0), 0);
  const chip = (state, label, n) => {
    const link = el("a", { href: "#/", "data-state": state, class: view.status === state ? "selected" : null },
      state ? el("span", { class: "dot " + state }) : "", el("span", { class: "n", text: String(n) }), el("span", { text: label }));
    link.addEventListener("click", (event) => {
      event.preventDefault();
      view.status = state;
      view.cursors = [null];
      loadList().catch(showError);
    });
    return link;
  };
  $("counts").replaceChildren(chip("", "All", total), ...STATES.map((state) => chip(state, LABELS[state], counts[state] || 0)));
}

function renderTools(tools) {
  const select = $("filter-tool");
  const known = Array.from(select.options).map((option) => option.value).join("\n");
  if (known === ["", ...tools].join("\n")) return;
  select.replaceChildren(el("option", { value: "", text: "any" }), ...tools.map((name) => el("option", { value: name, text: name })));
  select.value = view.tool;
}

// ---- a task ----

async function loadTask(id) {
  let task;
  try {
    task = await api("/ui/api/tasks/" + encodeURIComponent(id));
  } catch (error) {
    if (error.status === 404) {
      $("task-body").hidden = true;
      $("missing").hidden = false;
      $("missing").textContent = "No task " + id + ".";
      return;
    }
    throw error;
  }
  showError(null);
  $("missing").hidden = true;
  $("task-body").hidden = false;
  $("task-tool").textContent = task.tool;
  $("task-status").replaceWith(Object.assign(badge(task.status), { id: "task-status" }));
  $("task-message").textContent = task.statusMessage || "";
  renderProgress(task.progress, task.status);
  const terminal = ["completed", "failed", "cancelled"].includes(task.status);
  $("cancel").hidden = terminal;
  renderQuestions(task);
  const client = task.client ? task.client.name + (task.client.version ? " " + task.client.version : "") : "unknown";
  const facts = [
    ["Task", task.id], ["Era", task.era || "unknown"],
    ["Tasks", task.extension ? task.extension.name + " (" + task.extension.revision + " revision)" : "core, of its era"],
    ["Client", client], ["Created", time(task.createdAt)],
    ["Updated", time(task.updatedAt)], [terminal ? "Took" : "Running for", duration(task.durationMs)], ["Attempt", String(task.attempt)],
    ["Kept for", task.ttlMs ? duration(task.ttlMs) : "ever"],
  ];
  $("facts").replaceChildren(...facts.flatMap(([name, value]) => [el("dt", { text: name }), el("dd", { text: value })]));
  $("task-arguments").textContent = JSON.stringify(task.arguments, null, 2);
  $("output-section").hidden = !task.output;
  if (task.output !== null && task.output !== undefined) $("task-output").textContent = task.output;
  const outcome = task.error !== undefined ? task.error : task.result;
  $("result-section").hidden = outcome === undefined;
  $("result-title").textContent = task.error !== undefined ? "Error" : "Result";
  $("task-result").textContent = outcome === undefined ? "" : resultText(outcome);
  $("history").tBodies[0].replaceChildren(...task.history.map((entry) =>
    el("tr", {}, el("td", { text: time(entry.at) }), el("td", {}, badge(entry.status)), el("td", { text: entry.message || "" }))));
}

function resultText(outcome) {
  if (outcome && Array.isArray(outcome.content)) {
    const texts = outcome.content.filter((part) => part.type === "text").map((part) => part.text);
    if (texts.length === outcome.content.length && texts.length > 0) return texts.join("\n");
  }
  return JSON.stringify(outcome, null, 2);
}

function renderProgress(progress, status) {
  const box = $("task-progress");
  box.hidden = !progress || ["completed", "failed", "cancelled"].includes(status);
  if (!progress) return;
  const share = progress.total ? Math.min(1, progress.progress / progress.total) : null;
  box.querySelector(".bar").style.width = share === null ? "100%" : Math.round(share * 100) + "%";
  const amount = progress.total ? progress.progress + " / " + progress.total : String(progress.progress);
  box.querySelector(".label").textContent = amount + (progress.message ? " — " + progress.message : "");
}

function renderQuestions(task) {
  const questions = task.inputRequests.filter((request) => request.kind === "elicitation");
  $("questions").hidden = questions.length === 0;
  const list = $("question-list");
  const shown = Array.from(list.children).map((form) => form.dataset.key).join("\n");
  if (shown === questions.map((request) => request.key).join("\n")) return; // keep what is typed
  list.replaceChildren(...questions.map((request) => questionForm(task.id, request)));
}

// The form of an elicitation, rendered from its requestedSchema (flat properties of the
// primitive types the MCP spec allows; enums become a select).
function questionForm(taskId, request) {
  const params = request.params || {};
  const form = el("form", { class: "question", "data-key": request.key });
  form.append(el("p", { text: params.message || "The task asks for an answer." }));
  const schema = params.requestedSchema || { type: "object", properties: {} };
  const required = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {});
  for (const [name, property] of fields) {
    const label = property.title || name;
    let input;
    if (Array.isArray(property.enum) || (property.oneOf && property.oneOf.every((o) => "const" in o))) {
      const values = property.enum || property.oneOf.map((o) => o.const);
      const titles = property.enumNames || (property.oneOf ? property.oneOf.map((o) => o.title || o.const) : values);
      input = el("select", { name });
      values.forEach((value, i) => input.append(el("option", { value: String(value), text: String(titles[i] ?? value) })));
    } else if (property.type === "boolean") {
      input = el("input", { type: "checkbox", name });
      if (property.default === true) input.checked = true;
    } else if (property.type === "number" || property.type === "integer") {
      input = el("input", { type: "number", name, step: property.type === "integer" ? "1" : "any",
        min: property.minimum, max: property.maximum, required: required.has(name) });
      if (property.default !== undefined) input.value = property.default;
    } else {
      const type = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" }[property.format] || "text";
      input = el("input", { type, name, required: required.has(name), minlength: property.minLength, maxlength: property.maxLength });
      if (property.default !== undefined) input.value = property.default;
    }
    input.dataset.type = property.type || "string";
    form.append(el("label", { class: property.type === "boolean" ? "check" : null }, el("span", { text: label + (required.has(name) ? " *" : "") + (property.description ? " — " + property.description : "") }), input));
  }
  if (params.url) form.append(el("p", {}, el("a", { href: params.url, target: "_blank", rel: "noopener noreferrer", text: params.url })));
  const buttons = el("div", { class: "buttons" });
  for (const [action, label] of [["accept", "Submit"], ["decline", "Decline"], ["cancel", "Cancel"]]) {
    const button = el("button", { type: action === "accept" ? "submit" : "button", "data-action": action, class: action === "accept" ? "primary" : null, text: label });
    if (action !== "accept") button.addEventListener("click", () => sendAnswer(taskId, request.key, action, null, form));
    buttons.append(button);
  }
  form.append(buttons);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const content = {};
    for (const input of form.querySelectorAll("input, select")) {
      const type = input.dataset.type;
      if (type === "boolean") content[input.name] = input.checked;
      else if (input.value === "") continue;
      else if (type === "number" || type === "integer") content[input.name] = Number(input.value);
      else content[input.name] = input.value;
    }
    sendAnswer(taskId, request.key, "accept", content, form);
  });
  return form;
}

async function sendAnswer(taskId, key, action, content, form) {
  for (const button of form.querySelectorAll("button")) button.disabled = true;
  try {
    await api("/ui/api/tasks/" + encodeURIComponent(taskId) + "/answer", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ key, action, content }),
    });
    form.remove();
    await loadTask(taskId);
  } catch (error) {
    for (const button of form.querySelectorAll("button")) button.disabled = false;
    showError(error);
  }
}

// ---- live updates ----

function schedule() {
  // Many changes in a burst make one read.
  if (view.refetch) return;
  view.refetch = setTimeout(() => {
    view.refetch = null;
    refresh().catch(showError);
  }, 150);
}

function onEvent(name, data) {
  if (name === "output" && view.taskId === data.id) {
    const pre = $("task-output");
    $("output-section").hidden = false;
    pre.textContent = (pre.textContent + data.text).slice(-16384);
    pre.scrollTop = pre.scrollHeight;
    return;
  }
  if (name === "progress" && view.taskId === data.id) {
    renderProgress(data, "working");
    return;
  }
  if (name === "task" && view.taskId && view.taskId !== data.id) return;
  if (name === "task" || name === "lagged") schedule();
}

async function listen() {
  for (let wait = 500; ; wait = Math.min(wait * 2, 10000)) {
    try {
      const headers = token() ? { Authorization: "Bearer " + token() } : {};
      const response = await fetch("/ui/api/events", { headers });
      if (response.status === 401) { askToken(); await until(() => token()); continue; }
      if (!response.ok || !response.body) throw new Error("events: " + response.status);
      $("live").className = "live on";
      $("live").textContent = "live";
      wait = 500;
      schedule(); // changes made while the stream was down
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let name = "message", data = "";
          for (const line of frame.split("\n")) {
            if (line.startsWith("event: ")) name = line.slice(7);
            else if (line.startsWith("data: ")) data += line.slice(6);
          }
          if (data) onEvent(name, JSON.parse(data));
        }
      }
    } catch (error) {
      // Reconnect below.
    }
    $("live").className = "live off";
    $("live").textContent = "offline";
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

function until(condition) {
  return new Promise((resolve) => {
    const check = () => (condition() ? resolve() : setTimeout(check, 500));
    check();
  });
}

// ---- routing ----

async function refresh() {
  const match = location.hash.match(/^#\/task\/([^/]+)$/);
  view.taskId = match ? decodeURIComponent(match[1]) : null;
  $("list-view").hidden = Boolean(view.taskId);
  $("task-view").hidden = !view.taskId;
  if (view.taskId) await loadTask(view.taskId); else await loadList();
}

function start() {
  window.addEventListener("hashchange", () => {
    if (!location.hash.startsWith("#/task/")) view.cursors = view.cursors.length ? view.cursors : [null];
    $("question-list").replaceChildren();
    $("task-output").textContent = "";
    refresh().catch(showError);
  });
  $("filter-tool").addEventListener("change", (event) => { view.tool = event.target.value; view.cursors = [null]; loadList().catch(showError); });
  let typing = null;
  $("filter-text").addEventListener("input", (event) => {
    clearTimeout(typing);
    typing = setTimeout(() => { view.text = event.target.value.trim(); view.cursors = [null]; loadList().catch(showError); }, 250);
  });
  $("older").addEventListener("click", () => { if (view.next) { view.cursors.push(view.next); loadList().catch(showError); } });
  $("newer").addEventListener("click", () => { if (view.cursors.length > 1) { view.cursors.pop(); loadList().catch(showError); } });
  $("cancel").addEventListener("click", async () => {
    if (!view.taskId) return;
    $("cancel").disabled = true;
    try {
      await api("/ui/api/tasks/" + encodeURIComponent(view.taskId) + "/cancel", { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
      await loadTask(view.taskId);
    } catch (error) { showError(error); } finally { $("cancel").disabled = false; }
  });
  $("token-button").addEventListener("click", askToken);
  $("token-form").addEventListener("submit", () => {
    sessionStorage.setItem("mcp-tasks-token", $("token-input").value.trim());
    $("token-input").value = "";
    refresh().catch(showError);
  });
  $("token-clear").addEventListener("click", () => {
    sessionStorage.removeItem("mcp-tasks-token");
    $("token-dialog").close();
    refresh().catch(showError);
  });
  refresh().catch(showError);
  listen();
}

start();
