"""Small inline SVG charts for the website: fast to make (the site builds in well under 5 s),
self-contained, and every label escaped."""

from __future__ import annotations

import math
from html import escape

W, H, PAD_L, PAD_R, PAD_T, PAD_B = 640, 320, 64, 32, 16, 44


def _scale(lo: float, hi: float, a: float, b: float, log: bool = False):
    if log:
        lo, hi = math.log10(lo), math.log10(hi)
    span = (hi - lo) or 1.0
    return lambda v: a + ((math.log10(v) if log else v) - lo) / span * (b - a)


def _axes(x_label: str, y_label: str, x_ticks: list[tuple[float, str]], y_ticks: list[tuple[float, str]]) -> list[str]:
    parts = [f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{H - PAD_B}" stroke="#444"/>',
             f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{H - PAD_B}" stroke="#444"/>']
    for x, text in x_ticks:
        parts.append(f'<text x="{x:.1f}" y="{H - PAD_B + 16}" font-size="11" text-anchor="middle">{escape(text)}</text>')
    for y, text in y_ticks:
        parts.append(f'<text x="{PAD_L - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{escape(text)}</text>')
    parts.append(f'<text x="{(PAD_L + W - PAD_R) / 2}" y="{H - 6}" font-size="12" text-anchor="middle">{escape(x_label)}</text>')
    parts.append(f'<text x="14" y="{(PAD_T + H - PAD_B) / 2}" font-size="12" text-anchor="middle" '
                 f'transform="rotate(-90 14 {(PAD_T + H - PAD_B) / 2})">{escape(y_label)}</text>')
    return parts


def _ticks(lo: float, hi: float, to_px, log: bool, fmt) -> list[tuple[float, str]]:
    if log:
        values = [10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
        values = [v for v in values if lo <= v <= hi] or [lo, hi]
    else:
        values = [lo + (hi - lo) * i / 4 for i in range(5)]
    return [(to_px(v), fmt(v)) for v in values]


def line_chart(xs: list[float], ys: list[float], threshold: float | None, x_label: str, y_label: str,
               title: str) -> str:
    """Accuracy against hours, with the threshold dashed."""
    lo_y = min(ys + ([threshold] if threshold is not None else []))
    hi_y = max(ys + ([threshold] if threshold is not None else []))
    hi_x = max(xs) or 1.0
    fx, fy = _scale(0, hi_x, PAD_L, W - PAD_R), _scale(lo_y, hi_y, H - PAD_B, PAD_T)
    points = " ".join(f"{fx(x):.1f},{fy(y):.1f}" for x, y in zip(xs, ys))
    parts = _axes(x_label, y_label, _ticks(0, hi_x, fx, False, lambda v: f"{v:.3g}"),
                  _ticks(lo_y, hi_y, fy, False, lambda v: f"{v:.3g}"))
    parts.append(f'<polyline fill="none" stroke="#4c72b0" stroke-width="2" points="{points}"/>')
    parts += [f'<circle cx="{fx(x):.1f}" cy="{fy(y):.1f}" r="2.5" fill="#4c72b0"/>' for x, y in zip(xs, ys)]
    if threshold is not None:
        parts.append(f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{fy(threshold):.1f}" y2="{fy(threshold):.1f}" '
                     f'stroke="#c44e52" stroke-dasharray="5,4"/>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
            f'role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>{"".join(parts)}</svg>')


def scatter(points: list[tuple[float, float, str]], x_label: str, y_label: str, title: str) -> str | None:
    """Log–log scatter; each point's label is its tooltip (points a log axis cannot show are left out)."""
    points = [p for p in points if math.isfinite(p[0]) and math.isfinite(p[1]) and p[0] > 0 and p[1] > 0]
    if not points:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    lo_x, hi_x, lo_y, hi_y = min(xs) / 1.5, max(xs) * 1.5, min(ys) / 1.5, max(ys) * 1.5
    fx, fy = _scale(lo_x, hi_x, PAD_L, W - PAD_R, log=True), _scale(lo_y, hi_y, H - PAD_B, PAD_T, log=True)
    parts = _axes(x_label, y_label, _ticks(lo_x, hi_x, fx, True, lambda v: f"{v:g}"),
                  _ticks(lo_y, hi_y, fy, True, lambda v: f"{v:g}"))
    parts += [f'<circle class="point" cx="{fx(x):.1f}" cy="{fy(y):.1f}" r="5" fill="#dd8452" fill-opacity="0.8">'
              f'<title>{escape(label)}</title></circle>' for x, y, label in points]
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
            f'role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>{"".join(parts)}</svg>')
