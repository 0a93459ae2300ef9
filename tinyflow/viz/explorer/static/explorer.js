/* tinyflow explorer: draws the graph in the page's JSON data, shows a clicked node, steps through the
 * forward pass and the backprop walk. Text from the data is only ever set with textContent (never parsed
 * as markup), so names and values cannot inject anything. */
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("tinyflow-data").textContent);
  var NODES = DATA.nodes, GROUPS = DATA.groups || {};
  var SVGNS = "http://www.w3.org/2000/svg";
  var DAGRE_LIMIT = 1200;     // more visible boxes than this: a fast layered layout instead of dagre's
  var COLLAPSE_ABOVE = 150;   // graphs with more nodes start with every scope closed
  var byName = new Map();
  NODES.forEach(function (n, i) { byName.set(n.name, i); });
  var consumers = NODES.map(function () { return []; });
  NODES.forEach(function (n, i) { n.inputs.forEach(function (j) { if (consumers[j].indexOf(i) < 0) consumers[j].push(i); }); });

  function chainOf(scope) {   // "a/b/c" -> ["a", "a/b", "a/b/c"]
    var out = [], path = "";
    if (!scope) return out;
    scope.split("/").forEach(function (part) { path = path ? path + "/" + part : part; out.push(path); });
    return out;
  }
  var chains = NODES.map(function (n) { return chainOf(n.scope); });
  var members = {};           // group -> number of nodes inside it (at any depth)
  chains.forEach(function (c) { c.forEach(function (g) { members[g] = (members[g] || 0) + 1; }); });
  Object.keys(members).forEach(function (g) { if (!GROUPS[g]) GROUPS[g] = {label: g.split("/").pop(), kind: "scope"}; });

  var collapsed = new Set(NODES.length > COLLAPSE_ABOVE ? Object.keys(members) : []);
  var selected = -1, layoutInfo = null, view = {x: 0, y: 0, k: 1};
  var svg = document.getElementById("graph"), viewport = document.getElementById("viewport");
  var panel = document.getElementById("panel"), statusEl = document.getElementById("step-status");
  var elements = new Map();   // node index -> its <g>

  // ------------------------------------------------------------------ what is visible
  function itemOf(i) {        // the box node i is drawn in: itself, or its outermost closed scope
    var c = chains[i];
    for (var k = 0; k < c.length; k++) if (collapsed.has(c[k])) return "g:" + c[k];
    return "n:" + i;
  }
  function parentScope(g) { var at = g.lastIndexOf("/"); return at < 0 ? "" : g.slice(0, at); }

  function visibleGraph() {
    var items = new Map(), clusters = new Set(), edges = new Map();
    NODES.forEach(function (n, i) {
      var id = itemOf(i);
      if (!items.has(id)) items.set(id, {id: id, first: i});
      var c = chains[i];
      for (var k = 0; k < c.length && !collapsed.has(c[k]); k++) clusters.add(c[k]);
    });
    NODES.forEach(function (n, i) {
      var to = itemOf(i);
      n.inputs.forEach(function (j) {
        var from = itemOf(j);
        if (from !== to) edges.set(from + "\u0000" + to, [from, to]);
      });
    });
    items.forEach(function (item) {
      if (item.id.charAt(0) === "n") {
        var c = chains[item.first];
        item.parent = c.length ? c[c.length - 1] : "";
      } else {
        item.parent = parentScope(item.id.slice(2));
      }
    });
    return {items: items, clusters: clusters, edges: Array.from(edges.values())};
  }

  // ------------------------------------------------------------------ box sizes and labels
  function labelLines(item) {
    if (item.id.charAt(0) === "g") {
      var g = item.id.slice(2);
      return [GROUPS[g].label, "(" + members[g] + " nodes)"];
    }
    var n = NODES[item.first], short = n.name.split("/").pop();
    if (n.kind === "constant" && n.value && "value" in n.value) return [short, "= " + fmt(n.value.value)];
    return short === n.op || short.indexOf(n.op + "_") === 0 ? [short] : [short, n.op];
  }
  function sizeOf(lines) {
    var chars = Math.max.apply(null, lines.map(function (l) { return l.length; }));
    return {width: Math.min(Math.max(chars * 6.6 + 18, 44), 260), height: 18 + 13 * lines.length};
  }

  // ------------------------------------------------------------------ layout
  function dagreLayout(vis) {
    var g = new dagre.graphlib.Graph({compound: true});
    g.setGraph({rankdir: "TB", nodesep: 18, ranksep: 34, marginx: 16, marginy: 26, align: "UL"});
    g.setDefaultEdgeLabel(function () { return {}; });
    vis.clusters.forEach(function (c) {
      g.setNode("c:" + c, {});
      var p = parentScope(c);
      if (p) g.setParent("c:" + c, "c:" + p);
    });
    vis.items.forEach(function (item) {
      var s = sizeOf(item.lines);
      g.setNode(item.id, {width: s.width, height: s.height});
      if (item.parent) g.setParent(item.id, "c:" + item.parent);
    });
    vis.edges.forEach(function (e) { g.setEdge(e[0], e[1]); });
    dagre.layout(g);
    var boxes = new Map(), clusterBoxes = new Map(), paths = [];
    vis.items.forEach(function (item) { boxes.set(item.id, g.node(item.id)); });
    vis.clusters.forEach(function (c) { clusterBoxes.set(c, g.node("c:" + c)); });
    vis.edges.forEach(function (e) { paths.push(g.edge(e[0], e[1]).points); });
    var graphBox = g.graph();
    return {boxes: boxes, clusters: clusterBoxes, paths: paths, width: graphBox.width, height: graphBox.height};
  }

  function layeredLayout(vis) {  // longest-path ranks, one barycenter sweep: linear time for huge views
    var ids = Array.from(vis.items.keys()).sort(function (a, b) {
      return vis.items.get(a).first - vis.items.get(b).first;
    });
    var preds = new Map(ids.map(function (id) { return [id, []]; }));
    vis.edges.forEach(function (e) { preds.get(e[1]).push(e[0]); });
    var rank = new Map(), rows = [];
    ids.forEach(function (id) {   // items come in data order, which is topological
      var r = 0;
      preds.get(id).forEach(function (p) { if (rank.has(p)) r = Math.max(r, rank.get(p) + 1); });
      rank.set(id, r);
      (rows[r] = rows[r] || []).push(id);
    });
    var boxes = new Map(), width = 0, y = 30, gap = 14;
    rows.forEach(function (row) {
      row.forEach(function (id) {
        var ps = preds.get(id).filter(function (p) { return boxes.has(p); });
        vis.items.get(id).order = ps.length ? ps.reduce(function (s, p) { return s + boxes.get(p).x; }, 0) / ps.length : 0;
      });
      row.sort(function (a, b) { return vis.items.get(a).order - vis.items.get(b).order; });
      var x = 20, tallest = 0;
      row.forEach(function (id) {
        var s = sizeOf(vis.items.get(id).lines);
        boxes.set(id, {x: x + s.width / 2, y: y + s.height / 2, width: s.width, height: s.height});
        x += s.width + gap;
        tallest = Math.max(tallest, s.height);
      });
      width = Math.max(width, x);
      y += tallest + 40;
    });
    var paths = vis.edges.map(function (e) {
      var a = boxes.get(e[0]), b = boxes.get(e[1]);
      return [{x: a.x, y: a.y + a.height / 2}, {x: b.x, y: b.y - b.height / 2}];
    });
    return {boxes: boxes, clusters: new Map(), paths: paths, width: width, height: y, fast: true};
  }

  // ------------------------------------------------------------------ drawing
  function el(name, attrs, parent) {
    var e = document.createElementNS(SVGNS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function text(parent, x, y, content, cls) {
    var t = el("text", {x: x, y: y, "text-anchor": "middle"}, parent);
    if (cls) t.setAttribute("class", cls);
    t.textContent = content;
    return t;
  }

  function render() {
    var started = performance.now();
    var vis = visibleGraph();
    vis.items.forEach(function (item) { item.lines = labelLines(item); });
    layoutInfo = vis.items.size > DAGRE_LIMIT ? layeredLayout(vis) : dagreLayout(vis);
    layoutInfo.vis = vis;
    viewport.textContent = "";
    elements.clear();
    var clusterLayer = el("g", {}, viewport), edgeLayer = el("g", {}, viewport), nodeLayer = el("g", {}, viewport);
    Array.from(layoutInfo.clusters.keys()).sort(function (a, b) { return a.length - b.length; }).forEach(function (c) {
      var b = layoutInfo.clusters.get(c);
      if (!b || !isFinite(b.x)) return;
      var group = el("g", {"class": "cluster" + (GROUPS[c].kind === "fused" ? " fused" : ""), "data-scope": c}, clusterLayer);
      el("rect", {x: b.x - b.width / 2, y: b.y - b.height / 2 - 16, width: b.width, height: b.height + 16, rx: 6}, group);
      var label = el("text", {x: b.x - b.width / 2 + 6, y: b.y - b.height / 2 - 4, "class": "label"}, group);
      label.textContent = "\u25BE " + GROUPS[c].label;
      label.addEventListener("click", function (ev) { ev.stopPropagation(); collapse(c); });
    });
    layoutInfo.paths.forEach(function (points) {
      var d = points.map(function (p, k) { return (k ? "L" : "M") + p.x.toFixed(1) + "," + p.y.toFixed(1); }).join("");
      el("path", {d: d, "class": "edge"}, edgeLayer);
    });
    vis.items.forEach(function (item) {
      var b = layoutInfo.boxes.get(item.id);
      if (item.id.charAt(0) === "g") drawScope(nodeLayer, item, b); else drawNode(nodeLayer, item, b);
    });
    document.getElementById("notes").hidden = false;
    refresh();
    layoutInfo.ms = performance.now() - started;
  }

  function drawNode(layer, item, b) {
    var i = item.first, n = NODES[i];
    var g = el("g", {"class": "node kind-" + n.kind, "data-name": n.name, "data-index": i,
                     transform: "translate(" + (b.x - b.width / 2) + "," + (b.y - b.height / 2) + ")"}, layer);
    if (n.kind === "placeholder") el("ellipse", {cx: b.width / 2, cy: b.height / 2, rx: b.width / 2, ry: b.height / 2}, g);
    else el("rect", {width: b.width, height: b.height, rx: 4}, g);
    item.lines.forEach(function (line, k) { text(g, b.width / 2, 20 + 13 * k, line, k ? "sub" : null); });
    text(g, b.width / 2, b.height + 11, "", "badge");
    var title = el("title", {}, g);
    title.textContent = n.name + " (" + n.op + ")";
    g.addEventListener("click", function (ev) { ev.stopPropagation(); select(i); });
    elements.set(i, g);
  }

  function drawScope(layer, item, b) {
    var scope = item.id.slice(2);
    var g = el("g", {"class": "scope collapsed", "data-scope": scope,
                     transform: "translate(" + (b.x - b.width / 2) + "," + (b.y - b.height / 2) + ")"}, layer);
    el("rect", {x: 4, y: -4, width: b.width, height: b.height, rx: 5, "class": "back"}, g);
    el("rect", {width: b.width, height: b.height, rx: 5}, g);
    item.lines.forEach(function (line, k) { text(g, b.width / 2, 20 + 13 * k, k ? line : "\u25B8 " + line); });
    var title = el("title", {}, g);
    title.textContent = "name scope " + scope + ": click to open";
    g.addEventListener("click", function (ev) { ev.stopPropagation(); expand(scope); });
  }

  // ------------------------------------------------------------------ scopes, pan and zoom
  function expand(scope) {
    chainOf(scope).forEach(function (g) { collapsed.delete(g); });
    Object.keys(members).forEach(function (g) {  // its inner scopes stay closed in big graphs
      if (g.indexOf(scope + "/") === 0 && members[g] > COLLAPSE_ABOVE) collapsed.add(g);
    });
    render();
    centerOn(scope);
  }
  function collapse(scope) { collapsed.add(scope); render(); centerOn(scope); }
  function setAll(closed) {
    collapsed = new Set(closed ? Object.keys(members) : []);
    render();
    fit(true);
  }
  function reveal(i) {        // open the scopes hiding node i
    var hidden = chains[i].filter(function (g) { return collapsed.has(g); });
    if (!hidden.length) return false;
    hidden.forEach(function (g) { collapsed.delete(g); });
    render();
    return true;
  }
  function applyView() { viewport.setAttribute("transform", "translate(" + view.x + "," + view.y + ") scale(" + view.k + ")"); }
  function fit(readable) {   // the whole graph in the window; `readable`: never so small that labels blur (top first)
    var w = svg.clientWidth || 800, h = svg.clientHeight || 600;
    var k = Math.min(w / (layoutInfo.width + 20), h / (layoutInfo.height + 20), 1.5);
    k = Math.max(k, readable === true ? 0.6 : 0.03);
    view = {k: k, x: (w - layoutInfo.width * k) / 2, y: Math.max(10, (h - layoutInfo.height * k) / 2)};
    applyView();
  }
  function centerAt(x, y) {
    var w = svg.clientWidth || 800, h = svg.clientHeight || 600;
    view.k = Math.max(view.k, 0.6);
    view.x = w / 2 - x * view.k;
    view.y = h / 2 - y * view.k;
    applyView();
  }
  function centerOn(scope) {  // a scope's box in the middle; a tall one with its title at the top
    var b = layoutInfo.clusters.get(scope) || layoutInfo.boxes.get("g:" + scope);
    if (!b) { fit(true); return; }
    centerAt(b.x, b.y);
    var h = svg.clientHeight || 600;
    if ((b.height + 40) * view.k > h) {
      view.y = 20 - (b.y - b.height / 2 - 20) * view.k;
      applyView();
    }
  }
  function centerOnNode(i) {
    var b = layoutInfo.boxes.get("n:" + i);
    if (!b) return;
    var w = svg.clientWidth || 800, h = svg.clientHeight || 600;
    var sx = b.x * view.k + view.x, sy = b.y * view.k + view.y;
    if (sx < 40 || sy < 40 || sx > w - 40 || sy > h - 40) centerAt(b.x, b.y);
  }
  svg.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var rect = svg.getBoundingClientRect(), mx = ev.clientX - rect.left, my = ev.clientY - rect.top;
    var factor = Math.exp(-ev.deltaY * 0.0015), k = Math.min(Math.max(view.k * factor, 0.03), 4);
    view.x = mx - (mx - view.x) * k / view.k;
    view.y = my - (my - view.y) * k / view.k;
    view.k = k;
    applyView();
  }, {passive: false});
  var drag = null, panned = false;  // a click that ends a pan keeps the selection
  svg.addEventListener("mousedown", function (ev) {
    drag = {x: ev.clientX - view.x, y: ev.clientY - view.y, startX: ev.clientX, startY: ev.clientY};
    panned = false;
    svg.classList.add("dragging");
  });
  window.addEventListener("mousemove", function (ev) {
    if (!drag) return;
    if (Math.abs(ev.clientX - drag.startX) + Math.abs(ev.clientY - drag.startY) > 3) panned = true;
    view.x = ev.clientX - drag.x; view.y = ev.clientY - drag.y; applyView();
  });
  window.addEventListener("mouseup", function () { drag = null; svg.classList.remove("dragging"); });

  // ------------------------------------------------------------------ numbers
  function fmt(x) {
    if (x === null || x === undefined) return "";
    if (typeof x === "string") return x;   // NaN, Infinity, -Infinity
    if (Number.isInteger(x) && Math.abs(x) < 1e15) return String(x);
    var parts = x.toPrecision(6).split("e"), mantissa = parts[0];
    if (mantissa.indexOf(".") >= 0) mantissa = mantissa.replace(/0+$/, "").replace(/\.$/, "");
    return parts.length > 1 ? mantissa + "e" + parts[1] : mantissa;
  }
  function shapeText(shape, unknown) {
    if (!shape) return "unknown";
    return "(" + shape.map(function (d) { return d === null ? unknown : String(d); }).join(", ") + (shape.length === 1 ? ",)" : ")");
  }

  // ------------------------------------------------------------------ the panel
  function add(parent, tag, content, attrs) {
    var e = document.createElement(tag);
    if (content !== undefined && content !== null) e.textContent = content;
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    parent.appendChild(e);
    return e;
  }
  function field(dl, label, value, key) {
    add(dl, "dt", label);
    return add(dl, "dd", value, {"data-field": key});
  }
  function nodeLinks(dd, indices) {
    if (!indices.length) { dd.textContent = "none"; return; }
    indices.slice(0, 40).forEach(function (j) {
      var a = add(dd, "span", NODES[j].name, {"class": "link"});
      a.addEventListener("click", function () { show(j); });
    });
    if (indices.length > 40) add(dd, "span", "... " + (indices.length - 40) + " more");
  }

  function statsSection(parent, title, s, key) {
    var section = add(parent, "section", null, {"data-section": key});
    add(section, "h3", title);
    if (!s) { add(section, "p", key === "grad" ? "no gradient (not on a path to the loss, or no walk)" :
                   "not computed (feed the placeholders it needs)", {"class": "hint"}); return section; }
    var table = add(section, "table"), rows = [["shape", shapeText(s.shape, "?"), "shape"], ["dtype", s.dtype, "dtype"]];
    if ("value" in s) rows.push(["value", fmt(s.value), "value"]);
    ["mean", "std", "min", "max"].forEach(function (k) { if (k in s) rows.push([k, fmt(s[k]), k]); });
    if (s.nan) rows.push(["NaN", String(s.nan), "nan"]);
    if (s.inf) rows.push(["inf", String(s.inf), "inf"]);
    rows.forEach(function (r) {
      var tr = add(table, "tr");
      add(tr, "td", r[0]);
      var td = add(tr, "td", r[1], {"data-field": key + "." + r[2]});
      if (r[2] in s) td.setAttribute("data-raw", String(s[r[2]]));
      if (r[2] === "nan" || r[2] === "inf") td.className = "bad";
    });
    if (s.heatmap) heatmap(section, s.heatmap, key);
    return section;
  }

  function heatmap(parent, h, key) {
    var cells = h.cells, rows = cells.length, cols = cells[0].length;
    var size = Math.max(3, Math.min(Math.floor(300 / cols), Math.floor(200 / rows), 24));
    var lo = Infinity, hi = -Infinity;
    cells.forEach(function (row) { row.forEach(function (v) { if (typeof v === "number") { lo = Math.min(lo, v); hi = Math.max(hi, v); } }); });
    var box = el("svg", {width: cols * size, height: rows * size, "class": "heatmap", "data-field": key + ".heatmap",
                         "data-rows": h.rows, "data-cols": h.cols});
    cells.forEach(function (row, r) {
      row.forEach(function (v, c) {
        var cell = el("rect", {x: c * size, y: r * size, width: size, height: size, fill: color(v, lo, hi), "data-v": String(v)}, box);
        el("title", {}, cell).textContent = "row " + r + ", column " + c + ": " + fmt(v);
      });
    });
    parent.appendChild(box);
    if (h.rows > rows || h.cols > cols) {
      add(parent, "p", "heat map of " + h.rows + "\u00d7" + h.cols + ": each cell is the mean of a block", {"class": "hint"});
    }
  }
  function color(v, lo, hi) {
    if (typeof v !== "number") return "#ff00ff";       // NaN or infinite: impossible to miss
    if (lo < 0 && hi > 0) {                             // diverging: blue below zero, red above
      var t = v < 0 ? v / lo : v / hi, a = Math.round(255 * (1 - Math.min(Math.abs(t), 1)));
      return v < 0 ? "rgb(" + a + "," + a + ",255)" : "rgb(255," + a + "," + a + ")";
    }
    var span = hi - lo, u = span > 0 && isFinite(span) ? (v - lo) / span : 0.5, b = Math.round(255 * (1 - u));
    return "rgb(" + b + "," + Math.round(120 + 135 * (1 - u)) + ",255)";
  }

  function show(i) { reveal(i); select(i); centerOnNode(i); }

  function select(i) {
    selected = i;
    elements.forEach(function (g, j) { g.classList.toggle("selected", j === i); });
    panel.textContent = "";
    if (i < 0) return;
    var n = NODES[i];
    add(panel, "h2", n.name, {"data-field": "name"});
    var info = stepInfo(n.name);
    if (info) panel.appendChild(info);
    var dl = add(panel, "dl");
    field(dl, "op", n.op, "op");
    field(dl, "kind", n.kind, "kind");
    field(dl, "created at", n.site || "unknown", "site");
    field(dl, "shape", shapeText(n.shape, "None"), "shape");
    field(dl, "dtype", n.dtype || "none", "dtype");
    nodeLinks(field(dl, "inputs", null, "inputs"), n.inputs);
    nodeLinks(field(dl, "consumers", null, "consumers"), consumers[i]);
    statsSection(panel, "value", n.value, "value");
    statsSection(panel, DATA.backprop ? "gradient of " + DATA.backprop.loss : "gradient", n.grad, "grad");
  }

  // ------------------------------------------------------------------ the step-through
  var forward = DATA.forward_order, walk = DATA.backprop || null;
  var backSteps = walk ? walk.steps : [];
  var step = -1, replayed = null;

  function freshReplay() {
    return {upTo: -1, pending: new Map(Object.entries(walk.pending)), received: new Map(), sums: new Map(),
            parts: new Map(), taken: new Set()};
  }
  function replay(j) {        // the walk's state after step j (applied incrementally when moving on)
    if (!replayed || replayed.upTo > j) replayed = freshReplay();
    for (var s = replayed.upTo + 1; s <= j; s++) {
      var st = backSteps[s];
      replayed.taken.add(st.node);
      st.delivered.forEach(function (d) {
        var target = d[0];
        if (replayed.pending.has(target)) replayed.pending.set(target, replayed.pending.get(target) - 1);
        replayed.received.set(target, (replayed.received.get(target) || 0) + 1);
        if (!replayed.parts.has(target)) replayed.parts.set(target, []);
        replayed.parts.get(target).push(d[1]);
        if (d[2]) replayed.sums.set(target, d[2]);
      });
    }
    replayed.upTo = j;
    return replayed;
  }
  function phase() {
    if (step < 0) return null;
    if (step < forward.length) return {name: "forward", index: step, node: forward[step]};
    return {name: "backprop", index: step - forward.length, node: backSteps[step - forward.length].node};
  }

  function go(k) {
    var last = forward.length + backSteps.length - 1;
    step = Math.max(-1, Math.min(k, last));
    var p = phase();
    if (p && byName.has(p.node)) {
      var i = byName.get(p.node);
      reveal(i);
      refresh();
      select(i);
      centerOnNode(i);
    } else {
      refresh();
      if (selected >= 0) select(selected);
    }
  }

  function stepInfo(name) {   // the panel's box for the node while stepping
    var p = phase();
    if (!p) return null;
    var box = document.createElement("div");
    box.className = "step-info";
    box.setAttribute("data-section", "step");
    if (p.name === "forward") {
      var at = forward.indexOf(name);
      add(box, "div", at < 0 ? "not computed in this run" : at < p.index ? "computed at forward step " + (at + 1) :
          at === p.index ? "computing now: forward step " + (p.index + 1) + " of " + forward.length : "not computed yet");
      return box;
    }
    var r = replay(p.index), current = backSteps[p.index];
    if (name === current.node) {
      add(box, "div", "backprop step " + (p.index + 1) + " of " + backSteps.length + ": taken from the queue, pending 0", {"data-field": "step.title"});
      if (current.received !== null) add(box, "div", "its gradient is the sum of " + current.received + " contribution(s)", {"data-field": "step.received"});
      if (current.queue) add(box, "div", "queue now: [" + current.queue.join(", ") + (current.queue_size > current.queue.length ? ", ..." : "") + "]", {"data-field": "step.queue"});
    } else if (r.taken.has(name)) {
      add(box, "div", "gradient complete (taken at step " + (backSteps.findIndex(function (s) { return s.node === name; }) + 1) + ")");
    } else if (walk.pending.hasOwnProperty(name)) {
      add(box, "div", "pending " + r.pending.get(name) + ": consumers that still owe a contribution", {"data-field": "step.pending"});
    } else {
      add(box, "div", "not on the walk's path");
    }
    if (walk.pending.hasOwnProperty(name) && (!r.taken.has(name) || name === current.node)) {
      var parts = r.parts.get(name) || [], sum = r.sums.get(name);
      if (name === walk.loss) add(box, "div", "seeded with ones (d loss / d loss)");
      if (parts.length) {
        add(box, "div", "received " + parts.length + ": " + parts.map(function (s) { return s ? summaryText(s) : "\u00b7"; }).join(" + "), {"data-field": "step.parts"});
        if (sum) add(box, "div", "summed so far: " + summaryText(sum), {"data-field": "step.sum", "data-raw": String(sum.mean)});
      }
    }
    return box;
  }
  function summaryText(s) {
    if ("value" in s) return fmt(s.value);
    return "mean " + fmt(s.mean) + " " + shapeText(s.shape, "?");
  }

  function refresh() {        // classes and badges for the current step (no new layout)
    var p = phase();
    document.body.classList.toggle("stepping", !!p);
    var r = p && p.name === "backprop" ? replay(p.index) : null;
    var done = p && p.name === "forward" ? new Set(forward.slice(0, p.index)) : null;
    elements.forEach(function (g, i) {
      var name = NODES[i].name, badge = g.querySelector(".badge"), cls = null, note = "";
      if (p && p.name === "forward") {
        cls = name === p.node ? "current" : done.has(name) ? "computed" : "off";
      } else if (r) {
        if (name === p.node) cls = "current";
        else if (r.taken.has(name)) { cls = "taken"; note = "\u2713 grad"; }
        else if (r.pending.has(name)) {
          cls = r.received.get(name) ? "partial" : "waiting";
          note = "pending " + r.pending.get(name);
        } else cls = "off";
      }
      ["current", "computed", "off", "taken", "partial", "waiting"].forEach(function (c) { g.classList.toggle(c, c === cls); });
      badge.textContent = note;
    });
    statusEl.setAttribute("data-phase", p ? p.name : "none");
    statusEl.setAttribute("data-index", p ? p.index : -1);
    statusEl.setAttribute("data-node", p ? p.node : "");
    if (!p) {
      statusEl.textContent = forward.length + backSteps.length ? "\u2192 steps through the forward pass (" + forward.length +
        " nodes)" + (backSteps.length ? " and the backprop walk (" + backSteps.length + " steps)" : "") : "";
    } else if (p.name === "forward") {
      statusEl.textContent = "forward " + (p.index + 1) + "/" + forward.length + ": " + p.node;
    } else {
      statusEl.textContent = "backprop " + (p.index + 1) + "/" + backSteps.length + ": " + p.node;
    }
  }

  // ------------------------------------------------------------------ controls
  document.getElementById("step-first").addEventListener("click", function () { go(0); });
  document.getElementById("step-prev").addEventListener("click", function () { go(step - 1); });
  document.getElementById("step-next").addEventListener("click", function () { go(step + 1); });
  document.getElementById("step-last").addEventListener("click", function () { go(forward.length + backSteps.length - 1); });
  document.getElementById("expand-all").addEventListener("click", function () { setAll(false); });
  document.getElementById("collapse-all").addEventListener("click", function () { setAll(true); });
  document.getElementById("fit").addEventListener("click", function () { fit(false); });
  document.addEventListener("keydown", function (ev) {
    if (ev.target && ev.target.tagName === "INPUT") return;
    var moves = {ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1};
    if (ev.key in moves) go(step + moves[ev.key]);
    else if (ev.key === "Home") go(0);
    else if (ev.key === "End") go(forward.length + backSteps.length - 1);
    else if (ev.key === "Escape") go(-1);
    else return;
    ev.preventDefault();
  });
  var search = document.getElementById("search"), names = document.getElementById("node-names");
  search.addEventListener("focus", function () {   // filled on first use: thousands of options cost time
    if (names.childElementCount) return;
    NODES.forEach(function (n) { var o = document.createElement("option"); o.value = n.name; names.appendChild(o); });
  });
  search.addEventListener("change", function () { if (byName.has(search.value)) show(byName.get(search.value)); });
  svg.addEventListener("click", function () { if (!panned) select(-1); });

  // ------------------------------------------------------------------ start
  var titleEl = document.getElementById("title");
  titleEl.textContent = (DATA.title || "graph") + " \u2014 " + NODES.length + " nodes (" + DATA.source + ")";
  (DATA.notes || []).forEach(function (note) { add(document.getElementById("notes"), "p", note); });
  render();
  fit(true);
  if (layoutInfo.fast) add(document.getElementById("notes"), "p", "fast layout: " + layoutInfo.vis.items.size +
    " boxes are open; close scopes for the full layout");
  window.tinyflowExplorer = {go: go, select: show, expand: expand, collapse: collapse,
    state: function () { var p = phase(); return {step: step, phase: p && p.name, node: p && p.node, selected: selected,
      collapsed: Array.from(collapsed), visible: layoutInfo.vis.items.size, layoutMs: layoutInfo.ms}; }};
  window.tinyflowRenderedAt = performance.now();
  document.body.setAttribute("data-ready", "1");
})();
