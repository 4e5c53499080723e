"""Hand-written SVG line charts for the bench scripts (no plotting library): stacked panels over a
shared time axis, each with its own y range, polylines or step lines, and a legend.

    chart = SvgChart("title", duration_s=600)
    p = chart.panel("replicas", ymin=0, ymax=10, ticks=[0, 2, 4, 6, 8, 10])
    p.steps([(t, n), ...], "#c44e52", "in-flight")       # held until the next point
    p.line([(t, v), ...], "#e69f00", "offered load", dash=True)
    chart.write("docs/x.svg")
"""
from xml.sax.saxutils import escape

W, PAD_L, PAD_R = 900, 60, 40


class Panel:
    def __init__(self, chart, title, top, height, ymin, ymax, ticks, unit):
        self.chart, self.title, self.top, self.h = chart, title, top, height
        self.ymin, self.ymax, self.ticks, self.unit = ymin, ymax, ticks, unit
        self.parts, self.legend = [], []

    def X(self, t):
        return self.chart.X(t)

    def Y(self, v):
        f = (v - self.ymin) / ((self.ymax - self.ymin) or 1)
        return self.top + self.h - self.h * min(1.0, max(0.0, f))

    def _poly(self, pts, color, label, width, dash):
        d = ' stroke-dasharray="5,3"' if dash else ""
        coords = " ".join(f"{self.X(t):.1f},{self.Y(v):.1f}" for t, v in pts)
        self.parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="{width}"{d} points="{coords}"/>')
        if label:
            self.legend.append((color, label, dash))

    def line(self, points, color, label=None, width=1.5, dash=False):
        """points: [(t, value)] joined by straight segments."""
        self._poly(points, color, label, width, dash)

    def steps(self, points, color, label=None, width=1.8, dash=False, until=None):
        """points: [(t, value)], each value held until the next point (or `until`)."""
        pts = []
        for i, (t, v) in enumerate(points):
            t2 = points[i + 1][0] if i + 1 < len(points) else (until if until is not None else t)
            pts += [(t, v), (t2, v)]
        self._poly(pts, color, label, width, dash)

    def render(self):
        x0, x1 = PAD_L, W - PAD_R
        out = [f'<text x="{x0}" y="{self.top - 6}" font-size="12">{escape(self.title)}</text>',
               f'<rect x="{x0}" y="{self.top}" width="{x1 - x0}" height="{self.h}" fill="none" stroke="#999"/>']
        for v in self.ticks:
            y = self.Y(v)
            out.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
            out.append(f'<text x="{x0 - 4}" y="{y + 4:.1f}" text-anchor="end">{v:g}{escape(self.unit)}</text>')
        out += self.parts
        x = x0
        for color, label, dash in self.legend:
            d = ' stroke-dasharray="5,3"' if dash else ""
            out.append(f'<line x1="{x}" x2="{x + 18}" y1="{self.top + self.h + 26}" y2="{self.top + self.h + 26}" stroke="{color}" stroke-width="2"{d}/>')
            out.append(f'<text x="{x + 22}" y="{self.top + self.h + 30}">{escape(label)}</text>')
            x += 30 + 7 * len(label)
        return out


class SvgChart:
    def __init__(self, title, duration_s, panel_height=200, time_ticks_s=None):
        self.title, self.duration, self.ph = title, duration_s, panel_height
        self.time_ticks = time_ticks_s
        self.panels = []

    def X(self, t):
        return PAD_L + (W - PAD_L - PAD_R) * min(max(t, 0), self.duration) / self.duration

    def panel(self, title, ymin, ymax, ticks, unit=""):
        top = 40 + len(self.panels) * (self.ph + 70)
        p = Panel(self, title, top, self.ph, ymin, ymax, ticks, unit)
        self.panels.append(p)
        return p

    def height(self):
        return 40 + len(self.panels) * (self.ph + 70)

    def body(self):
        """The chart's elements, without the enclosing <svg> (stack_svg places several)."""
        parts = [f'<rect width="{W}" height="{self.height()}" fill="white"/>',
                 f'<text x="{PAD_L}" y="20" font-size="14">{escape(self.title)}</text>']
        step = self.time_ticks or max(10, round(self.duration / 10 / 10) * 10)
        for p in self.panels:
            parts += p.render()
            t = 0
            while t <= self.duration + 1e-9:
                parts.append(f'<text x="{self.X(t):.1f}" y="{p.top + p.h + 13}" text-anchor="middle" fill="#555">{t:g} s</text>')
                t += step
        return parts

    def svg(self):
        return stack_svg([self])

    def write(self, path):
        with open(path, "w") as f:
            f.write(self.svg())


def stack_svg(charts):
    """One SVG document with the charts one below the other (each with its own time axis)."""
    height = sum(c.height() for c in charts)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" font-family="sans-serif" font-size="11">']
    y = 0
    for c in charts:
        if y:
            parts.append(f'<g transform="translate(0,{y})">')
        parts += c.body()
        if y:
            parts.append("</g>")
        y += c.height()
    parts.append("</svg>")
    return "\n".join(parts)
