// torchclaims: the matrix's filters and versions (kept in the URL), evidence that
// opens where a link lands, and claims first on the search page. No network,
// no dependencies: pages work from a web server and from file://.
"use strict";

// Opened from a file, the search page cannot fetch other pages for snippets;
// it shows claim results (with their own snippets) and page titles instead.
// (documentation_options.js declares it with const: not a property of window.)
if (location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
  DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
}

const tcMatrix = (root) => {
  const form = root.querySelector(".tc-filters");
  const table = root.querySelector("table.tc-matrix");
  const count = root.querySelector(".tc-count");
  const caption = root.querySelector(".tc-caption-count");
  const none = root.querySelector(".tc-no-matches");
  const rows = Array.from(table.querySelectorAll("tr.tc-claim-row"));
  const versionPickers = Array.from(table.querySelectorAll("select[data-tc-version]"));
  const fields = ["topic", "backend", "verdict", "q"];
  const field = (name) => form.elements.namedItem(name);

  // The state lives in the URL: ?backend=xla&verdict=refuted&v.cpu=torch+2.14.1
  const read = () => {
    const params = new URLSearchParams(location.search);
    for (const name of fields) {
      const wanted = params.get(name) || "";
      const input = field(name);
      const known = input.tagName !== "SELECT" || Array.from(input.options).some((o) => o.value === wanted);
      input.value = known ? wanted : "";
    }
    for (const picker of versionPickers) {
      const wanted = params.get(`v.${picker.dataset.tcVersion}`);
      picker.value = Array.from(picker.options).some((o) => o.value === wanted) ? wanted : picker.options[0].value;
    }
  };
  const write = () => {
    const params = new URLSearchParams();
    for (const name of fields) if (field(name).value) params.set(name, field(name).value);
    for (const picker of versionPickers) {
      if (picker.selectedIndex > 0) params.set(`v.${picker.dataset.tcVersion}`, picker.value);
    }
    const query = params.toString();
    const url = location.pathname + (query ? `?${query}` : "");
    try {
      history.replaceState(null, "", url);
    } catch (error) {
      // Some browsers refuse to change a file:// URL: the filters still work.
    }
  };

  const shownVersion = (backend) => {
    const picker = versionPickers.find((p) => p.dataset.tcVersion === backend);
    return picker ? picker.value : null;
  };
  const showVersions = () => {
    table.querySelectorAll("[data-backend]").forEach((cell) => {
      const version = shownVersion(cell.dataset.backend);
      if (version === null) return;
      cell.querySelectorAll("[data-version]").forEach((el) => {
        el.hidden = el.dataset.version !== version;
      });
    });
  };

  // The cells of every version but the one each header shows first are not in the
  // page (sphinxext/views/matrix.py): they come from one data file, loaded when first picked.
  let loaded = !table.dataset.tcLater, loading = null;
  const loadLater = () => loading || (loading = tcLoadData(table.dataset.tcLater, table.dataset.tcSrc).then((parts) => {
    const cells = parts.matrix || {};
    for (const row of rows) {
      const runs = cells[row.id] || {};
      row.querySelectorAll("td[data-backend]").forEach((cell) => {
        if (runs[cell.dataset.backend]) cell.insertAdjacentHTML("beforeend", runs[cell.dataset.backend]);
      });
    }
    loaded = true;
    table.classList.add("tc-all-versions");
  }));

  const apply = () => {
    if (!loaded && versionPickers.some((p) => p.selectedIndex > 0)) {
      loadLater().then(apply, (error) => {
        for (const picker of versionPickers) picker.selectedIndex = 0;  // what the page holds, rather than empty cells
        apply();
        count.textContent += `. The other versions could not be loaded: ${error.message}`;
      });
    }
    showVersions();
    const topic = field("topic").value, backend = field("backend").value, verdict = field("verdict").value;
    const words = field("q").value.toLowerCase().split(/\s+/).filter(Boolean);
    // A backend keeps the claims about it; every column stays: beside them, what the stand-ins found.
    table.querySelectorAll("[data-backend]").forEach((cell) => {
      cell.classList.toggle("tc-chosen", backend !== "" && cell.dataset.backend === backend);
    });
    root.querySelectorAll(".tc-backend-note").forEach((note) => { note.hidden = note.dataset.backend !== backend; });
    let shown = 0;
    for (const row of rows) {
      const verdicts = Array.from(row.querySelectorAll(".tc-run:not([hidden])")).map((r) => r.dataset.verdict);
      const match = (topic === "" || row.dataset.topic === topic)
        && (backend === "" || row.dataset.about.split(" ").includes(backend))
        && (verdict === "" || verdicts.includes(verdict))
        && words.every((w) => row.dataset.text.includes(w));
      row.hidden = !match;
      shown += match ? 1 : 0;
    }
    table.querySelectorAll("tr.tc-topic-row").forEach((head) => {
      head.hidden = !rows.some((r) => !r.hidden && r.dataset.topic === head.dataset.topic);
    });
    count.textContent = `${shown} of ${rows.length} claims` + (backend ? ` (those about ${backend})` : "");
    caption.textContent = shown === rows.length ? `${shown} claims` : `${shown} of ${rows.length} claims`;
    tally();
    none.hidden = shown > 0;
    table.classList.toggle("tc-empty", shown === 0);
  };

  // Every figure the page states is over the rows shown, counted from the cells the filter reads
  // (the page is written with those of the unfiltered view, from the same cells).
  const tally = () => {
    const shownRows = rows.filter((r) => !r.hidden);
    table.querySelectorAll("thead th[data-backend]").forEach((head) => {
      const counts = {};
      for (const row of shownRows) {
        const run = row.querySelector(`td[data-backend="${head.dataset.backend}"] .tc-run:not([hidden])`);
        if (run) counts[run.dataset.verdict] = (counts[run.dataset.verdict] || 0) + 1;
      }
      head.querySelectorAll(".tc-totals:not([hidden]) [data-kind]").forEach((total) => {
        total.querySelector(".tc-n").textContent = counts[total.dataset.kind] || 0;
      });
    });
    table.querySelectorAll("tr.tc-topic-row").forEach((head) => {
      const all = rows.filter((r) => r.dataset.topic === head.dataset.topic);
      const n = all.filter((r) => !r.hidden).length, s = all.length > 1 ? "s" : "";
      head.querySelector(".tc-topic-count").textContent = n === all.length ? `(${n} claim${s})` : `(${n} of ${all.length} claim${s})`;
    });
  };

  const reset = () => {
    for (const name of fields) field(name).value = "";
    for (const picker of versionPickers) picker.selectedIndex = 0;
    write();
    apply();
  };
  form.addEventListener("input", () => { write(); apply(); });
  form.addEventListener("change", () => { write(); apply(); });
  form.addEventListener("reset", (event) => { event.preventDefault(); reset(); });
  none.querySelector("[data-tc-reset]").addEventListener("click", reset);
  versionPickers.forEach((picker) => picker.addEventListener("change", () => { write(); apply(); }));
  // Back (from the evidence, say) reloads or restores the page: the URL decides.
  window.addEventListener("pageshow", () => { read(); apply(); });
  window.addEventListener("popstate", () => { read(); apply(); });
  read();
  apply();
  // A shared, filtered address opens on its rows, not on what the page says above them.
  if (!location.hash && fields.some((name) => field(name).value)) form.scrollIntoView({ block: "start", behavior: "instant" });
};

