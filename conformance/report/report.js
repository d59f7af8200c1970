/* conformance report: filters and the evidence panel. Vanilla JS, no network, file:// safe. */
(function () {
  "use strict";
  var doc = JSON.parse(document.getElementById("matrix-data").textContent);
  var catalogueUrl = document.body.getAttribute("data-catalogue-url") || "";
  var SYMBOL = {
    conforms: "\u2713", quirk: "~", fails: "\u2717", error: "!", inconclusive: "?",
    unsupported: "\u2013", "not recorded": "\u2205"
  };
  var IMPACT = { ok: "\u2713", wrong: "\u2717", crashed: "!", unrecoverable: "\u2717" };
  var DEVIATING = { quirk: 1, fails: 1, error: 1 };
  var STRATEGIES = ["naive", "guarded", "robust"];
  var cells = new Map(), cols = new Map(), rows = new Map();
  var strings = doc.strings || [];
  doc.cells.forEach(function (c) {
    /* the page interns repeated finding texts: a number is an index into doc.strings */
    (c.findings || []).forEach(function (f) {
      if (typeof f.message === "number") f.message = strings[f.message];
      if (typeof f.excerpt === "number") f.excerpt = strings[f.excerpt];
    });
    Object.keys(c.impact || {}).forEach(function (s) {
      if (typeof c.impact[s].detail === "number") c.impact[s].detail = strings[c.impact[s].detail];
    });
    if (c.evidence_prefix || c.evidence_suffix) {  /* the shared chunk envelope, factored out */
      c.evidence.forEach(function (e) {
        if (e.kind === "chunk") e.data = (c.evidence_prefix || "") + e.data + (e.x ? "" : c.evidence_suffix || "");
      });
    }
    cells.set(c.column + "\u0000" + c.row, c);
  });
  doc.columns.forEach(function (c) { cols.set(c.id, c); });
  doc.rows.forEach(function (r) { rows.set(r.id, r); });
  var panel = document.getElementById("evidence");
  var active = null;

  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k === "class") el.className = v;
        else el.setAttribute(k, v === true ? "" : String(v));
      });
    }
    for (var i = 2; i < arguments.length; i++) append(el, arguments[i]);
    return el;
  }
  function append(el, kid) {
    if (kid === null || kid === undefined || kid === false) return;
    if (Array.isArray(kid)) { kid.forEach(function (k) { append(el, k); }); return; }
    el.appendChild(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  function code(text) { return h("code", null, text); }
  /* Prose with `code` spans (rule statements, messages), built as nodes, never as HTML. */
  /* The catalogue's Markdown subset: `code` and **bold**, built as nodes (never as HTML). */
  function prose(text) {
    return String(text).split("`").map(function (part, i) {
      if (i % 2) return code(part);
      return part.split("**").map(function (p, j) { return j % 2 ? h("strong", null, p) : p; });
    });
  }
  function plain(text) { return String(text).replace(/\*\*|`/g, ""); }
  function slug(v) { return v.replace(/ /g, "-"); }
  function quirkHref(q) {
    var entry = doc.quirks[q];
    return catalogueUrl && entry && entry.anchor ? catalogueUrl + entry.anchor : "#quirk-" + q;
  }
  function quirkLink(q) {
    var entry = doc.quirks[q] || {};
    return h("a", { href: quirkHref(q), title: plain(entry.title || q) }, code(q));
  }
  function levelTag(level) { return h("span", { class: "lvl lvl-" + level }, level); }

  /* ------------------------------------------------------------------ filters */
  function ctl(name) { return document.getElementById("filter-" + name); }
  function state() {
    return {
      provider: ctl("provider").value, scenario: ctl("scenario").value,
      verdict: ctl("verdict").value, quirk: ctl("quirk").value
    };
  }
  function verdictOk(v, st) {
    if (!st.verdict) return true;
    return st.verdict === "deviating" ? !!DEVIATING[v] : v === st.verdict;
  }
  function quirkOk(td, st) {
    if (!st.quirk) return true;
    var c = cells.get(td.dataset.column + "\u0000" + td.dataset.row);
    return !!c && (c.quirks || []).indexOf(st.quirk) >= 0;
  }
  function applyFilters() {
    var st = state(), shown = 0, total = 0;
    var narrowing = !!(st.verdict || st.quirk);
    document.querySelectorAll("table[data-section]").forEach(function (table) {
      var grid = table.dataset.layout === "grid";
      var isProviders = table.dataset.section === "providers";
      var colAllowed = function (cid) { return !isProviders || !st.provider || cid === st.provider; };
      var rowAllowed = function (rid) { return !st.scenario || rid === st.scenario; };
      var colHit = new Set(), rowHit = new Set();
      var tds = table.querySelectorAll("td.c");
      tds.forEach(function (td) {
        var cid = td.dataset.column, rid = td.dataset.row;
        var m = colAllowed(cid) && rowAllowed(rid) && !!td.dataset.verdict &&
          verdictOk(td.dataset.verdict, st) && quirkOk(td, st);
        td.classList.toggle("nomatch", !m);
        if (m) { colHit.add(cid); rowHit.add(rid); shown++; }
        total++;
      });
      if (!grid) {
        table.querySelectorAll("tbody tr").forEach(function (tr) {
          tr.classList.toggle("hide", !colHit.has(tr.dataset.column) || !rowHit.has(tr.dataset.row));
        });
        return;
      }
      table.querySelectorAll("[data-column]").forEach(function (el) {
        var cid = el.dataset.column;
        el.classList.toggle("hide", !colAllowed(cid) || (narrowing && !colHit.has(cid)));
      });
      table.querySelectorAll("tbody.scenarios tr").forEach(function (tr) {
        var rid = tr.dataset.row;
        tr.classList.toggle("hide", !rowAllowed(rid) || (narrowing && !rowHit.has(rid)));
      });
      table.querySelectorAll("tbody.quirk-rows tr").forEach(function (tr) {
        tr.classList.toggle("hide", !!st.quirk && tr.dataset.quirk !== st.quirk);
      });
    });
    document.querySelectorAll("ul.advice li[data-column], table.provenance tr[data-column]")
      .forEach(function (el) {
        var c = cols.get(el.dataset.column);
        var hide = !!st.provider && c && c.kind === "provider" && c.id !== st.provider;
        el.classList.toggle("hide", hide);
      });
    var count = document.getElementById("filter-count");
    if (count) count.textContent = "showing " + shown + " of " + total + " cells";
  }

  /* ------------------------------------------------------------------ evidence panel */
  function resolvePointer(data, pointer) {
    if (pointer === null || pointer === undefined) return undefined;
    var value;
    try { value = JSON.parse(data); } catch (err) { return undefined; }
    if (pointer === "") return value;
    var parts = pointer.split("/").slice(1);
    for (var i = 0; i < parts.length; i++) {
      var key = parts[i].replace(/~1/g, "/").replace(/~0/g, "~");
      if (value === null || typeof value !== "object" || !(key in value)) return undefined;
      value = value[key];
    }
    return value;
  }
  function ruleCell(f) {
    var rule = doc.rules[f.rule];
    var kids = [code(f.rule)];
    if (rule) {
      kids.push(h("div", { class: "stmt" }, prose(rule.statement + " \u2014 " + rule.source)));
    } else if (doc.quirks[f.rule]) {
      kids = [quirkLink(f.rule), h("div", { class: "stmt" }, prose(doc.quirks[f.rule].title))];
    }
    if (f.quirk && f.quirk !== f.rule) kids.push(h("div", null, "\u2192 ", quirkLink(f.quirk)));
    return h("td", null, kids);
  }
  function findingsTable(c) {
    var fs = c.findings || [];
    if (!fs.length) return h("p", { class: "empty" }, "No findings: every applicable rule passed.");
    return h("table", { class: "plain findings" },
      h("thead", null, h("tr", null, h("th", null, "Level"), h("th", null, "Rule"),
        h("th", null, "Where"), h("th", null, "What"))),
      h("tbody", null, fs.map(function (f) {
        var where = [f.event === null || f.event === undefined ? "stream" : "event " + f.event];
        if (f.pointer) where.push(h("div", null, code(f.pointer)));
        var what = [prose(f.message)];
        if (f.count > 1) what.push(" (\u00d7" + f.count + ")");
        if (f.excerpt) what.push(h("div", null, code(f.excerpt)));
        return h("tr", { "data-rule": f.rule }, h("td", null, levelTag(f.level)), ruleCell(f),
          h("td", null, where), h("td", null, what));
      })));
  }
  function wireLog(c) {
    var ev = c.evidence || [];
    if (!ev.length) {
      return h("p", { class: "empty" }, "No wire excerpt in this matrix" +
        (c.cassette ? "; the full exchange is in " + c.cassette : "") + ".");
    }
    var byEvent = {};
    (c.findings || []).forEach(function (f) {
      if (f.event === null || f.event === undefined) return;
      var k = (f.exchange || 0) + ":" + f.event;
      (byEvent[k] = byEvent[k] || []).push(f);
    });
    var items = [], prev = null, exch = 0;
    ev.forEach(function (e) {
      var x = e.exchange || 0;
      if (x !== exch) {
        items.push(h("li", { class: "gap exchange" }, "exchange " + x + (x === 1 ? " (round trip)" : "")));
        exch = x;
        prev = null;
      }
      if (prev !== null && e.n > prev + 1) items.push(h("li", { class: "gap" }, "\u22ef"));
      prev = e.n;
      var fs = byEvent[x + ":" + e.n] || [];
      var hl = e.highlight || fs.length > 0;
      var ptrs = fs.map(function (f) {
        var has = f.pointer !== null && f.pointer !== undefined;
        var v = has ? resolvePointer(e.data, f.pointer) : undefined;
        return h("div", { class: "ptr" }, "\u21b3 ", has ? code(f.pointer || "(whole payload)") : "",
          v === undefined ? "" : [" = ", code(JSON.stringify(v))], " " + f.rule + ": ", prose(f.message));
      });
      items.push(h("li", { class: hl ? "ev hl" : "ev", "data-n": e.n, "data-exchange": x,
        "data-highlight": hl ? "true" : null },
        h("span", { class: "n mono" }, e.n), h("span", { class: "kind" }, e.kind),
        h("code", { class: "data" }, e.data || "(empty)"), ptrs));
    });
    return h("ol", { class: "wire", "aria-label": "wire log" }, items);
  }
  function impactTable(c) {
    var imp = c.impact;
    if (!imp) return h("p", { class: "empty" }, "No client impact recorded.");
    return h("table", { class: "plain impact" }, h("tbody", null, STRATEGIES.map(function (s) {
      var i = imp[s];
      if (!i) return null;
      return h("tr", { "data-strategy": s }, h("th", null, s),
        h("td", { class: i.status === "ok" ? "ok" : "bad" }, IMPACT[i.status] + " " + i.status),
        h("td", null, i.detail || ""));
    })));
  }
  function callsTable(calls) {
    if (!calls || !calls.length) return h("p", { class: "empty" }, "No tool calls assembled.");
    return h("table", { class: "plain calls" },
      h("thead", null, h("tr", null, ["index", "id", "name", "arguments"].map(function (t) {
        return h("th", null, t);
      }))),
      h("tbody", null, calls.map(function (k) {
        return h("tr", null, h("td", null, k.index === null ? "\u2013" : k.index),
          h("td", null, code(JSON.stringify(k.id))), h("td", null, code(k.name)),
          h("td", null, code(k.arguments)));
      })));
  }
  function assembled(c) {
    var tc = c.tool_calls || {};
    var out = [callsTable(tc.robust)];
    ["naive", "guarded"].forEach(function (s) {
      if (tc[s] && JSON.stringify(tc[s]) !== JSON.stringify(tc.robust)) {
        out.push(h("details", null, h("summary", null, s + " assembled something else"),
          callsTable(tc[s])));
      }
    });
    return out;
  }
  function recording(c, col) {
    var p = col.provenance || {}, server = p.server || {};
    var dl = [];
    function item(k, v) { if (v !== null && v !== undefined && v !== "") dl.push(h("dt", null, k), h("dd", null, v)); }
    item("cassette", c.cassette ? code(c.cassette + (c.interaction ? "#" + c.interaction : "")) : null);
    item("finish_reason", c.finish_reason === undefined ? null : code(JSON.stringify(c.finish_reason)));
    if (c.trials) {
      var t = c.trials;
      item("trials", t.n + " \u00b7 " + JSON.stringify(t.verdict_counts || {}) +
        (t.quirk_counts ? " \u00b7 " + JSON.stringify(t.quirk_counts) : ""));
    }
    if (c.retries && c.retries.length) item("retries", JSON.stringify(c.retries));
    item("model", col.model);
    item("server", [server.software, server.version].filter(Boolean).join(" "));
    item("recorded", p.recorded_at);
    item("how", p.how);
    if (col.status === "not recorded") item("record with", code(col.record_command || "?"));
    return h("dl", { class: "rec" }, dl);
  }
  function openCell(cid, rid, td) {
    var c = cells.get(cid + "\u0000" + rid) || { column: cid, row: rid, verdict: "not recorded" };
    var col = cols.get(cid) || { id: cid, label: cid }, row = rows.get(rid) || { id: rid, title: rid };
    var expected = c.expected || [];
    panel.textContent = "";
    append(panel, [
      h("button", { type: "button", class: "close", "aria-label": "Close evidence" }, "\u00d7 close"),
      h("h2", { id: "evidence-title" },
        h("span", { class: "sw v-" + slug(c.verdict) }, SYMBOL[c.verdict] || "?"),
        col.label + " \u00d7 " + row.title),
      h("p", { class: "meta" }, c.verdict + " \u00b7 column ", code(cid), " \u00b7 row ", code(rid)),
      c.reason ? h("p", { class: "reason" }, c.reason) : null,
      (c.quirks || []).length ? [h("h3", null, "Quirks"), h("ul", { class: "quirks" },
        c.quirks.map(function (q) {
          var entry = doc.quirks[q] || {};
          return h("li", { "data-quirk": q }, quirkLink(q), " ", prose(entry.title || ""),
            entry.level ? levelTag(entry.level) : null,
            expected.indexOf(q) >= 0 ? " (expected by the provider entry)" : null);
        }))] : null,
      h("h3", null, "Findings"), findingsTable(c),
      h("h3", null, "Wire log"), wireLog(c),
      h("h3", null, "Client impact"), impactTable(c),
      h("h3", null, "Assembled calls (robust)"), assembled(c),
      h("h3", null, "Recording"), recording(c, col)
    ]);
    panel.hidden = false;
    document.body.classList.add("panel-open");
    panel.dataset.column = cid;
    panel.dataset.row = rid;
    if (active) active.classList.remove("active");
    active = td || null;
    if (active) {
      active.classList.add("active");
      active.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
    panel.focus({ preventScroll: true });
    var hash = "#cell=" + encodeURIComponent(cid) + "/" + encodeURIComponent(rid);
    if (location.hash !== hash) history.replaceState(null, "", hash);
  }
  function closePanel() {
    panel.hidden = true;
    document.body.classList.remove("panel-open");
    if (active) { active.classList.remove("active"); active.querySelector("button").focus(); }
    active = null;
    if (location.hash.indexOf("#cell=") === 0) history.replaceState(null, "", location.pathname + location.search);
  }

  /* ------------------------------------------------------------------ wiring */
  document.addEventListener("click", function (ev) {
    var target = ev.target;
    if (!(target instanceof Element)) return;
    if (target.closest("#evidence button.close")) { closePanel(); return; }
    var td = target.closest("td.c");
    if (td && td.dataset.verdict) { openCell(td.dataset.column, td.dataset.row, td); return; }
    var q = target.closest("td.q.hit");
    if (q) { ctl("quirk").value = q.dataset.quirk; applyFilters(); }
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && !panel.hidden) closePanel();
  });
  ["provider", "scenario", "verdict", "quirk"].forEach(function (n) {
    ctl(n).addEventListener("change", applyFilters);
  });
  document.getElementById("filters").addEventListener("reset", function () {
    setTimeout(applyFilters, 0);
  });
  applyFilters();
  if (location.hash.indexOf("#cell=") === 0) {
    var parts = location.hash.slice(6).split("/");
    if (parts.length === 2) {
      var cid = decodeURIComponent(parts[0]), rid = decodeURIComponent(parts[1]);
      var sel = 'td.c[data-column="' + CSS.escape(cid) + '"][data-row="' + CSS.escape(rid) + '"]';
      openCell(cid, rid, document.querySelector(sel));
    }
  }
})();
