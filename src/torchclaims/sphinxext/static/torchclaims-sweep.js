// Coverage tables: search, filter and compare two runs of a sweep, row by row.
// Each run's data is a small script (_static/coverage/<run>.js) loaded when the
// run is picked, so the page stays light and works from file:// too.
(function () {
  "use strict";
  const PAGE = 200; // rows rendered at a time: keeps phones responsive
  const slug = (text) => text.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
  const el = (tag, attrs, ...children) => {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = value; else node.setAttribute(key, value);
    }
    children.forEach((child) => node.append(child));
    return node;
  };

  function load(run) {
    const cache = (window.tcSweeps = window.tcSweeps || {});
    if (cache[run.name]) return Promise.resolve(cache[run.name]);
    return new Promise((resolve, reject) => {
      const script = el("script", { src: run.src });
      script.onload = () => (cache[run.name] ? resolve(cache[run.name]) : reject(new Error(run.src + " holds no data")));
      script.onerror = () => reject(new Error("cannot load " + run.src));
      document.head.append(script);
    });
  }

  // One row per item: {name, cells: {column: {outcome, detail, samples}}}
  function rowsOf(data) {
    const table = data.table;
    return table.rows.map((name, i) => {
      const cells = {};
      for (const column of table.columns) {
        const code = column.codes[i];
        if (code === ".") continue;
        cells[column.name] = { outcome: column.legend[code], detail: column.details[i] || "", samples: column.samples[i] || "" };
      }
      return { name, cells };
    });
  }

  const GOOD = new Set(["native", "matches", "generate matches"]);
  const CHANGES = {
    changed: () => true,
    "became native or matching": (a, b) => GOOD.has(b) && !GOOD.has(a),
    "stopped being native or matching": (a, b) => GOOD.has(a) && !GOOD.has(b),
    "started to mismatch": (a, b) => b === "mismatch" && a !== "mismatch",
    "started to raise": (a, b) => b === "raises" && a !== "raises",
  };

  function setup(root) {
    const runs = JSON.parse(root.dataset.runs);
    const item = root.dataset.item;
    const option = (value, label) => el("option", { value, text: label });
    const runSelect = el("select", {}, ...runs.map((r, i) => option(String(i), r.label)));
    const compareSelect = el("select", {}, option("", "no comparison"), ...runs.map((r, i) => option(String(i), r.label)));
    const search = el("input", { type: "search", placeholder: `${item} name contains…`, "aria-label": "search" });
    search.value = new URLSearchParams(location.search).get("row") || ""; // ?row=NAME: torchclaims check links to a row
    const columnSelect = el("select", {}, option("", "every column"));
    const outcomeSelect = el("select", {}, option("", "any outcome"));
    const changeSelect = el("select", {}, option("", "every row"), ...Object.keys(CHANGES).map((k) => option(k, k)));
    const label = (text, control) => el("label", {}, text + " ", control);
    const controls = el("form", { class: "tc-sweep-controls", onsubmit: "return false" },
      label("Run", runSelect), label("Compare with", compareSelect), label("Search", search),
      label("Column", columnSelect), label("Outcome", outcomeSelect), label("Show", changeSelect));
    const status = el("p", { class: "tc-sweep-status", "aria-live": "polite" });
    const wrapper = el("div", { class: "tc-sweep-scroll" });
    const more = el("button", { type: "button", class: "tc-sweep-more", text: "show more" });
    root.append(controls, status, wrapper, more);
    let a = null, b = null, shown = PAGE;

    function fillSelects(data) {
      const columns = data.table.columns.map((c) => c.name);
      const keepColumn = columnSelect.value, keepOutcome = outcomeSelect.value;
      columnSelect.replaceChildren(option("", "every column"), ...columns.map((c) => option(c, c)));
      const outcomes = [...new Set(data.table.columns.flatMap((c) => Object.values(c.legend)))];
      outcomeSelect.replaceChildren(option("", "any outcome"), ...outcomes.map((o) => option(o, o)));
      columnSelect.value = columns.includes(keepColumn) ? keepColumn : "";
      outcomeSelect.value = outcomes.includes(keepOutcome) ? keepOutcome : "";
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

    function render() {
      if (!a) return;
      const data = a.data, columns = data.table.columns.map((c) => c.name);
      const only = columnSelect.value, wanted = outcomeSelect.value, change = changeSelect.value;
      const term = search.value.trim().toLowerCase();
      const bRows = b ? new Map(b.rows.map((r) => [r.name, r])) : null;
      const visibleColumns = only ? [only] : columns;
      const matches = a.rows.filter((row) => {
        if (term && !row.name.toLowerCase().includes(term)) return false;
        const other = bRows ? bRows.get(row.name) : null;
        const judged = visibleColumns.filter((c) => row.cells[c] || (other && other.cells[c]));
        if (wanted && !judged.some((c) => (row.cells[c] || {}).outcome === wanted || (other && (other.cells[c] || {}).outcome === wanted))) return false;
        if (bRows && change) {
          return judged.some((c) => {
            const x = (row.cells[c] || {}).outcome, y = (other && other.cells[c] || {}).outcome;
            return x !== y && CHANGES[change](x, y);
          });
        }
        return true;
      });
      const head = el("tr", {}, el("th", { text: item }), ...visibleColumns.map((c) => el("th", { text: c })));
      const body = el("tbody");
      for (const row of matches.slice(0, shown)) {
        const other = bRows ? bRows.get(row.name) : null;
        const tr = el("tr", { tabindex: "0" }, el("th", { text: row.name, scope: "row" }),
          ...visibleColumns.map((c) => cell(row.cells[c], other && other.cells[c], Boolean(bRows))));
        tr.addEventListener("click", () => toggleDetails(tr, row, other, visibleColumns));
        body.append(tr);
      }
      wrapper.replaceChildren(el("table", { class: "tc-sweep-table" }, el("thead", {}, head), body));
      status.textContent = `${Math.min(shown, matches.length)} of ${matches.length} matching ${item}s shown` +
        ` (${a.rows.length} in the run)` + (b ? `; compared with ${b.data.run}` : "") + ". Tap a row for details.";
      more.hidden = matches.length <= shown;
    }

    function toggleDetails(tr, row, other, columns) {
      const next = tr.nextElementSibling;
      if (next && next.classList.contains("tc-sweep-details")) { next.remove(); return; }
      const lines = el("ul");
      for (const c of columns) {
        for (const [run, cellData] of [[a.data.run, row.cells[c]], [b ? b.data.run : null, other && other.cells[c]]]) {
          if (!run || !cellData) continue;
          const samples = cellData.samples ? ` · samples ${cellData.samples}` : "";
          lines.append(el("li", { text: `${c} · ${run}: ${cellData.outcome}${cellData.detail ? " — " + cellData.detail : ""}${samples}` }));
        }
      }
      const td = el("td", { colspan: String(columns.length + 1) }, lines);
      tr.after(el("tr", { class: "tc-sweep-details" }, td));
    }

    async function pick() {
      status.textContent = "loading…";
      try {
        const first = runs[Number(runSelect.value)];
        const data = await load(first);
        a = { data, rows: rowsOf(data) };
        fillSelects(data);
        const second = compareSelect.value === "" ? null : runs[Number(compareSelect.value)];
        b = second ? { data: await load(second), rows: null } : null;
        if (b) b.rows = rowsOf(b.data);
        shown = PAGE;
        render();
      } catch (error) {
        status.textContent = error.message;
      }
    }

    runSelect.addEventListener("change", pick);
    compareSelect.addEventListener("change", pick);
    for (const control of [search, columnSelect, outcomeSelect, changeSelect]) {
      control.addEventListener(control === search ? "input" : "change", () => { shown = PAGE; render(); });
    }
    more.addEventListener("click", () => { shown += PAGE; render(); });
    pick();
  }

  document.addEventListener("DOMContentLoaded", () => document.querySelectorAll(".tc-sweep").forEach(setup));
})();