// Parts of a page written beside it (sphinxext/build/page_data.py), such as the record
// of every run of a claim, load when the folded block holding them opens, or
// when a link lands on an anchor inside them.
const tcFill = (holder) => tcLoadData(holder.dataset.tcLater, holder.dataset.tcSrc).then(
  (parts) => { if (holder.isConnected) holder.outerHTML = parts[holder.dataset.tcKey] || ""; },
  (error) => { holder.firstElementChild.textContent = `This part could not be loaded: ${error.message}`; },
);
const tcFillAll = () => Promise.all(Array.from(document.querySelectorAll(".tc-later"), tcFill));

// A link to evidence lands inside folded blocks: open them, then show the target.
const tcOpenTarget = () => {
  const id = decodeURIComponent(location.hash.slice(1));
  const target = id && document.getElementById(id);
  if (!target) {
    if (id && document.querySelector(".tc-later")) tcFillAll().then(() => { if (document.getElementById(id)) tcOpenTarget(); });
    return;
  }
  // The anchor is in a placeholder's static stand-in: land there now, and on the part's own row once it loads.
  const holder = target.closest(".tc-later");
  if (holder) tcFill(holder).then(() => { const loaded = document.getElementById(id); if (loaded && loaded !== target) tcOpenTarget(); });
  for (let el = target; el; el = el.parentElement) {
    if (el.tagName === "DETAILS") el.open = true;
  }
  // "instant": the theme scrolls smoothly, which would leave a reader (and a test) mid-way.
  target.scrollIntoView({ block: "start", behavior: "instant" });
};

