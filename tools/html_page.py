"""What the HTML pages of tools/ share (the regression gate's, tools/gate_report.py,
and the results report's, tools/report.py): one stylesheet and the page
frame, so that both look alike and both stay self-contained (no script, no
external stylesheet, font or image)."""

import html

CSS = """
:root{--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--head:#f3f5f8;--accent:#3b6ea8;
--bad:#fbe3e3;--good:#e2f3e4;--warn:#fdf3d9;--none:#eeeeee}
body{font:13px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
color:var(--fg);margin:1.5em auto;padding:0 1.5em;max-width:1400px}
h1{font-size:20px;margin:0 0 .2em}
h2{font-size:16px;margin:1.8em 0 .5em;padding-bottom:.2em;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:1.3em 0 .4em}
p{margin:.4em 0;max-width:110ch}
table{border-collapse:collapse;margin:.3em 0 1em}
td,th{border:1px solid var(--line);padding:2px 7px;text-align:left;vertical-align:middle;
white-space:nowrap}
th{background:var(--head);font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.bad,td.bad{background:var(--bad)}tr.good,td.good{background:var(--good)}
tr.warn,td.warn{background:var(--warn)}tr.none,td.none{background:var(--none)}
.muted{color:var(--muted)}
code,pre{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,monospace;font-size:12px}
pre{background:var(--head);padding:.5em .8em;overflow-x:auto}
"""


def page(title, body, extra_css=""):
    """A whole HTML5 document: title (plain text, escaped here) and body
    (HTML, already escaped by the caller)."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)}</title><style>{CSS}{extra_css}</style></head>"
            f"<body>\n{body}\n</body></html>\n")
