"""`axon bench --report FILE.html`: one self-contained page (inline CSS and SVG, no script, no links) with the
bench table, the versions, and three plots: latency distribution, throughput per backend, compile-time breakdown."""

from __future__ import annotations

import html
import math

from torch_axon.cli.common import size

COLORS = {"axon-eager": "#2b6cb0", "axon-compiled": "#805ad5", "cpu-eager": "#dd6b20", "cpu-inductor": "#38a169"}
W, LEFT, RIGHT = 760, 130, 30  # plot width and margins in SVG units


def _e(x) -> str:
    return html.escape(str(x), quote=True)


class _Axis:
    """Value -> x position; logarithmic when the values span more than 20x (axon and CPU often differ that much)."""

    def __init__(self, lo: float, hi: float, log: bool | None = None):
        lo, hi = max(lo, 1e-9), max(hi, 1e-9)
        self.log = (hi / lo > 20) if log is None else log
        if self.log:
            self.lo, self.hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
        else:
            self.lo, self.hi = 0.0, hi * 1.1 if hi > 0 else 1.0

    def x(self, v: float) -> float:
        span = W - LEFT - RIGHT
        if self.log:
            v = max(v, self.lo)
            return LEFT + span * (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        return LEFT + span * (v - self.lo) / (self.hi - self.lo)

    def ticks(self) -> list[float]:
        if self.log:
            return [10 ** k for k in range(round(math.log10(self.lo)), round(math.log10(self.hi)) + 1)]
        step = 10 ** math.floor(math.log10(self.hi / 5)) if self.hi > 0 else 1
        for m in (1, 2, 5, 10):
            if self.hi / (step * m) <= 6:
                step *= m
                break
        return [i * step for i in range(int(self.hi / step) + 1)]


def _fmt(v: float) -> str:
    return f"{v:.3g}" if v < 1000 else f"{v:,.0f}"


def _frame(axis: _Axis, height: int, title: str, unit: str) -> list[str]:
    out = [f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {height}" width="{W}" '
           f'height="{height}" role="img" aria-label="{_e(title)}">',
           f'<text x="{LEFT}" y="16" class="title">{_e(title)}</text>']
    for t in axis.ticks():
        x = axis.x(t)
        out.append(f'<line x1="{x:.1f}" y1="28" x2="{x:.1f}" y2="{height - 26}" class="grid"/>')
        out.append(f'<text x="{x:.1f}" y="{height - 10}" class="tick" text-anchor="middle">{_e(_fmt(t))}</text>')
    out.append(f'<text x="{W - RIGHT}" y="16" class="tick" text-anchor="end">'
               f'{_e(unit)}{" (log scale)" if axis.log else ""}</text>')
    return out


def _value_label(x: float, y: float, text: str) -> str:
    """A bar's value after its end, or inside it (white, right-aligned) when it would run off the plot."""
    if x + 7 * len(text) > W:
        return f'<text x="{x - 4:.1f}" y="{y}" class="value" text-anchor="end" style="fill:#fff">{_e(text)}</text>'
    return f'<text x="{x + 4:.1f}" y="{y}" class="value">{_e(text)}</text>'


def latency_svg(backends: list[dict]) -> str:
    ok = [b for b in backends if b["status"] == "ok" and b.get("samples_ms")]
    if not ok:
        return '<p class="note">No backend produced latency samples.</p>'
    values = [v for b in ok for v in b["samples_ms"]]
    axis = _Axis(min(values), max(values))
    row_h = 44
    height = 40 + row_h * len(ok) + 30
    out = _frame(axis, height, "Latency per step: every timed step, with p50 / p90 / p99", "ms")
    for i, b in enumerate(ok):
        y = 40 + i * row_h + row_h / 2
        color = COLORS.get(b["name"], "#444")
        out.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end" class="label">{_e(b["name"])}</text>')
        n = len(b["samples_ms"])
        for j, v in enumerate(b["samples_ms"]):  # a deterministic jitter spreads equal values vertically
            jy = y + ((j * 7919) % 17 - 8) * 1.1
            out.append(f'<circle cx="{axis.x(v):.1f}" cy="{jy:.1f}" r="2.6" fill="{color}" fill-opacity="0.55">'
                       f'<title>step {j + 1}/{n}: {v:.3f} ms</title></circle>')
        for q, dash in (("p50", ""), ("p90", ' stroke-dasharray="4 2"'), ("p99", ' stroke-dasharray="1 2"')):
            x = axis.x(b["latency_ms"][q])
            out.append(f'<line x1="{x:.1f}" y1="{y - 15:.1f}" x2="{x:.1f}" y2="{y + 15:.1f}" stroke="#111" '
                       f'stroke-width="1.5"{dash}><title>{q} {b["latency_ms"][q]:.3f} ms</title></line>')
    out.append("</svg>")
    return "\n".join(out)


def throughput_svg(backends: list[dict], tokens: bool) -> str:
    key = "tokens_per_s" if tokens else "samples_per_s"
    unit = "tokens/s" if tokens else "samples/s"
    ok = [(b["name"], b["throughput"][key] or b["throughput"]["calls_per_s"]) for b in backends if b["status"] == "ok"]
    if not ok:
        return '<p class="note">No backend produced a throughput.</p>'
    axis = _Axis(min(v for _, v in ok), max(v for _, v in ok))
    row_h = 30
    height = 40 + row_h * len(ok) + 30
    out = _frame(axis, height, f"Throughput per backend ({unit}, from the mean step time)", unit)
    for i, (name, v) in enumerate(ok):
        y = 40 + i * row_h
        x0 = axis.x(axis.lo)
        out.append(f'<text x="{LEFT - 8}" y="{y + 19}" text-anchor="end" class="label">{_e(name)}</text>')
        out.append(f'<rect x="{x0:.1f}" y="{y + 5}" width="{max(1.0, axis.x(v) - x0):.1f}" height="{row_h - 10}" '
                   f'fill="{COLORS.get(name, "#444")}"><title>{_e(name)}: {v:,.1f} {unit}</title></rect>')
        out.append(_value_label(axis.x(v), y + 19, _fmt(v)))
    out.append("</svg>")
    return "\n".join(out)


def compile_svg(backends: list[dict]) -> str:
    parts = []  # (backend, what, ms)
    for b in backends:
        if b["status"] == "ok" and b.get("compiler"):
            parts.append((b["name"], "cold compile", b.get("cold_compile_ms")))
            parts.append((b["name"], "warm-cache compile", b.get("warm_compile_ms")))
            parts.append((b["name"], "steady step (p50)", b["latency_ms"]["p50"]))
    parts = [p for p in parts if p[2] is not None]
    if not parts:
        reasons = "; ".join(f"{b['name']}: {b.get('reason') or b.get('error') or b['status']}" for b in backends
                            if b.get("compiler"))
        return f'<p class="note">No compiled backend ran{": " + _e(reasons) if reasons else ""}.</p>'
    axis = _Axis(min(max(v, 1e-3) for *_, v in parts), max(v for *_, v in parts))
    row_h = 24
    height = 40 + row_h * len(parts) + 30
    out = _frame(axis, height, "Compile time: first call minus steady step, empty vs warm cache directory", "ms")
    shade = {"cold compile": 1.0, "warm-cache compile": 0.6, "steady step (p50)": 0.3}
    for i, (name, what, v) in enumerate(parts):
        y = 40 + i * row_h
        x0 = axis.x(axis.lo)
        out.append(f'<text x="{LEFT - 8}" y="{y + 16}" text-anchor="end" class="label">{_e(name)}</text>')
        out.append(f'<rect x="{x0:.1f}" y="{y + 4}" width="{max(1.0, axis.x(max(v, axis.lo)) - x0):.1f}" '
                   f'height="{row_h - 8}" fill="{COLORS.get(name, "#444")}" fill-opacity="{shade[what]}">'
                   f'<title>{_e(name)} {what}: {v:.1f} ms</title></rect>')
        out.append(_value_label(axis.x(max(v, axis.lo)), y + 16, f"{what} {_fmt(v)} ms"))
    out.append("</svg>")
    return "\n".join(out)


def _table(r: dict) -> str:
    unit = "tokens/s" if r["tokens_per_call"] else "samples/s"
    head = ["backend", "status", "cold compile ms", "warm compile ms", "p50 ms", "p90 ms", "p99 ms", unit,
            "peak device memory", "host RSS", "errors", "$ / 1000 tasks"]
    rows = []
    for b in r["backends"]:
        if b["status"] != "ok":
            rows.append(f'<tr><td>{_e(b["name"])}</td><td colspan="{len(head) - 1}">{_e(b["status"])}: '
                        f'{_e(b.get("reason") or b.get("error") or "")}</td></tr>')
            continue
        lat, tp = b["latency_ms"], b["throughput"]
        f = lambda v: "-" if v is None else f"{v:.3f}" if v < 1 else f"{v:.2f}"  # noqa: E731
        cost = b.get("cost_per_1000_tasks")
        cells = [b["name"], "ok", f(b.get("cold_compile_ms")), f(b.get("warm_compile_ms")), f(lat["p50"]),
                 f(lat["p90"]), f(lat["p99"]), _fmt(tp["tokens_per_s"] if r["tokens_per_call"] else
                                                    tp["samples_per_s"] or tp["calls_per_s"]),
                 size(b.get("peak_device_memory")), size(b.get("host_rss")), b.get("errors", 0),
                 "-" if cost is None else f"${cost:.6f}"]
        rows.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    return ("<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>\n" + "\n".join(rows)
            + "</table>")


CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:60em;color:#1a202c}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:2em}table{border-collapse:collapse;font-size:13px}
td,th{border:1px solid #cbd5e0;padding:3px 7px;text-align:right}td:first-child,th:first-child{text-align:left}
th{background:#edf2f7}.plot text{font:12px system-ui,sans-serif;fill:#2d3748}.plot .title{font-weight:600}
.plot .grid{stroke:#e2e8f0}.plot .tick{fill:#718096;font-size:11px}.note{color:#718096}
code{background:#edf2f7;padding:0 3px}"""


def render(r: dict) -> str:
    workload = "train step (forward, backward, SGD)" if r["train"] else "inference (no_grad)"
    versions = " ".join(f"{k}=={v}" for k, v in r["versions"].items() if k != "torch_axon_commit")
    if r["versions"].get("torch_axon_commit"):
        versions += f" (torch-axon commit {r['versions']['torch_axon_commit']})"
    body = [
        f"<h1>axon bench {_e(r['model'])}</h1>",
        f"<p>{_e(r['dtype'])}, batch {_e(r['batch'])}, {_e(workload)}, {r['steps']} timed steps after "
        f"{r['warmup']} warm-up, {r['threads']} threads, started {_e(r['started'])} (load average "
        f"{r['load_average']:.1f}).<br>Versions: <code>{_e(versions)}</code>"
        + (f"<br>Price: ${r['price_per_hour']:g}/hour; a task is one sample of the batch."
           if r["price_per_hour"] is not None else "") + "</p>",
        "<h2>Results</h2>", _table(r),
        "<h2>Latency distribution</h2>", latency_svg(r["backends"]),
        "<h2>Throughput</h2>", throughput_svg(r["backends"], bool(r["tokens_per_call"])),
        "<h2>Compile time</h2>", compile_svg(r["backends"]),
        '<p class="note">Each backend ran in a fresh process with an empty compile cache directory (cold); compiled '
        "backends ran a second process on the same directory (warm). Compile time is that process's first call "
        "minus the steady p50.</p>",
    ]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>axon bench {_e(r['model'])}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
