/* amptrace report: draws the page from the JSON that
 * tracer/commands/report_data.c wrote into #r-data (keys listed at the top of
 * that file), with Chart.js for the charts.  No network, no storage.
 *
 * For tests and tools the page states what it drew in data attributes:
 * body[data-ready] once done, body[data-errors] (script errors seen),
 * figure.r-chart[data-points] (points/bars drawn per chart),
 * #r-findings[data-findings], #r-graph-view[data-graph],
 * #r-modules[data-rows]. */
"use strict";

(function () {
  let errors = 0;
  function fail(message) {
    errors++;
    document.body.dataset.errors = String(errors);
    document.body.dataset.lastError = String(message);
  }
  window.addEventListener("error", (e) => fail(e.message));
  window.addEventListener("unhandledrejection", (e) => fail(e.reason));
  document.body.dataset.errors = "0";

  const data = JSON.parse(document.getElementById("r-data").textContent);
  const processes = data.processes;
  let current = 0;           /* index into processes */
  const charts = {};

  /* ---------------------------------------------------------- helpers */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null) continue;
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value);
    }
    for (const child of children)
      if (child !== null && child !== undefined)
        node.append(child instanceof Node ? child : String(child));
    return node;
  }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }
  function time(us) {
    if (us >= 1e6) return (us / 1e6).toFixed(3) + " s";
    if (us >= 1e3) return (us / 1e3).toFixed(3) + " ms";
    return us.toFixed(1) + " µs";
  }
  function bytes(n) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let u = 0;
    while (n >= 1024 && u < units.length - 1) { n /= 1024; u++; }
    return u ? n.toFixed(1) + " " + units[u] : n + " B";
  }
  function count(n) { return Number(n).toLocaleString("en-US"); }
  function shellQuote(s) {
    return /^[\w@%+=:,./-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";
  }
  // What marks the steps, as summary says it: "marked by optimizer step"
  function markedText() {
    const st = data.steps;
    return st.marker !== "none" ? "marked by " + st.marker
      : st.marked && st.count === 0 ? "no training step"
      : st.marked ? "not marked: the training outside the evaluation windows"
      : "no optimizer, scaler update or autocast region marks them";
  }
  // "; steps 1 and 3 cut short (...)": the steps a process or its trace
  // ended in, the first five named, as summary says
  function cutShortText(cut) {
    if (cut.length === 1)
      return "; step " + cut[0] + " cut short (its process or its trace ended in it: counted up to then)";
    if (!cut.length) return "";
    const named = cut.slice(0, 5);
    const list = cut.length > 5 ? named.join(", ") + " and " + (cut.length - 5) + " more"
      : named.slice(0, -1).join(", ") + " and " + named[named.length - 1];
    return "; steps " + list + " cut short (a process or its trace ended in each: counted up to then)";
  }
  // "3 (marked by optimizer step); 2 evaluation windows", the steps
  // recorded as aggregates and those cut short, as summary says them
  function stepsText() {
    const st = data.steps;
    return st.count + " (" + markedText() + ")" +
      (st.evaluations ? "; " + plural(st.evaluations, "evaluation window") : "") +
      (st.aggregated ? "; " + st.detail + " in full detail, " + st.aggregated + " as per-step aggregates" : "") +
      cutShortText(st.cut_short || []);
  }
  // A trace without a training step is drawn whole (ampview's step 0).
  function graphShown() {
    return data.steps.count ? "step " + data.graph_step + " of " + data.steps.count
      : "the whole trace (no training step)";
  }
  function processLabel(p) {
    return p.name || (p.rank !== null ? "rank " + p.rank + " · " : "") + "pid " + p.pid;
  }
  function processIndex(pid) {
    return processes.findIndex((p) => p.pid === pid);
  }

  /* ----------------------------------------------------------- header */
  function header() {
    if (data.truncated) {
      const banner = document.getElementById("r-banner");
      banner.hidden = false;
      banner.textContent = "⚠ This trace did not end normally: " +
        (data.note || "it was cut short") +
        ". Everything below covers the events up to there.";
    }
    const c = data.counts;
    const rows = [
      ["Command", data.command || "(not recorded)"],
      ["Framework", data.framework],
      ["Device", data.devices.length ? data.devices.join(", ") : "(no ops)"],
      ["Duration", time(data.duration_us)],
      ["Exit", data.exit],
      ["Events", count(c.events) + ": " + [plural(c.ops, "op"), plural(c.casts, "cast"),
        plural(c.regions, "autocast region"), plural(c.scaler, "scaler event"),
        plural(c.kernels, "GPU kernel"), plural(c.diag, "diagnostic")].join(", ")],
      ["Steps", stepsText()],
      ["Processes", processes.map(processLabel).join("; ") || "(none)"],
      ["Trace", data.trace + " · " + (data.generator || "not written by amptrace") +
        (data.format ? ", format " + data.format : "") + (data.host ? " · host " + data.host : "")],
    ];
    const meta = document.getElementById("r-meta");
    for (const [key, value] of rows)
      meta.append(el("dt", {}, key), el("dd", {}, value));

    const verdict = document.getElementById("r-verdict");
    if (!data.findings.length) {
      verdict.className += " clean";
      verdict.textContent = "No findings: amptrace saw no AMP mistake in this trace.";
      return;
    }
    const bySeverity = {};
    for (const f of data.findings)
      (bySeverity[f.severity] = bySeverity[f.severity] || []).push(f.kind);
    let first = true;
    for (const severity of ["error", "warning", "info"]) {
      const kinds = bySeverity[severity];
      if (!kinds) continue;
      if (!first) verdict.append(" · ");
      first = false;
      const word = severity === "info" ? kinds.length + " info" : plural(kinds.length, severity);
      verdict.append(el("span", { class: severity }, word + ": " +
        [...new Set(kinds)].join(", ")));
    }
  }

  /* --------------------------------------------------------- findings */
  function findGraphNode(f) {
    const svg = document.querySelector("#r-graph-view svg");
    if (!svg) return null;
    const start = "⚠ " + f.severity + ": " + f.kind;
    for (const node of svg.querySelectorAll("g.node")) {
      const title = node.querySelector("title");
      const text = node.querySelector("text");
      if (!title || !title.textContent.startsWith("finding") || !text) continue;
      const t = text.textContent;
      if (t === start || t.startsWith(start + " ")) return node;
    }
    return null;
  }

  function showGroup(f) {
    const index = processIndex(f.pid);
    if (index >= 0 && index !== current) selectProcess(index);
    const filter = document.getElementById("r-op-filter");
    if (filter.value) { filter.value = ""; filter.dispatchEvent(new Event("input")); }
    const row = document.getElementById(f.group);
    if (!row) return;
    for (const old of document.querySelectorAll("tr.r-target")) old.classList.remove("r-target");
    row.classList.add("r-target");
    row.scrollIntoView({ block: "center" });
  }

  /* " ×6"; a finding of several ranks (summary's fold, the lowest rank's
   * shown): " ×6 on each of 2 ranks", " ×13 on 2 of 3 ranks" (the rank
   * of a finding of one is in its "at fault" line). */
  const jobRanks = new Set(processes.filter((p) => p.rank !== null).map((p) => p.rank)).size;
  function occurrences(f) {
    const of = f.ranks < jobRanks ? " of " + jobRanks : "";
    if (f.ranks > 1 && f.each === null) return " ×" + count(f.count) + " on " + f.ranks + of + " ranks";
    const times = f.ranks > 1 ? f.each : f.count;
    const on = f.ranks > 1 ? " on each of " + f.ranks + of + " ranks" : "";
    return (times > 1 ? " ×" + count(times) : "") + on;
  }

  function findings() {
    const list = document.getElementById("r-finding-list");
    document.getElementById("r-findings").dataset.findings = String(data.findings.length);
    if (!data.findings.length)
      list.append(el("li", { class: "none" }, "No findings."));
    for (const f of data.findings) {
      const where = [];
      if (f.op) where.push("op " + f.op + " (op " + f.op_id + ", " + f.phase + ")");
      else if (f.op_id) where.push("op " + f.op_id);
      if (f.tensor) where.push("tensor " + f.tensor);
      where.push("step " + f.step);
      if (processes.length > 1 && processIndex(f.pid) >= 0)
        where.push(processLabel(processes[processIndex(f.pid)]));
      const links = el("div", { class: "links" });
      if (f.group)
        links.append(el("a", { href: "#" + f.group, onclick: (e) => { e.preventDefault(); showGroup(f); } },
          "→ the op in the table"));
      const node = findGraphNode(f);
      if (node)
        links.append(el("a", { href: "#r-graph", onclick: (e) => { e.preventDefault(); graphFocus(node); } },
          "→ in the graph"));
      else
        links.append(el("span", { class: "r-missing" }, "not drawn in the graph below (it shows " +
          graphShown() + "); draw step " + f.step + ": ",
          el("code", {}, "ampview " + shellQuote(data.trace) + " --step " + f.step + " -o step" + f.step + ".svg")));
      list.append(el("li", { class: f.severity, "data-kind": f.kind },
        el("div", {}, el("span", { class: "sev" }, f.severity), el("span", { class: "kind" }, f.kind),
          occurrences(f), ": " + f.message),
        el("div", { class: "fix" }, el("b", {}, "fix: "), f.fix || "(none given)"),
        el("div", { class: "where" }, "at fault: " + where.join(" · ")),
        links));
    }
  }

  /* ----------------------------------------------------------- charts */
  /* Colour plus a fill pattern (bars) or a point shape (lines): every
   * series is told apart without colour too. */
  /* ampview's dtype palette (viewer/dot.c), so a dtype looks the same in
   * the charts and the graph; integers differ by shade and pattern. */
  const dtypeColours = { f32: "#1f77b4", f16: "#d62728", bf16: "#8c52c4", f64: "#2a9a2a",
    i64: "#7f7f7f", i32: "#5f5f5f", bool: "#a0a0a0", none: "#c8c8c8" };
  const palette = ["#1f78b4", "#e6550d", "#33a02c", "#6a3d9a", "#b15928", "#e377c2", "#17becf", "#7f7f7f"];
  function pattern(colour, index) {
    const size = 10;
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = size;
    const g = canvas.getContext("2d");
    g.fillStyle = colour;
    g.fillRect(0, 0, size, size);
    g.strokeStyle = "rgba(255,255,255,0.75)";
    g.fillStyle = "rgba(255,255,255,0.75)";
    g.lineWidth = 2;
    switch (index % 6) {
      case 1: g.beginPath(); g.moveTo(0, size); g.lineTo(size, 0); g.stroke(); break;
      case 2: g.fillRect(3, 3, 4, 4); break;
      case 3: g.beginPath(); g.moveTo(0, 5); g.lineTo(size, 5); g.stroke(); break;
      case 4: g.beginPath(); g.moveTo(5, 0); g.lineTo(5, size); g.stroke(); break;
      case 5: g.beginPath(); g.moveTo(0, 0); g.lineTo(size, size); g.stroke(); break;
      default: break; /* solid */
    }
    return g.createPattern(canvas, "repeat");
  }
  /* With hundreds of steps, bar borders and point markers would cover
   * the data: bars go borderless and lines show points on hover only
   * (found_inf and skipped steps keep theirs). */
  let dense = false;
  function barSeries(label, values, colour, index, extra) {
    return Object.assign({ type: "bar", label, data: values, backgroundColor: pattern(colour, index),
      borderColor: colour, borderWidth: dense ? 0 : 1, stack: "s", yAxisID: "y", order: 2,
      barPercentage: dense ? 1 : 0.9, categoryPercentage: dense ? 1 : 0.8 }, extra || {});
  }
  function lineSeries(label, values, colour, shape, axis) {
    return { type: "line", label, data: values, borderColor: colour, backgroundColor: colour,
      pointStyle: shape, pointRadius: dense ? 0 : 5, pointHoverRadius: 7, borderWidth: 2,
      spanGaps: true, yAxisID: axis, order: 1 };
  }
  function steps(p) { return Array.from({ length: p.steps }, (_, i) => String(i)); }

  function baseOptions(yTitle, extraScales) {
    return {
      animation: false, responsive: true, maintainAspectRatio: false,
      interaction: { mode: "index", intersect: false },
      plugins: { legend: { labels: { usePointStyle: true } } },
      scales: Object.assign({
        x: { stacked: true, title: { display: true, text: "step" } },
        y: { stacked: true, beginAtZero: true, title: { display: true, text: yTitle } },
      }, extraScales || {}),
    };
  }

  const chartSpecs = {
    scale(p) {
      if (!p.scale.length) return "No GradScaler events in this trace (no loss scaling).";
      const value = new Array(p.steps).fill(null);
      const inf = new Array(p.steps).fill(null);
      const skipped = new Array(p.steps).fill(null);
      for (const s of p.scale) {
        value[s.step] = s.scale;
        if (s.found_inf) inf[s.step] = s.scale;
        if (s.skipped) skipped[s.step] = s.scale;
      }
      if (!value.some((v) => v !== null)) return "The GradScaler events carry no scale value.";
      const options = baseOptions("scale");
      options.scales.x.stacked = false;
      options.scales.y = { type: "logarithmic", title: { display: true, text: "loss scale (log)" } };
      return { data: { labels: steps(p), datasets: [
        lineSeries("loss scale", value, "#1f78b4", "circle", "y"),
        Object.assign(lineSeries("found_inf (inf/NaN gradients)", inf, "#b00020", "crossRot", "y"),
          { showLine: false, pointRadius: 9, borderWidth: 3 }),
        Object.assign(lineSeries("skipped step", skipped, "#9a5b00", "triangle", "y"),
          { showLine: false, pointRadius: 8, pointBackgroundColor: "rgba(0,0,0,0)", borderWidth: 2 }),
      ] }, options };
    },
    casts(p) {
      const directions = Object.keys(p.casts);
      if (!directions.length) return "No casts were made (autocast did not cast, or hit its cache).";
      /* a direction takes the colour of the dtype it casts to */
      const sets = directions.map((d, i) => barSeries(d, p.casts[d],
        dtypeColours[d.split("->")[1]] || palette[i % palette.length], i));
      sets.push(lineSeries("bytes cast", p.cast_bytes, "#222", "rectRot", "y1"));
      const options = baseOptions("casts", { y1: { position: "right", beginAtZero: true,
        grid: { drawOnChartArea: false }, title: { display: true, text: "bytes" },
        ticks: { callback: (v) => bytes(v) } } });
      options.plugins.tooltip = { callbacks: { label: (c) => c.dataset.label + ": " +
        (c.dataset.yAxisID === "y1" ? bytes(c.raw) : count(c.raw)) } };
      return { data: { labels: steps(p), datasets: sets }, options };
    },
    cache(p) {
      const total = (a) => a.reduce((x, y) => x + y, 0);
      if (!total(p.hits) && !total(p.misses) && !total(p.uncacheable))
        return "No autocast casts, so no cache activity.";
      const rate = p.hits.map((h, i) => (h + p.misses[i] ? h / (h + p.misses[i]) : null));
      const options = baseOptions("casts", { y1: { position: "right", min: 0, max: 1,
        grid: { drawOnChartArea: false }, title: { display: true, text: "hit rate" } } });
      options.plugins.tooltip = { callbacks: { label: (c) => c.dataset.label + ": " +
        (c.dataset.yAxisID === "y1" ? (c.raw === null ? "n/a" : (100 * c.raw).toFixed(1) + "%") : count(c.raw)) } };
      return { data: { labels: steps(p), datasets: [
        barSeries("hits", p.hits, "#33a02c", 0),
        barSeries("misses", p.misses, "#e6550d", 1),
        barSeries("uncacheable", p.uncacheable, "#7f7f7f", 2),
        lineSeries("hit rate = hits / (hits + misses)", rate, "#222", "triangle", "y1"),
      ] }, options };
    },
    dtypes(p) { return byDtype(p, p.ops, "ops", count); },
    time(p) { return byDtype(p, p.time_us, "µs", time); },
  };

  function byDtype(p, series, unit, format) {
    const dtypes = data.dtypes.filter((d) => series[d]);
    if (!dtypes.length) return "No ops in this process.";
    const options = baseOptions(unit);
    options.plugins.tooltip = { callbacks: { label: (c) => c.dataset.label + ": " + format(c.raw) } };
    return { data: { labels: steps(p), datasets: dtypes.map((d, i) =>
      barSeries(d, series[d], dtypeColours[d] || palette[i % palette.length], i)) }, options };
  }

  /* Points and bars actually drawn: elements with a finite, non-zero
   * value inside the chart area. */
  function drawnPoints(chart) {
    let n = 0;
    chart.data.datasets.forEach((set, i) => {
      const meta = chart.getDatasetMeta(i);
      meta.data.forEach((element, k) => {
        const v = set.data[k];
        if (v !== null && v !== 0 && Number.isFinite(v) && Number.isFinite(element.x) &&
            Number.isFinite(element.y)) n++;
      });
    });
    return n;
  }

  function drawCharts() {
    const p = processes[current];
    dense = p ? p.steps > 120 : false;
    for (const figure of document.querySelectorAll("figure.r-chart")) {
      const name = figure.dataset.chart;
      if (charts[name]) { charts[name].destroy(); delete charts[name]; }
      const box = figure.querySelector(".r-canvas");
      box.replaceChildren();
      const spec = p ? chartSpecs[name](p) : "No ops, casts or scaler events in this trace.";
      if (typeof spec === "string") {
        box.append(el("div", { class: "r-empty" }, spec));
        figure.dataset.points = "0";
        figure.dataset.empty = spec;
        continue;
      }
      delete figure.dataset.empty;
      const canvas = el("canvas", { role: "img", "aria-label": figure.querySelector("figcaption").textContent });
      box.append(canvas);
      charts[name] = new Chart(canvas, spec);
      figure.dataset.points = String(drawnPoints(charts[name]));
    }
  }

  /* ----------------------------------------------------------- tables */
  /* A table of rows; clicking a header sorts by it unless `sortable` is
   * false (a tree, whose order is its structure). */
  function table(id, columns, rows, rowId, sortable = true) {
    const t = document.getElementById(id);
    t.replaceChildren();
    const head = el("tr");
    let sortKey = null, ascending = false;
    const body = el("tbody");
    function fill() {
      const sorted = rows.slice();
      if (sortKey) {
        const col = columns.find((c) => c.key === sortKey);
        sorted.sort((a, b) => {
          const x = a[sortKey], y = b[sortKey];
          const order = col.num ? x - y : String(x).localeCompare(String(y));
          return ascending ? order : -order;
        });
      }
      body.replaceChildren(...sorted.map((r) => {
        const tr = el("tr", { id: rowId ? rowId(r) : null });
        for (const c of columns) {
          const v = r[c.key];
          tr.append(el("td", { class: c.num ? "num" : v === null ? "r-none" : null },
            c.format ? c.format(v, r) : v === null ? "(unnamed)" : v));
        }
        return tr;
      }));
      if (!rows.length)
        body.append(el("tr", {}, el("td", { class: "r-none", colspan: columns.length }, "(none)")));
    }
    for (const c of columns) {
      const th = el("th", { class: c.num ? "num" : null, scope: "col",
                            title: sortable ? "click to sort" : null }, c.label);
      head.append(th);
      if (!sortable) continue;
      th.addEventListener("click", () => {
        ascending = sortKey === c.key ? !ascending : !c.num;
        sortKey = c.key;
        for (const other of head.children) other.removeAttribute("aria-sort");
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        fill();
      });
    }
    t.append(el("thead", {}, head), body);
    fill();
    return body;
  }

  function drawTables() {
    const p = processes[current] || { op_table: [], cast_table: [], reasons: [], regions: [] };
    const opBody = table("r-ops", [
      { key: "op", label: "op" }, { key: "phase", label: "phase" }, { key: "policy", label: "policy" },
      { key: "dtype", label: "output" }, { key: "count", label: "count", num: true, format: count },
      { key: "time_us", label: "time", num: true, format: time },
      { key: "casts", label: "casts", num: true, format: count },
      { key: "cast_bytes", label: "cast bytes", num: true, format: bytes },
    ], p.op_table.slice().sort((a, b) =>
      (a.folded === true) - (b.folded === true) || b.casts - a.casts || b.time_us - a.time_us),
    (r) => r.id);
    const filter = document.getElementById("r-op-filter");
    filter.oninput = () => {
      const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
      for (const tr of opBody.children)
        tr.hidden = !words.every((w) => tr.textContent.toLowerCase().includes(w));
    };
    filter.oninput();
    table("r-casts", [
      { key: "from", label: "from" }, { key: "to", label: "to" },
      { key: "casts", label: "casts", num: true, format: count },
      { key: "hits", label: "cache hits", num: true, format: count },
      { key: "bytes", label: "bytes", num: true, format: bytes },
      { key: "time_us", label: "time", num: true, format: time },
    ], p.cast_table);
    table("r-reasons", [
      { key: "reason", label: "reason" }, { key: "count", label: "casts", num: true, format: count },
    ], p.reasons.slice().sort((a, b) => b.count - a.count));
    table("r-regions", [
      { key: "scope", label: "region" }, { key: "depth", label: "depth", num: true },
      { key: "device", label: "device" }, { key: "dtype", label: "dtype" },
      { key: "entered", label: "entered", num: true, format: count },
      { key: "ops", label: "ops inside", num: true, format: count },
      { key: "casts", label: "casts inside", num: true, format: count },
      { key: "time_us", label: "time", num: true, format: time },
    ], p.regions);
    const aggregated = p.regions_aggregated || 0;
    document.getElementById("r-regions-note").textContent = aggregated
      ? "and " + count(aggregated) + " more entered in steps recorded as per-step aggregates, whose rows name no region"
      : "";
  }

  /* ---------------------------------------------------------- modules */
  /* "bf16 2,328, f32 576": an object of counts, largest first. */
  function counts(o) {
    const entries = Object.entries(o || {}).sort((a, b) => b[1] - a[1]);
    return entries.length ? entries.map(([k, n]) => k + " " + count(n)).join(", ") : "-";
  }
  /* The module tree (whole trace, every process): a row per module under
   * the one holding it, as summary --depth counts them. */
  function modules() {
    const m = data.modules;
    if (!m) return;
    document.getElementById("r-modules-box").hidden = false;
    document.getElementById("r-modules-note").textContent =
      "ops, output dtypes, autocast's casts and time per nn.Module, " + m.depth +
      " level" + (m.depth === 1 ? "" : "s") + " deep, all processes (amptrace summary --depth N counts them so)";
    table("r-modules", [
      { key: "name", label: "module", format: (v, r) =>
        el("span", { style: "padding-left:" + (r.depth - 1) * 1.2 + "em", title: r.module === null ? "" : r.module }, v) },
      { key: "class", label: "class", format: (v) => v === null ? "" : v },
      { key: "ops", label: "ops", num: true, format: count },
      { key: "outputs", label: "output dtypes", format: counts },
      { key: "casts", label: "casts", format: counts },
      { key: "cache_hits", label: "cache hits", num: true, format: count },
      { key: "time_us", label: "time", num: true, format: time },
    ], m.rows, null, false);
    document.getElementById("r-modules").dataset.rows = String(m.rows.length);
  }

  /* ------------------------------------------------------------ graph */
  const view = document.getElementById("r-graph-view");
  const svg = view.querySelector("svg");
  let box = null, full = null;
  function setBox(b) {
    box = b;
    svg.setAttribute("viewBox", [b.x, b.y, b.w, b.h].join(" "));
  }
  function zoom(factor, cx, cy) {
    if (cx === undefined) { cx = box.x + box.w / 2; cy = box.y + box.h / 2; }
    setBox({ x: cx - (cx - box.x) * factor, y: cy - (cy - box.y) * factor, w: box.w * factor, h: box.h * factor });
  }
  /* The op node a finding's note is tied to (its dashed edge). */
  function noteTarget(note) {
    const name = note.querySelector("title").textContent;
    for (const edge of svg.querySelectorAll("g.edge")) {
      const [from, to] = edge.querySelector("title").textContent.split("->");
      if (from === name)
        return [...svg.querySelectorAll("g.node")].find((n) => n.querySelector("title").textContent === to);
    }
    return null;
  }
  function graphFocus(node) {
    for (const old of svg.querySelectorAll("g.r-focus")) old.classList.remove("r-focus");
    node.classList.add("r-focus");
    const op = noteTarget(node);
    if (op) op.classList.add("r-focus");
    const b = node.getBBox();
    const m = node.getCTM() && svg.getCTM() ? svg.getCTM().inverse().multiply(node.getCTM()) : null;
    const x = m ? m.a * b.x + m.e : b.x, y = m ? m.d * b.y + m.f : b.y;
    const w = Math.max(b.width * 4, 600), h = Math.max(b.height * 4, 400);
    setBox({ x: x + b.width / 2 - w / 2, y: y + b.height / 2 - h / 2, w, h });
    view.scrollIntoView({ block: "start" });
  }
  function graph() {
    const g = data.graph;
    view.dataset.graph = g.drawn && svg ? "drawn" : "missing";
    document.getElementById("r-graph-note").textContent = g.drawn && svg
      ? "ampview's default view: " + graphShown() +
        (data.modules ? ", its forward pass by module (--no-modules draws every op)" : "") +
        "; drag to pan, wheel or buttons to zoom"
      : "not drawn: " + g.why;
    if (!g.drawn || !svg) view.classList.add("r-missing");
    const stepSelect = document.getElementById("r-graph-step");
    for (let s = 0; s < data.steps.count; s++)
      stepSelect.append(el("option", { value: String(s) }, String(s)));
    stepSelect.append(el("option", { value: "all" }, "all"));
    stepSelect.value = data.steps.count ? String(data.graph_step) : "all";
    const scopeSelect = document.getElementById("r-graph-scope");
    scopeSelect.append(el("option", { value: "" }, "any"));
    const scopes = new Set();
    for (const p of processes) for (const r of p.regions) if (r.scope) scopes.add(r.scope);
    for (const s of scopes) scopeSelect.append(el("option", { value: s }, s));
    const phaseSelect = document.getElementById("r-graph-phase");
    /* a trace drawn by module shows its forward pass unless told */
    if (data.modules) document.getElementById("r-graph-phase-default").textContent = "forward";
    const command = document.getElementById("r-graph-command");
    function update() {
      const parts = ["ampview", shellQuote(g.trace)];
      parts.push(stepSelect.value === "all" ? "--all-steps" : "--step " + stepSelect.value);
      if (scopeSelect.value) parts.push("--scope " + shellQuote(scopeSelect.value));
      if (phaseSelect.value) parts.push("--phase " + phaseSelect.value);
      parts.push("-o graph.svg");
      command.textContent = parts.join(" ");
    }
    for (const s of [stepSelect, scopeSelect, phaseSelect]) s.addEventListener("change", update);
    update();
    document.getElementById("r-graph-copy").addEventListener("click", () => {
      const range = document.createRange();
      range.selectNodeContents(command);
      getSelection().removeAllRanges();
      getSelection().addRange(range);
      if (navigator.clipboard) navigator.clipboard.writeText(command.textContent).catch(() => {});
    });
    if (!svg) return;
    const vb = svg.viewBox.baseVal;
    full = { x: vb.x, y: vb.y, w: vb.width, h: vb.height };
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    svg.setAttribute("preserveAspectRatio", "xMidYMin meet");
    svg.dataset.full = [full.x, full.y, full.w, full.h].join(" ");
    /* A tall graph opens at full width on its top (title, legend, first
     * ops), readable; "fit" shows all of it. */
    const aspect = view.clientHeight / Math.max(view.clientWidth, 1);
    setBox(full.h / full.w > aspect ? { x: full.x, y: full.y, w: full.w, h: full.w * aspect } : full);
    for (const button of document.querySelectorAll("[data-zoom]"))
      button.addEventListener("click", () => {
        const how = button.dataset.zoom;
        if (how === "fit") setBox(full); else zoom(how === "in" ? 0.7 : 1 / 0.7);
      });
    function toGraph(e) {
      const point = svg.createSVGPoint();
      point.x = e.clientX;
      point.y = e.clientY;
      return point.matrixTransform(svg.getScreenCTM().inverse());
    }
    view.addEventListener("wheel", (e) => {
      e.preventDefault();
      const at = toGraph(e);
      zoom(e.deltaY > 0 ? 1.15 : 1 / 1.15, at.x, at.y);
    }, { passive: false });
    let drag = null;
    view.addEventListener("pointerdown", (e) => {
      if (e.target.closest("a")) return;
      drag = { x: e.clientX, y: e.clientY, box: Object.assign({}, box) };
      view.setPointerCapture(e.pointerId);
    });
    view.addEventListener("pointermove", (e) => {
      if (!drag) return;
      const scale = box.w / view.clientWidth;
      setBox({ x: drag.box.x - (e.clientX - drag.x) * scale, y: drag.box.y - (e.clientY - drag.y) * scale,
        w: box.w, h: box.h });
    });
    view.addEventListener("pointerup", () => { drag = null; });
  }

  /* ------------------------------------------------------------ ranks */
  function selectProcess(index) {
    current = index;
    document.getElementById("r-rank").value = String(index);
    drawCharts();
    drawTables();
  }
  function ranks() {
    const select = document.getElementById("r-rank");
    processes.forEach((p, i) => select.append(el("option", { value: String(i) }, processLabel(p))));
    document.getElementById("r-rank-box").hidden = processes.length < 2;
    select.addEventListener("change", () => selectProcess(Number(select.value)));
    document.getElementById("r-steps-note").textContent = "steps as amptrace summary counts them (" +
      markedText() + ")" + (processes.length > 1 ? "; one process at a time: choose it at the top" : "");
  }

  try {
    header();
    ranks();
    graph();
    findings();
    modules();
    selectProcess(data.opens || 0);
  } catch (e) {
    fail(e && e.stack ? e.stack : e);
    throw e;
  }
  document.body.dataset.ready = "1";
})();
