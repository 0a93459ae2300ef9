"""The explorer's HTML: static/explorer.html with its data, dagre (the layout library, MIT, vendored in static/), its
script and styles inline, nothing fetched (its Content-Security-Policy forbids network access: it cannot call home).
"""
import functools
import html
import json
import pathlib
import string

STATIC = pathlib.Path(__file__).with_name("static")
DAGRE_NOTICE = "/*! dagre 3.1.3 (npm @dagrejs/dagre, bundles @dagrejs/graphlib) | MIT License | " \
               "Copyright (c) 2012-2014 Chris Pettitt */\n"


@functools.lru_cache(maxsize=None)
def inline_text(path):
    """A script or style sheet to copy into a page (ValueError if it could close its element: a corrupt install)."""
    text = pathlib.Path(path).read_text(encoding="utf-8")
    if "</script" in text.lower() or "</style" in text.lower():
        raise ValueError(f"{path} cannot be inlined: it contains a closing tag")
    return text


def embed_json(data):
    """JSON for a <script type="application/json"> element: '<', '>' and '&' escaped, so that no name or
    value can close the element or start markup (JSON.parse reads the escapes back)."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def page_html(data, title):
    """The whole page: data, layout library, explorer script and styles."""
    return string.Template((STATIC / "explorer.html").read_text(encoding="utf-8")).substitute(
        title=html.escape(title), css=inline_text(STATIC / "explorer.css"), data=embed_json(data),
        dagre=DAGRE_NOTICE + inline_text(STATIC / "dagre.min.js"), script=inline_text(STATIC / "explorer.js"))
