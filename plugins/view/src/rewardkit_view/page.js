// The page of `rewardkit view`: everything is built from the embedded JSON with DOM calls and
// textContent. No string from the data is ever parsed as HTML (no innerHTML, no insertAdjacentHTML):
// a completion is written by an adversary.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("rewardkit-data").textContent);
  const SVG = "http://www.w3.org/2000/svg";
  const components = DATA.components;
  const rows = DATA.rows;
  const comparison = DATA.comparison;
  const byTrajectory = new Map(rows.map((row) => [row.t, row]));

  function el(tag, className, ...children) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }
  function svg(tag, attributes) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
    return node;
  }
  function number(value, digits) {
    if (value === null || value === undefined) return "—";
    return Number(value).toFixed(digits === undefined ? 4 : digits);
  }
  function count(value) {
    return Number(value).toLocaleString("en-US");
  }
  function cell(text, className) {
    return el("td", className, text);
  }
  function table(headings, bodyRows, className) {
    const head = el("tr", null, ...headings.map((heading) => el("th", null, heading)));
    const body = el("tbody", null, ...bodyRows);
    return el("table", className, el("thead", null, head), body);
  }
  function completionBlock(row) {
    const block = el("div", null, el("pre", "completion", row.x));
    if (row.n > row.x.length) {
      block.append(el("div", "cut", "cut: " + count(row.n - row.x.length) + " more characters not embedded (--max-text " + DATA.max_text + ")"));
    }
    return block;
  }
  function groupButton(groupIndex) {
    const button = el("button", "group-link", DATA.groups[groupIndex]);
    button.type = "button";
    button.dataset.group = String(groupIndex);
    button.addEventListener("click", () => openGroup(groupIndex));
    return button;
  }

  // -- header and provenance --------------------------------------------------------------------
  document.getElementById("title").textContent = (comparison ? "rewardkit compare — " : "rewardkit view — ") + DATA.source;
  document.getElementById("totals").textContent =
    count(rows.length) + " candidates in " + count(DATA.groups.length) + " groups";

  function provenanceTable(provenance) {
    if (!provenance) return el("p", null, "No run manifest beside this results file: where it came from is unknown.");
    const lines = [];
    for (const name of ["config", "rollouts", "catalog", "service", "backend", "started"]) {
      if (name in provenance) lines.push([name, provenance[name] === null ? "—" : String(provenance[name])]);
    }
    (provenance.providers || []).forEach((provider) => lines.push(["provider " + provider.provider,
      "revision " + provider.revision + " · identity " + String(provider.identity).slice(0, 16) + " · code " +
      String(provider.code_fingerprint).slice(0, 16) + (provider.catalog ? " · catalog " + provider.catalog : "")]));
    ((provenance.spec || {}).components || []).forEach((component) => lines.push(["component " + component.name,
      component.provider + ":" + component.term + " · weight " + component.weight + (component.gate ? " · gate" : "") +
      " · params " + JSON.stringify(component.params || {})]));
    const whole = el("details", null, el("summary", null, "the whole run manifest"), el("pre", null, JSON.stringify(provenance, null, 1)));
    return el("div", null, table(["field", "value"], lines.map(([name, value]) => el("tr", null, cell(name), cell(value))), "provenance"), whole);
  }
  document.getElementById("provenance").append(provenanceTable(DATA.provenance));

  // -- summary and histograms --------------------------------------------------------------------
  const summaryRows = DATA.summary.map((item) => {
    const reasons = item.reasons.map(([reason, times]) => times + " × " + reason).join("\n");
    return el("tr", null, cell(item.name), cell(number(item.mean), "number"), cell(number(item.std), "number"),
      cell(count(item.counts.scored), "number"), cell(count(item.counts.skipped), "number"),
      cell(count(item.counts.error), "number"), el("td", null, el("pre", null, reasons || "—")));
  });
  document.getElementById("summary").append(
    table(["component", "mean", "std", "scored", "skipped", "errored", "charges by reason"], summaryRows, "summary"));

  function histogramChart(item) {
    const width = 240, height = 80;
    const chart = svg("svg", { width: width, height: height + 2, viewBox: "0 0 " + width + " " + (height + 2), role: "img" });
    const counts = item.histogram.counts;
    const most = Math.max(1, ...counts);
    const barWidth = counts.length ? width / counts.length : width;
    counts.forEach((times, index) => {
      const barHeight = (times / most) * height;
      const bar = svg("rect", { x: index * barWidth + 1, y: height - barHeight, width: Math.max(1, barWidth - 2), height: barHeight, fill: "#4a78b5" });
      bar.append(svg("title", {}));
      bar.lastChild.textContent = times + " candidates";
      chart.append(bar);
    });
    chart.append(svg("line", { x1: 0, y1: height + 1, x2: width, y2: height + 1, stroke: "#555" }));
    const range = item.histogram.lo === null ? "no scored values" : number(item.histogram.lo, 3) + " … " + number(item.histogram.hi, 3);
    return el("div", "histogram", el("div", null, item.name), chart, el("div", "caption", range));
  }
  document.getElementById("histograms").append(...DATA.summary.map(histogramChart));

  const zeroVariance = document.getElementById("zero-variance");
  zeroVariance.append("Zero-variance groups (all finals equal, no learning signal for GRPO): " +
    DATA.zero_variance_groups.length + " of " + DATA.groups.length + (DATA.zero_variance_groups.length ? ": " : ""));
  const groupIndexOf = new Map(DATA.groups.map((group, index) => [group, index]));
  DATA.zero_variance_groups.forEach((group, index) => {
    if (index) zeroVariance.append(", ");
    zeroVariance.append(groupButton(groupIndexOf.get(group)));
  });

  // -- candidates: filters, sorting, client-side pagination -------------------------------------------
  const componentFilter = document.getElementById("filter-component");
  const statusFilter = document.getElementById("filter-status");
  const reasonFilter = document.getElementById("filter-reason");
  const textFilter = document.getElementById("filter-text");
  const sortChoice = document.getElementById("sort");
  function option(select, value, label) {
    const item = el("option", null, label);
    item.value = value;
    select.append(item);
  }
  option(componentFilter, "", "any component");
  components.forEach((name, index) => option(componentFilter, String(index), name));
  option(statusFilter, "", "any status");
  ["scored", "skipped", "error"].forEach((status) => option(statusFilter, status, status));
  const reasons = new Set();
  rows.forEach((row) => row.b.forEach((part) => { if (part && part[2]) reasons.add(part[2]); }));
  option(reasonFilter, "", "any reason");
  option(reasonFilter, "\u0000none", "no reason");
  [...reasons].sort().slice(0, 500).forEach((reason) => option(reasonFilter, reason, reason.length > 80 ? reason.slice(0, 80) + "…" : reason));
  const sorts = [["file", "file order"], ["final-desc", "final, highest first"], ["final-asc", "final, lowest first"],
    ["advantage-desc", "advantage, highest first"], ["advantage-asc", "advantage, lowest first"], ["group", "group"]];
  if (comparison) sorts.push(["change-desc", "change B − A, largest first"]);
  sorts.forEach(([value, label]) => option(sortChoice, value, label));

  const head = document.getElementById("candidates-head");
  const headings = ["group", "candidate", "final", "advantage"];
  if (comparison) headings.push("final under A", "advantage under A");
  headings.push(...components.map((name) => name), "diagnostics", "completion");
  head.append(el("tr", null, ...headings.map((heading) => el("th", null, heading))));

  let page = 0;
  let visible = rows;
  function matches(row, componentIndex, status, reason, text) {
    const parts = componentIndex === "" ? row.b : [row.b[Number(componentIndex)]];
    if (status || reason) {
      const hit = parts.some((part) => part && (!status || part[0] === status) &&
        (!reason || (reason === "\u0000none" ? !part[2] : part[2] === reason)));
      if (!hit) return false;
    }
    if (text) {
      const extracted = row.b.map((part) => (part && part[3]) || "").join(" ");
      const haystack = (row.t + " " + DATA.groups[row.g] + " " + extracted + " " + row.x).toLowerCase();
      if (!haystack.includes(text)) return false;
    }
    return true;
  }
  function sortKey(choice) {
    const missing = (value) => (value === null || value === undefined ? -Infinity : value);
    if (choice.startsWith("final")) return (row) => missing(row.f);
    if (choice.startsWith("advantage")) return (row) => missing(row.a);
    if (choice.startsWith("change")) return (row) => Math.abs(missing(row.f) - missing(row.fa));
    return (row) => row.g;
  }
  function applyFilters() {
    const text = textFilter.value.trim().toLowerCase();
    visible = rows.filter((row) => matches(row, componentFilter.value, statusFilter.value, reasonFilter.value, text));
    const choice = sortChoice.value;
    if (choice !== "file") {
      const key = sortKey(choice);
      const sign = choice.endsWith("-asc") || choice === "group" ? 1 : -1;
      visible = visible.slice().sort((left, right) => sign * (key(left) - key(right)));
    }
    page = 0;
    renderPage();
  }
  function candidateRow(row) {
    const cells = [el("td", null, groupButton(row.g)), cell(row.t), cell(number(row.f), "number"), cell(number(row.a), "number")];
    if (comparison) cells.push(cell(number(row.fa), "number"), cell(number(row.aa), "number"));
    row.b.forEach((part) => {
      if (!part) { cells.push(cell("—")); return; }
      const [status, value, reason, extracted] = part;
      const holder = el("td", null, el("span", "status-" + status, status), " ", number(value, 3));
      if (reason) holder.append(el("div", "reason", reason));
      if (extracted !== null && extracted !== undefined) holder.append(el("div", null, "extracted: ", el("code", null, extracted)));
      cells.push(holder);
    });
    cells.push(el("td", null, el("pre", "diagnostics", Object.entries(row.d).map(([name, value]) => name + " " + number(value, 3)).join("\n"))));
    cells.push(el("td", null, completionBlock(row)));
    const line = el("tr", null, ...cells);
    line.dataset.trajectory = row.t;
    return line;
  }
  function renderPage() {
    const size = DATA.page_size;
    const pages = Math.max(1, Math.ceil(visible.length / size));
    page = Math.min(Math.max(page, 0), pages - 1);
    const first = page * size;
    const shown = visible.slice(first, first + size);
    document.getElementById("candidates-body").replaceChildren(...shown.map(candidateRow));
    document.getElementById("page-label").textContent = "page " + (page + 1) + " of " + pages;
    document.getElementById("paging-note").textContent =
      (visible.length ? "Showing " + count(first + 1) + "–" + count(first + shown.length) : "Showing none") + " of " +
      count(visible.length) + " matching · " + count(rows.length) + " candidates. Every candidate is in this file; the table shows " +
      size + " at a time (client-side pagination, nothing sampled).";
  }
  document.getElementById("page-previous").addEventListener("click", () => { page -= 1; renderPage(); });
  document.getElementById("page-next").addEventListener("click", () => { page += 1; renderPage(); });
  [componentFilter, statusFilter, reasonFilter, sortChoice].forEach((control) => control.addEventListener("change", applyFilters));
  let typing = null;
  textFilter.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(applyFilters, 150); });

  // -- the group view: a group's candidates side by side --------------------------------------------
  function openGroup(groupIndex) {
    const members = rows.filter((row) => row.g === groupIndex);
    document.getElementById("group-title").textContent = "Group " + DATA.groups[groupIndex] + " (" + members.length + " candidates)";
    const cards = members.map((row) => {
      const advantage = row.a === null || row.a === undefined ? 0 : row.a;
      const card = el("div", "card " + (advantage > 1e-9 ? "positive" : advantage < -1e-9 ? "negative" : "zero"));
      card.dataset.trajectory = row.t;
      card.append(el("div", "head", row.t));
      card.append(el("div", null, "final " + number(row.f) + " · advantage " + number(row.a)));
      if (comparison) card.append(el("div", null, "under A: final " + number(row.fa) + " · advantage " + number(row.aa)));
      row.b.forEach((part, index) => {
        if (!part) return;
        const line = el("div", null, components[index] + ": ", el("span", "status-" + part[0], part[0]), " " + number(part[1], 3));
        if (part[2]) line.append(el("div", "reason", part[2]));
        if (part[3] !== null && part[3] !== undefined) line.append(el("div", null, "extracted: ", el("code", null, part[3])));
        card.append(line);
      });
      card.append(completionBlock(row));
      return card;
    });
    document.getElementById("group-cards").replaceChildren(...cards);
    const view = document.getElementById("group-view");
    view.hidden = false;
    view.scrollIntoView();
  }
  document.getElementById("group-close").addEventListener("click", () => { document.getElementById("group-view").hidden = true; });

  // -- the audit's findings -------------------------------------------------------------------------
  if (DATA.audit) {
    const audit = DATA.audit;
    const section = document.getElementById("audit");
    section.append(el("h2", null, "Audit"));
    section.append(table(["component", "provider", "state"], audit.providers.map((provider) =>
      el("tr", null, cell(provider.name), cell(provider.provider), cell(provider.state, provider.state === "holds" ? "" : "leak")))));
    section.append(el("p", null, audit.held + " attacks held; " + audit.findings.length + " did not" +
      (audit.untested.length ? "; untested: " + audit.untested.join(", ") : "") + "."));
    audit.findings.forEach((finding) => {
      section.append(el("h3", "leak", finding.family + " / " + finding.name + ": " + finding.verdict));
      section.append(el("p", null, "attack mean " + number(finding.attack_mean, 3) + " against honest wrong " +
        number(finding.wrong_mean, 3) + " and honest right " + number(finding.right_mean, 3) + " over " + finding.rows_tried +
        " rows; worst row " + finding.worst_row + " (gain " + number(finding.worst_gain, 3) + ")" +
        (finding.error_example ? "; error: " + finding.error_example : "")));
      const texts = finding.candidates.filter((record) => record.completion || record.text);
      if (texts.length) {
        section.append(table(["row", "final", "attack text"], texts.map((record) =>
          el("tr", null, cell(record.row), cell(number(record.final, 3), "number"), el("td", null, el("pre", null, record.completion || record.text))))));
      } else {
        section.append(table(["row", "final", "status"], finding.candidates.map((record) =>
          el("tr", null, cell(record.row), cell(number(record.final, 3), "number"), cell(record.status + (record.reason ? ": " + record.reason : ""))))));
      }
    });
    section.hidden = false;
  }

  // -- the monitor's signals over steps, alarms marked ------------------------------------------------
  function signalChart(run, name) {
    const width = 320, height = 110, pad = 6;
    const values = run.signals[name];
    const defined = values.filter((value) => value !== null);
    const chart = svg("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img" });
    if (!defined.length || !run.steps.length) return el("div", "chart", el("div", null, name + " (never defined)"));
    const low = Math.min(...defined), high = Math.max(...defined);
    const firstStep = run.steps[0], lastStep = run.steps[run.steps.length - 1];
    const x = (step) => pad + ((step - firstStep) / Math.max(1, lastStep - firstStep)) * (width - 2 * pad);
    const y = (value) => height - pad - ((value - low) / (high - low || 1)) * (height - 2 * pad);
    const points = [];
    values.forEach((value, index) => { if (value !== null) points.push(x(run.steps[index]).toFixed(1) + "," + y(value).toFixed(1)); });
    chart.append(svg("polyline", { points: points.join(" "), fill: "none", stroke: "#2f5f9e", "stroke-width": 1.5 }));
    run.alarms.filter((alarm) => alarm.signal === name).forEach((alarm) => {
      chart.append(svg("line", { x1: x(alarm.step), y1: 0, x2: x(alarm.step), y2: height, stroke: "#c8453b", "stroke-width": 2, class: "alarm-mark" }));
      if (typeof alarm.began === "number") {
        chart.append(svg("line", { x1: x(alarm.began), y1: 0, x2: x(alarm.began), y2: height, stroke: "#c8453b", "stroke-dasharray": "4 3" }));
      }
    });
    return el("div", "chart", el("div", null, name + " (" + number(low, 3) + " … " + number(high, 3) + ")"), chart);
  }
  if (DATA.monitor) {
    const section = document.getElementById("monitor");
    section.append(el("h2", null, "Monitor"));
    DATA.monitor.forEach((run) => {
      section.append(el("h3", null, "run " + run.label + ": " + run.steps.length + " steps, " + run.alarms.length + " alarms"));
      run.alarms.forEach((alarm) => section.append(el("p", "alarm", "alarm on " + alarm.signal + " at step " + alarm.step +
        (typeof alarm.began === "number" ? " (change began at step " + alarm.began + ")" : "") + ": " + (alarm.evidence || ""))));
      section.append(...Object.keys(run.signals).map((name) => signalChart(run, name)));
    });
    section.hidden = false;
  }

  // -- two rewards compared (rewardkit compare --html) -------------------------------------------------
  if (comparison) {
    const section = document.getElementById("comparison");
    section.append(el("h2", null, "Comparison: A " + comparison.a.label + " against B " + comparison.b.label));
    section.append(el("h3", null, "A"), provenanceTable(comparison.a.provenance), el("h3", null, "B"), provenanceTable(comparison.b.provenance));
    section.append(el("h3", null, "Agreement"));
    section.append(table(["component", "same value", "share"], comparison.agreement.map((item) =>
      el("tr", null, cell(item.component), cell(item.same + " of " + item.total, "number"), cell(number(item.share, 3), "number")))));
    section.append(el("p", null, comparison.changed.length + " candidates changed reward; " + comparison.flipped_groups.length +
      " groups where an advantage changed sign; " + comparison.only_a_pays.length + " paid by A only; " +
      comparison.only_b_pays.length + " paid by B only. (The table below is B's, with A's reward beside it.)"));
    const paidRows = (label, trajectories) => trajectories.map((trajectory) => {
      const row = byTrajectory.get(trajectory);
      return el("tr", null, cell(label), el("td", null, groupButton(row.g)), cell(trajectory), cell(number(row.fa, 3), "number"),
        cell(number(row.f, 3), "number"), el("td", null, completionBlock(row)));
    });
    section.append(el("h3", null, "Paid by one reward only"));
    section.append(table(["paid by", "group", "candidate", "final A", "final B", "completion"],
      [...paidRows("A only", comparison.only_a_pays), ...paidRows("B only", comparison.only_b_pays)], "paid-by-one"));
    section.append(el("h3", null, "Groups where an advantage changed sign"));
    section.append(table(["group", "candidates whose advantage changed sign (A → B)"], comparison.flipped_groups.map((flip) =>
      el("tr", null, el("td", null, groupButton(groupIndexOf.get(flip.group))),
        el("td", null, el("pre", null, flip.candidates.map((item) => item.t + ": " + number(item.aa, 3) + " → " + number(item.ab, 3)).join("\n"))))), "flips"));
    section.hidden = false;
  }

  applyFilters();
  window.rewardkitViewReady = true; // the browser test waits for this
})();
