"""The explorer's HTML: one self-contained file, its data in a JSON script element, code and styles inline.

Nothing is fetched when the page opens: dagre (the layout library, MIT, vendored in static/) and
tinyflow's own script and styles are copied into the page, and the Content-Security-Policy forbids
any network access, so a page someone sends you cannot call home either.
"""
import functools
import html
import json
import pathlib

STATIC = pathlib.Path(__file__).with_name("static")
DAGRE_NOTICE = "/*! dagre 3.1.3 (npm @dagrejs/dagre, bundles @dagrejs/graphlib) | MIT License | " \
               "Copyright (c) 2012-2014 Chris Pettitt */\n"
CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
       "base-uri 'none'; form-action 'none'")


@functools.lru_cache(maxsize=None)
def _static(name):
    text = (STATIC / name).read_text(encoding="utf-8")
    if "</script" in text.lower() or "</style" in text.lower():
        raise ValueError(f"{name} cannot be inlined: it contains a closing tag")  # a corrupt install
    return text


def embed_json(data):
    """JSON for a <script type="application/json"> element: '<', '>' and '&' escaped, so that no name or
    value can close the element or start markup (JSON.parse reads the escapes back)."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def page_html(data, title):
    """The whole page: data, layout library, explorer script and styles."""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>{_static("explorer.css")}</style>
</head><body>
<header id="bar">
  <span id="title"></span>
  <span class="steps">
    <button id="step-first" title="first step (Home)">&#x25C0;&#x25C0;</button>
    <button id="step-prev" title="previous step (&#x2190;)">&#x25C0; prev</button>
    <button id="step-next" title="next step (&#x2192;)">next &#x25B6;</button>
    <button id="step-last" title="last step (End)">&#x25B6;&#x25B6;</button>
    <span id="step-status" data-phase="none" data-index="-1" data-node=""></span>
  </span>
  <input id="search" type="search" placeholder="find a node by name" list="node-names" autocomplete="off">
  <datalist id="node-names"></datalist>
  <button id="expand-all" title="expand every scope">expand all</button>
  <button id="collapse-all" title="collapse every scope">collapse all</button>
  <button id="fit" title="fit the graph to the window">fit</button>
</header>
<main>
  <div id="canvas"><svg id="graph" xmlns="http://www.w3.org/2000/svg"><defs>
    <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">
      <path d="M0,0 L10,5 L0,10 z" fill="#777"/></marker></defs><g id="viewport"></g></svg>
    <div id="notes"></div>
  </div>
  <aside id="panel"><p class="hint">Click a node for its op, shape, value and gradient; click a grey box to
  open a name scope, a cluster's title to close it. Step through the forward pass and the backprop walk with the
  buttons or the arrow keys.</p></aside>
</main>
<script type="application/json" id="tinyflow-data">{embed_json(data)}</script>
<script>{DAGRE_NOTICE}{_static("dagre.min.js")}</script>
<script>{_static("explorer.js")}</script>
</body></html>
"""
