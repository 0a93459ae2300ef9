/* tinyflow board: polls /api/runs and draws one chart per scalar with a curve per run. Names from the
 * logs are only ever set with textContent (never parsed as markup). */
(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
  var W = 380, H = 210, PAD = {l: 66, r: 10, t: 8, b: 26};
  var hidden = new Set(), lastText = null, data = null, polls = 0;

  function add(parent, tag, content, attrs) {
    var e = document.createElement(tag);
    if (content !== undefined && content !== null) e.textContent = content;
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    parent.appendChild(e);
    return e;
  }
  function svg(parent, tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    parent.appendChild(e);
    return e;
  }
  function value(v) {        // "NaN" / "Infinity" / "-Infinity" arrive as strings
    return typeof v === "number" ? v : v === "Infinity" ? Infinity : v === "-Infinity" ? -Infinity : NaN;
  }
  function fmt(x) {
    if (!isFinite(x)) return String(x);
    if (x !== 0 && (Math.abs(x) >= 1e5 || Math.abs(x) < 1e-3)) return x.toExponential(2);
    return String(Number(x.toPrecision(4)));
  }
  function min(a, b) { return a < b ? a : b; }
  function max(a, b) { return a > b ? a : b; }
  function colorOf(index) { return COLORS[index % COLORS.length]; }

  function tags(runs) {      // loss first, then the rest: validation next to what it validates
    var all = new Set();
    runs.forEach(function (r) { Object.keys(r.scalars).forEach(function (t) { all.add(t); }); });
    var order = {loss: 0, val_loss: 1, lr: 90, epoch_time: 91};
    return Array.from(all).sort(function (a, b) {
      var ka = a in order ? order[a] : 10, kb = b in order ? order[b] : 10;
      return ka - kb || a.replace(/^val_/, "").localeCompare(b.replace(/^val_/, "")) || a.localeCompare(b);
    });
  }

  function drawRuns(runs) {
    var box = document.getElementById("runs");
    box.textContent = "";
    if (!runs.length) { add(box, "span", "no runs yet: Model.fit(..., log_dir=\"" + data.logdir + "/NAME\") writes one", {"class": "empty"}); return; }
    runs.forEach(function (run, index) {
      var item = add(box, "label", null, {"class": "run", "data-run": run.name});
      var check = add(item, "input", null, {type: "checkbox"});
      check.checked = !hidden.has(run.name);
      check.addEventListener("change", function () { if (check.checked) hidden.delete(run.name); else hidden.add(run.name); drawCharts(runs); });
      add(item, "span", null, {"class": "swatch", style: "background:" + colorOf(index)});
      add(item, "span", run.name, {"class": "name"});
      var epochs = run.scalars.loss ? run.scalars.loss.length : 0;
      add(item, "span", "(" + epochs + " epochs)");
      if (run.skipped) add(item, "span", run.skipped + " unreadable line(s) skipped", {"class": "warn"});
      if (run.graph) {
        var button = add(item, "button", "graph", {"class": "graph-button"});
        button.addEventListener("click", function (ev) { ev.preventDefault(); showGraph(run.name); });
      }
    });
  }

  function drawCharts(runs) {
    var box = document.getElementById("charts"), logscale = document.getElementById("logscale").checked;
    box.textContent = "";
    tags(runs).forEach(function (tag) {
      var card = add(box, "div", null, {"class": "chart", "data-tag": tag});
      add(card, "h3", tag);
      var series = [], notes = [];
      runs.forEach(function (run, index) {
        if (hidden.has(run.name) || !run.scalars[tag]) return;
        var points = run.scalars[tag].map(function (p) { return [p[0], value(p[1])]; });
        points.forEach(function (p) { if (!isFinite(p[1])) notes.push(run.name + ": " + String(p[1]) + " at epoch " + p[0]); });
        var shown = points.filter(function (p) { return isFinite(p[1]) && (!logscale || p[1] > 0); });
        series.push({run: run.name, color: colorOf(index), points: shown, total: points.length});
      });
      chart(card, series, logscale);
      notes.slice(0, 3).forEach(function (n) { add(card, "div", n, {"class": "note"}); });
      if (notes.length > 3) add(card, "div", (notes.length - 3) + " more non-finite value(s)", {"class": "note"});
    });
  }

  function chart(card, series, logscale) {
    var plot = svg(card, "svg", {width: W, height: H, "class": "plot"});
    var xs = [], ys = [];
    series.forEach(function (s) { s.points.forEach(function (p) { xs.push(p[0]); ys.push(logscale ? Math.log10(p[1]) : p[1]); }); });
    var x0 = xs.length ? xs.reduce(min) : 1, x1 = xs.length ? xs.reduce(max) : 1;
    var y0 = ys.length ? ys.reduce(min) : 0, y1 = ys.length ? ys.reduce(max) : 1;
    if (y0 === y1) { var pad = Math.abs(y0) * 0.1 || 0.5; y0 -= pad; y1 += pad; }  // a flat curve in the middle
    if (x0 === x1) { x1 = x0 + 1; }
    // halves: a span like 1e308 - (-1e308) overflows; half of each end never does
    var yScale = function (v) { return PAD.t + (H - PAD.t - PAD.b) * ((y1 / 2 - v / 2) / (y1 / 2 - y0 / 2)); };
    var xScale = function (v) { return PAD.l + (W - PAD.l - PAD.r) * ((v - x0) / (x1 - x0)); };
    [0, 0.5, 1].forEach(function (t) {
      var v = y0 / 2 + (y1 / 2 - y0 / 2) * t; v = v * 2;
      var y = yScale(v);
      svg(plot, "line", {x1: PAD.l, x2: W - PAD.r, y1: y, y2: y, "class": "grid"});
      var label = svg(plot, "text", {x: PAD.l - 4, y: y + 3, "text-anchor": "end"});
      label.textContent = logscale ? "1e" + fmt(v) : fmt(v);
    });
    svg(plot, "line", {x1: PAD.l, x2: PAD.l, y1: PAD.t, y2: H - PAD.b, "class": "axis"});
    svg(plot, "line", {x1: PAD.l, x2: W - PAD.r, y1: H - PAD.b, y2: H - PAD.b, "class": "axis"});
    [x0, x1].forEach(function (v, k) {
      var label = svg(plot, "text", {x: xScale(v), y: H - PAD.b + 14, "text-anchor": k ? "end" : "start"});
      label.textContent = (k ? "epoch " : "") + v;
    });
    series.forEach(function (s) {
      var pts = s.points.map(function (p) {
        return xScale(p[0]).toFixed(1) + "," + yScale(logscale ? Math.log10(p[1]) : p[1]).toFixed(1);
      });
      var line = svg(plot, "polyline", {points: pts.join(" "), stroke: s.color, "class": "curve",
                                        "data-run": s.run, "data-points": s.points.length});
      var title = document.createElementNS(SVGNS, "title");
      var last = s.points.length ? s.points[s.points.length - 1] : null;
      title.textContent = s.run + (last ? ": " + fmt(last[1]) + " at epoch " + last[0] : "");
      line.appendChild(title);
      if (s.points.length === 1) svg(plot, "circle", {cx: pts[0].split(",")[0], cy: pts[0].split(",")[1], r: 3, fill: s.color});
    });
  }

  function showGraph(name) {
    var view = document.getElementById("graph-view");
    view.hidden = false;
    document.getElementById("graph-title").textContent = "graph of run " + name + " (the values of the first batch)";
    document.getElementById("graph-frame").setAttribute("src", "/graph?run=" + encodeURIComponent(name));
    view.scrollIntoView();
  }

  function poll() {
    if (!document.getElementById("live").checked && data) { setTimeout(poll, 1000); return; }
    fetch("/api/runs", {cache: "no-store"}).then(function (r) { return r.text(); }).then(function (text) {
      polls += 1;
      if (text !== lastText) {
        lastText = text;
        data = JSON.parse(text);
        document.getElementById("logdir").textContent = data.logdir;
        drawRuns(data.runs);
        drawCharts(data.runs);
      }
      document.getElementById("status").textContent = data.runs.length + " run(s), checked " + new Date().toLocaleTimeString();
      document.body.setAttribute("data-polls", polls);
    }).catch(function (err) {
      document.getElementById("status").textContent = "board not reachable (" + err + "); retrying";
    }).then(function () { setTimeout(poll, 1000); });
  }
  document.getElementById("logscale").addEventListener("change", function () { if (data) drawCharts(data.runs); });
  poll();
})();
