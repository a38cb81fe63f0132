// Coverage tables: search, filter and compare two runs of a sweep, row by row.
// What the controls show lives in the URL (?run=…&vs=…&q=…&column=…&outcome=…&show=…),
// so a finding can be linked and Back restores it; #row-<name> (where the site
// search links: sphinxext/build/coverage_index.py) or ?row=<name> opens that row,
// #run-<run>/row-<name> (the search's link to a run where the row fails) opens it in that run.
// Each run's data is loaded when picked (tcLoadData, torchclaims.js), so the
// page stays light; what only an opened row shows (its samples with their
// argument kinds, the operators and kernels it dispatched) when a row of the
// run first opens (sphinxext/views/sweep_data.py).
(function () {
  "use strict";
  const PAGE = 200; // rows rendered at a time: keeps phones responsive
  const ROW = "row-"; // a row's anchor: row-<name>
  const RUN = "run-"; // a row's anchor in one run: run-<run>/row-<name> (a run's name is a slug: no "/")
  const slug = (text) => text.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
  const el = (tag, attrs, ...children) => {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = value; else node.setAttribute(key, value);
    }
    children.forEach((child) => node.append(child));
    return node;
  };

  // One row per item: {name, index, cells: {column: {outcome, detail}}}; index finds it in the run's details.
  function rowsOf(data) {
    const table = data.table;
    return table.rows.map((name, i) => {
      const cells = {};
      for (const column of table.columns) {
        const code = column.codes[i];
        if (code === ".") continue;
        cells[column.name] = { outcome: column.legend[code], detail: column.details[i] || "" };
      }
      return { name, index: i, cells };
    });
  }

  // A run's details, beside its data: <run>.details.js, filed as <run>-details (coverage_tables.py names both).
  const detailsOf = (run) => tcLoadData(`${run.option.name}-details`, run.option.src.replace(/\.js$/, ".details.js"));
  const codes = (names) => names.flatMap((name, i) => (i ? [", "] : []).concat(el("code", { text: name })));

  // One sample: its code and its argument token, each saying what it means when pointed at.
  function sample(code, token, details) {
    const kinds = Array.from((token.split("/")[1] || ""), (k) => details.argument_legend[k]);
    const span = el("span", { class: "tc-sweep-sample" }, el("code", { text: code, title: details.sample_legend[code] || "" }));
    if (token) span.append(" ", el("code", { text: token, title: ["ranks of the tensor inputs", ...kinds].join("; ") }));
    return span;
  }

  // What an opened row shows: each cell's outcome and detail at once; once the runs' details are in
  // (details: one per run, null until then), its samples with their argument kinds, the legends of the
  // codes and letters shown, and the operators the row dispatched on the CPU and on the device.
  function detailList(runs, columns, details) {
    const lines = el("ul"), sampleCodes = new Map(), kindLetters = new Map(), unrecorded = new Set();
    let withKinds = false;
    for (const c of columns) {
      runs.forEach(([run, row], k) => {
        const cellData = row.cells[c];
        if (!cellData) return;
        const li = el("li", { text: `${c} · ${run.data.run}: ${cellData.outcome}${cellData.detail ? " — " + cellData.detail : ""}` });
        const own = details && details[k], column = own && own.columns[c] || {};
        const samples = (column.samples || {})[row.index] || "";
        const tokens = ((column.arguments || {})[row.index] || "").split(" ").filter(Boolean);
        if (samples) {
          const kept = tokens.length === samples.length; // the sweep keeps a cell's tokens only whole
          if (kept) withKinds = true; else unrecorded.add(run.data.run);
          const shown = Array.from(samples, (code, i) => sample(code, kept ? tokens[i] : "", own));
          li.append(el("br"), "samples: ", ...shown.flatMap((s, i) => (i ? [" · "] : []).concat(s)));
          for (const code of samples) sampleCodes.set(code, own.sample_legend[code] || "(not named)");
          for (const token of kept ? tokens : []) for (const k of token.split("/")[1] || "") kindLetters.set(k, own.argument_legend[k]);
        }
        lines.append(li);
      });
    }
    if (!details) {
      lines.append(el("li", { class: "tc-sweep-legend", text: "loading the samples, their argument kinds and the kernels…" }));
      return lines;
    }
    runs.forEach(([run, row], k) => {
      const device = (details[k].kernels || {})[row.index], cpu = (details[k].operators || {})[row.index];
      if (device) lines.append(el("li", {}, `${run.data.run} · dispatched on the device: `, ...codes(device)));
      if (cpu) lines.append(el("li", {}, `${run.data.run} · dispatched on the CPU: `, ...codes(cpu)));
      const backward = (details[k].backward_operators || {})[row.index]; // what the backward columns measured
      if (backward) lines.append(el("li", {}, `${run.data.run} · its gradients dispatched on the CPU: `, ...codes(backward)));
    });
    const legend = [];
    if (sampleCodes.size) legend.push("Sample codes: " + Array.from(sampleCodes, ([c, m]) => `${c} ${m}`).join(", ") + ".");
    if (withKinds) {
      const letters = Array.from(kindLetters, ([k, m]) => `${k} ${m}`).join(", ");
      legend.push(`Argument kinds: the rank of each tensor input, then after / a letter per kind${letters ? ": " + letters : " (none here)"}.`);
    }
    for (const run of unrecorded) legend.push(`The table of ${run} records no argument kinds for these samples.`);
    if (legend.length) lines.append(el("li", { class: "tc-sweep-legend", text: legend.join(" ") }));
    return lines;
  }

  const GOOD = new Set(["native", "matches", "generate matches"]);
  const CHANGES = {
    changed: () => true,
    "became native or matching": (a, b) => GOOD.has(b) && !GOOD.has(a),
    "stopped being native or matching": (a, b) => GOOD.has(a) && !GOOD.has(b),
    "started to mismatch": (a, b) => b === "mismatch" && a !== "mismatch",
    "started to raise": (a, b) => b === "raises" && a !== "raises",
  };

  // The run and row the fragment names: #row-<name> or #run-<run>/row-<name>; nulls where it names none.
  const fragment = () => {
    try {
      const id = decodeURIComponent(location.hash.slice(1));
      const inRun = id.startsWith(RUN) ? id.indexOf("/") : -1;
      const run = inRun > 0 ? id.slice(RUN.length, inRun) : null, rest = inRun > 0 ? id.slice(inRun + 1) : id;
      if (rest.startsWith(ROW)) return { run, row: rest.slice(ROW.length) };
    } catch (error) {
      // a malformed %-escape names no row
    }
    return { run: null, row: null };
  };
  // The row the address names: the fragment's, or ?row=<name> (the links torchclaims check writes); else null.
  const targetName = () => fragment().row ?? new URLSearchParams(location.search).get("row");

  function setup(root) {
    const runs = JSON.parse(root.dataset.runs);
    const byName = new Map(runs.map((r) => [r.name, r]));
    const item = root.dataset.item;
    const option = (value, label) => el("option", { value, text: label });
    const runSelect = el("select", { name: "run" }, ...runs.map((r) => option(r.name, r.label)));
    const compareSelect = el("select", { name: "vs" }, option("", "no comparison"), ...runs.map((r) => option(r.name, r.label)));
    const search = el("input", { type: "search", name: "q", placeholder: `${item} name contains…`, autocomplete: "off" });
    const columnSelect = el("select", { name: "column" }, option("", "every column"));
    const outcomeSelect = el("select", { name: "outcome" }, option("", "any outcome"));
    const changeSelect = el("select", { name: "show" }, option("", "every row"), ...Object.keys(CHANGES).map((k) => option(k, k)));
    const label = (text, control) => el("label", {}, text + " ", control);
    // autocomplete=off: the browser never restores the controls on its own after Back; the URL does.
    const controls = el("form", { class: "tc-sweep-controls", role: "search", autocomplete: "off", onsubmit: "return false" },
      label("Run", runSelect), label("Compare with", compareSelect), label("Search", search),
      label("Column", columnSelect), label("Outcome", outcomeSelect), label("Show", changeSelect));
    const status = el("p", { class: "tc-sweep-status", "aria-live": "polite" });
    const wrapper = el("div", { class: "tc-sweep-scroll", tabindex: "0", role: "region", "aria-label": `${item}s of the run` });
    const more = el("button", { type: "button", class: "tc-sweep-more", text: "show more" });
    root.append(controls, status, wrapper, more);
    let a = null, b = null, shown = PAGE, loads = 0, note = "";
    let wanted = { column: "", outcome: "" }; // known only once a run's columns are in
    const opened = new Set(); // rows whose details are open

    // The URL decides what the controls show: on load, after Back, from a shared link.
    function read() {
      const params = new URLSearchParams(location.search);
      const run = fragment().run || params.get("run"), vs = params.get("vs"), show = params.get("show");
      runSelect.value = byName.has(run) ? run : runs[0].name;
      note = run && !byName.has(run) ? `The linked run is not on this page (any more); showing ${runs[0].label}. ` : "";
      compareSelect.value = byName.has(vs) ? vs : "";
      search.value = params.get("q") || "";
      changeSelect.value = show && Object.hasOwn(CHANGES, show) ? show : "";
      wanted = { column: params.get("column") || "", outcome: params.get("outcome") || "" };
    }
    function write() {
      const params = new URLSearchParams({ run: runSelect.value });
      for (const [key, control] of [["vs", compareSelect], ["q", search], ["column", columnSelect], ["outcome", outcomeSelect], ["show", changeSelect]]) {
        if (control.value) params.set(key, control.value);
      }
      try {
        history.replaceState(null, "", `${location.pathname}?${params}${location.hash}`);
      } catch (error) {
        // Some browsers refuse to change a file:// URL: the table still works.
      }
    }

    function fillSelects(data) {
      const columns = data.table.columns.map((c) => c.name);
      columnSelect.replaceChildren(option("", "every column"), ...columns.map((c) => option(c, c)));
      const outcomes = [...new Set(data.table.columns.flatMap((c) => Object.values(c.legend)))];
      outcomeSelect.replaceChildren(option("", "any outcome"), ...outcomes.map((o) => option(o, o)));
      columnSelect.value = columns.includes(wanted.column) ? wanted.column : "";
      outcomeSelect.value = outcomes.includes(wanted.outcome) ? wanted.outcome : "";
    }

    // One cell of run A, or (comparing) "A → B" where the outcome moved.
    function cell(x, y, comparing) {
      const main = comparing ? y || x : x;
      const td = el("td", { class: main ? "tc-o tc-o-" + slug(main.outcome) : "" });
      if (!comparing || !(x || y) || (x && y && x.outcome === y.outcome)) td.textContent = main ? main.outcome : "—";
      else td.textContent = `${x ? x.outcome : "(absent)"} → ${y ? y.outcome : "(absent)"}`;
      td.title = main ? main.detail : "";
      return td;
    }

    function visibleColumns() {
      return columnSelect.value ? [columnSelect.value] : a.data.table.columns.map((c) => c.name);
    }

    function matching() {
      const wantedOutcome = outcomeSelect.value, change = changeSelect.value;
      const term = search.value.trim().toLowerCase();
      const bRows = b ? new Map(b.rows.map((r) => [r.name, r])) : null;
      const columns = visibleColumns();
      return a.rows.filter((row) => {
        if (term && !row.name.toLowerCase().includes(term)) return false;
        const other = bRows ? bRows.get(row.name) : null;
        const judged = columns.filter((c) => row.cells[c] || (other && other.cells[c]));
        if (wantedOutcome && !judged.some((c) => (row.cells[c] || {}).outcome === wantedOutcome || (other && (other.cells[c] || {}).outcome === wantedOutcome))) return false;
        if (bRows && change) {
          return judged.some((c) => {
            const x = (row.cells[c] || {}).outcome, y = (other && other.cells[c] || {}).outcome;
            return x !== y && CHANGES[change](x, y);
          });
        }
        return true;
      }).map((row) => ({ row, other: bRows ? bRows.get(row.name) : null }));
    }

    function render() {
      if (!a) return;
      const columns = visibleColumns(), matches = matching();
      const head = el("tr", {}, el("th", { text: item, scope: "col" }), ...columns.map((c) => el("th", { text: c, scope: "col" })));
      const body = el("tbody");
      for (const { row, other } of matches.slice(0, shown)) {
        // The name is a button: Tab reaches it, Enter or Space opens the row, and it says whether the row is open.
        const name = el("button", { type: "button", class: "tc-sweep-open", "aria-expanded": "false", text: row.name });
        const tr = el("tr", { id: ROW + row.name, "data-name": row.name },
          el("th", { scope: "row" }, name), ...columns.map((c) => cell(row.cells[c], other && other.cells[c], Boolean(b))));
        body.append(tr);
        if (opened.has(row.name)) showDetails(tr, row, other, columns);
      }
      wrapper.replaceChildren(el("table", { class: "tc-sweep-table" }, el("thead", {}, head), body));
      status.textContent = note + `${Math.min(shown, matches.length)} of ${matches.length} matching ${item}s shown` +
        ` (${a.rows.length} in the run)` + (b ? `; compared with ${b.data.run}` : "") + ". Tap a row, or press Enter on it, for details.";
      more.hidden = matches.length <= shown;
    }

    function showDetails(tr, row, other, columns) {
      const runs = [[a, row], [b, other]].filter(([run, r]) => run && r);
      const td = el("td", { colspan: String(columns.length + 1) }, detailList(runs, columns, null));
      tr.after(el("tr", { class: "tc-sweep-details" }, td));
      tr.querySelector(".tc-sweep-open").setAttribute("aria-expanded", "true");
      Promise.all(runs.map(([run]) => detailsOf(run))).then(
        (details) => td.replaceChildren(detailList(runs, columns, details)),
        (error) => { td.querySelector(".tc-sweep-legend").textContent = `The samples could not be loaded: ${error.message}`; },
      );
    }

    // Open or close a row's details; an open row is named in the URL, so the link shows it.
    function toggle(tr) {
      const name = tr.dataset.name;
      const next = tr.nextElementSibling;
      if (next && next.classList.contains("tc-sweep-details")) {
        next.remove();
        opened.delete(name);
        tr.querySelector(".tc-sweep-open").setAttribute("aria-expanded", "false");
        if (targetName() === name) setHash("");
        return;
      }
      const row = a.rows.find((r) => r.name === name);
      const other = b ? b.rows.find((r) => r.name === name) : null;
      opened.add(name);
      showDetails(tr, row, other, visibleColumns());
      setHash(ROW + name);
    }
    function setHash(id) {
      const params = new URLSearchParams(location.search);
      params.delete("row"); // the fragment names the open row from now on
      try {
        history.replaceState(null, "", location.pathname + (params.size ? `?${params}` : "") + (id ? "#" + encodeURIComponent(id) : ""));
      } catch (error) {
        // file:// in some browsers: the row still opens
      }
    }
    const rowElement = (name) => Array.from(wrapper.querySelectorAll("tr[data-name]")).find((tr) => tr.dataset.name === name);

    // #row-<name>: show that row (searching for it if the filters hide it), open it and bring it into view.
    function openTarget() {
      const name = targetName();
      if (name === null || !a) return;
      if (!a.rows.some((r) => r.name === name)) {
        status.textContent = `${item} ${name} is not in the run ${a.data.run}; pick another run. ` + status.textContent;
        return;
      }
      let tr = rowElement(name);
      if (!tr) {
        search.value = name;
        columnSelect.value = outcomeSelect.value = changeSelect.value = "";
        wanted = { column: "", outcome: "" };
        write();
        render();
        tr = rowElement(name);
      }
      if (!tr) return;
      opened.add(name);
      if (!tr.nextElementSibling || !tr.nextElementSibling.classList.contains("tc-sweep-details")) showDetails(tr, a.rows.find((r) => r.name === name), b ? b.rows.find((r) => r.name === name) : null, visibleColumns());
      if (!location.hash || fragment().run) { // ?row=<name> and #run-<run>/row-<name> become ?run=<run>#row-<name>
        write();
        setHash(ROW + name);
      }
      wrapper.querySelectorAll(".tc-sweep-target").forEach((t) => t.classList.remove("tc-sweep-target"));
      tr.classList.add("tc-sweep-target");
      tr.scrollIntoView({ block: "center" });
      tr.querySelector(".tc-sweep-open").focus({ preventScroll: true });
    }

    async function pick() {
      const mine = ++loads; // a later pick wins over one still loading
      status.textContent = "loading…";
      try {
        const first = byName.get(runSelect.value);
        const second = byName.get(compareSelect.value);
        const [dataA, dataB] = await Promise.all([tcLoadData(first.name, first.src), second ? tcLoadData(second.name, second.src) : null]);
        if (mine !== loads) return;
        a = { data: dataA, rows: rowsOf(dataA), option: first };
        b = dataB ? { data: dataB, rows: rowsOf(dataB), option: second } : null;
        fillSelects(dataA);
        shown = PAGE;
        render();
        openTarget();
      } catch (error) {
        if (mine === loads) status.textContent = error.message;
      }
    }

    runSelect.addEventListener("change", () => { note = ""; write(); pick(); });
    compareSelect.addEventListener("change", () => { write(); pick(); });
    for (const control of [search, columnSelect, outcomeSelect, changeSelect]) {
      control.addEventListener(control === search ? "input" : "change", () => {
        wanted = { column: columnSelect.value, outcome: outcomeSelect.value };
        shown = PAGE;
        write();
        render();
      });
    }
    more.addEventListener("click", () => { shown += PAGE; render(); });
    wrapper.addEventListener("click", (event) => { // a click anywhere on a row, or Enter on its name
      const tr = event.target.closest("tr[data-name]");
      if (tr) toggle(tr);
    });
    // Back or Forward into this page, from the cache or the history: the URL decides again.
    window.addEventListener("pageshow", (event) => { if (event.persisted) { read(); pick(); } });
    window.addEventListener("popstate", () => { read(); pick(); });
    window.addEventListener("hashchange", () => { if (fragment().run) { read(); pick(); } else openTarget(); });
    read();
    pick();
  }

  document.addEventListener("DOMContentLoaded", () => document.querySelectorAll(".tc-sweep").forEach(setup));
})();