// Data a page loads when it needs it (sphinxext/build/page_data.py): a script that
// files its payload under its name in window.tcPageData. Loaded once a page,
// however many parts of the page ask for it at once.
const tcLoading = {};
const tcLoadData = (name, src) => {
  const data = (window.tcPageData = window.tcPageData || {});
  if (data[name]) return Promise.resolve(data[name]);
  return tcLoading[name] || (tcLoading[name] = new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = src;
    script.onload = () => (data[name] ? resolve(data[name]) : reject(new Error(`${src} holds no data named ${name}`)));
    script.onerror = () => { delete tcLoading[name]; reject(new Error(`cannot load ${src}`)); };
    document.head.append(script);
  }));
};

const tcEscape = (text) => text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

// The search page: claims whose words match come first, each landing on its
// anchor with its proposition and verdicts as the snippet.
const tcSearchClaims = (results) => {
  const query = (new URLSearchParams(location.search).get("q") || "").trim();
  const claims = window.TORCHCLAIMS_CLAIMS || [];
  if (!query || !claims.length) return;
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const text = (c) => [c.id, c.title, c.proposition, c.topic, ...c.claimed_by, ...c.about, ...c.quotes].join(" ").toLowerCase();
  const found = claims.filter((c) => words.every((w) => text(c).includes(w)));
  const block = document.createElement("section");
  block.className = "tc-search-claims";
  const items = found.map((c) => {
    const verdicts = c.verdicts.map((v) => `<a href="${tcEscape(v.url)}">${tcEscape(v.text)}</a>`).join(" · ");
    return `<li><a class="tc-search-title" href="${tcEscape(c.url)}">${tcEscape(c.title)}</a>`
      + `<p class="context">${tcEscape(c.proposition)}</p><p class="tc-search-verdicts">${verdicts || "∅ not run"}</p></li>`;
  }).join("");
  const note = location.protocol === "file:"
    ? '<p class="tc-search-note">Opened from a file: the pages found below are listed without snippets (a browser does not let a file:// page read other pages). Serve the folder (python -m http.server) for page snippets.</p>'
    : "";
  block.innerHTML = `<h2>Claims (${found.length})</h2>${note}`
    + (found.length ? `<ul>${items}</ul>` : "<p>No claim matches all of these words; pages that mention them are listed below.</p>");
  results.parentNode.insertBefore(block, results);
};

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll(".tc-later").forEach((holder) => {
    const block = holder.closest("details");
    const fill = () => { if (!block || block.open) tcFill(holder); };
    if (block) block.addEventListener("toggle", fill);
    fill();
  });
  document.querySelectorAll(".tc-matrix-page").forEach(tcMatrix);
  const results = document.getElementById("search-results");
  if (results) tcSearchClaims(results);
  tcOpenTarget();
});
window.addEventListener("hashchange", tcOpenTarget);
