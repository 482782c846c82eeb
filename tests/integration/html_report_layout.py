#!/usr/bin/env python3
# What: loads report.html pages in headless Chromium (the DevTools pipe of html_report_chromium.py,
#   1280 CSS px wide) and measures every rendered chart (getBoundingClientRect of its SVG elements,
#   the classes reports/svg_chart.hpp documents). A page fails when, in any chart:
#     legend-size       a chart has more than 12 legend entries (one per series does not scale);
#     legend-overlap    two legend entries (g.entry) overlap;
#     legend-on-plot    a legend entry overlaps the plot box (rect.plot);
#     legend-outside    a legend entry or any text runs outside the chart;
#     tick-overlap      two tick labels overlap;
#     data-outside      a data marker's centre (.pt: a point, or a clipped point's triangle on the
#                       edge), a line (.series) or a bar (rect.bar) lies
#                       outside the plot box, or the chart draws no data at all;
#     crushed           a line chart's plot box is under 100 px or under 40% of the chart's height;
#     ref-hides         a reference line (line.ref: cap, limit) is drawn over the data without
#                       being dashed and translucent, or has a data series' colour;
#     series-hidden     two data lines are identical (one hides the other);
#     axis-unfitted     a chart with a reference line has its y axis end more than 1.5x above the
#                       highest reference value (the tick labels give the scale);
#   and in the page's tables:
#     plan-columns      the all-configs or the world-size table lacks a strategy, sharding,
#                       precision or checkpointing column, or the configs table a collectives one;
#     bare-reason       a cell says only "no feasible config" (without what is wrong);
#     page-overflow     a table runs past the page's right edge or scrolls sideways inside its
#                       scrolling box (its right-hand columns hidden), or the page is wider than the
#                       window.
# Before judging the reports it proves that each detector fires on a page built to trip it.
# Why: a report that loads can still be unreadable at 64 GPUs (64 legend entries crushing the plot
#   to a strip, a limit line hiding a series, a 0-500 GiB axis); only measuring the rendered boxes
#   catches that.
# Usage: html_report_layout.py REPORT.html [REPORT.html ...]
# Exit: 0 pass, 1 fail, 77 skip (no chromium: scripts/install-deps --test installs it).
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from html_report_chromium import SKIP, Cdp, find_chromium, verdict  # noqa: E402

MEASURE_JS = r"""
(() => {
  const R = e => { const b = e.getBoundingClientRect();
                   return {x0: b.left, y0: b.top, x1: b.right, y1: b.bottom, w: b.width, h: b.height}; };
  const overlap = (a, b, tol) => Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0) > tol &&
                                 Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0) > tol;
  const within = (a, box, tol) => a.x0 >= box.x0 - tol && a.x1 <= box.x1 + tol &&
                                  a.y0 >= box.y0 - tol && a.y1 <= box.y1 + tol;
  const centre = a => ({x0: (a.x0 + a.x1) / 2, x1: (a.x0 + a.x1) / 2, y0: (a.y0 + a.y1) / 2, y1: (a.y0 + a.y1) / 2});
  const charts = [];
  document.querySelectorAll('svg.chart').forEach((svg, n) => {
    const title = (svg.querySelector(':scope > title') || {}).textContent || ('chart ' + n);
    const c = {title: title, problems: [], legend: 0, data: 0};
    const bad = (kind, msg) => c.problems.push([kind, msg]);
    charts.push(c);
    const plotEl = svg.querySelector('rect.plot');
    if (!plotEl) { bad('data-outside', 'no plot box'); return; }
    const plot = R(plotEl), box = R(svg);
    c.plot = [Math.round(plot.w), Math.round(plot.h)];
    c.chart = [Math.round(box.w), Math.round(box.h)];

    const entries = [...svg.querySelectorAll('g.entry')];
    c.legend = entries.length;
    const eb = entries.map(R);
    const name = i => entries[i].textContent.trim();
    if (entries.length > 12) bad('legend-size', `${entries.length} legend entries (at most 12 stay readable)`);
    for (let i = 0; i < eb.length; ++i) {
      for (let j = i + 1; j < eb.length; ++j)
        if (overlap(eb[i], eb[j], 0.5)) bad('legend-overlap', `"${name(i)}" overlaps "${name(j)}"`);
      if (overlap(eb[i], plot, 0.5)) bad('legend-on-plot', `"${name(i)}" overlaps the plot box`);
    }
    svg.querySelectorAll('text, g.entry').forEach(t => {
      if (!within(R(t), box, 1)) bad('legend-outside', `"${t.textContent.trim().slice(0, 60)}" runs outside the chart`);
    });
    const ticks = [...svg.querySelectorAll('text.tick')];
    const tb = ticks.map(R);
    for (let i = 0; i < tb.length; ++i)
      for (let j = i + 1; j < tb.length; ++j)
        if (overlap(tb[i], tb[j], 0.5))
          bad('tick-overlap', `ticks "${ticks[i].textContent}" and "${ticks[j].textContent}" overlap`);

    const data = [...svg.querySelectorAll('.pt, .series, rect.bar')];
    c.data = data.length;
    if (!data.length) bad('data-outside', 'no data drawn');
    for (const d of data) {
      const b = R(d);
      const inside = d.classList.contains('pt') ? within(centre(b), plot, 0.75) : within(b, plot, 1.5);
      if (!inside) {
        const t = d.querySelector('title');
        bad('data-outside', `${d.tagName} ${t ? '"' + t.textContent + '"' : ''} outside the plot box`);
      }
    }

    const colours = new Set();
    for (const d of data) for (const a of ['stroke', 'fill']) {
      const v = (d.getAttribute(a) || '').toLowerCase();
      if (v.startsWith('#') && v !== '#ffffff') colours.add(v);
    }
    const refs = [...svg.querySelectorAll('line.ref')];
    for (const ref of refs) {
      const under = data.every(d => ref.compareDocumentPosition(d) & Node.DOCUMENT_POSITION_FOLLOWING);
      const style = getComputedStyle(ref);
      const soft = parseFloat(style.strokeOpacity) < 1 && (ref.getAttribute('stroke-dasharray') || '') !== '';
      if (!under && !soft) bad('ref-hides', 'a reference line is drawn over the data, solid and opaque');
      if (colours.has((ref.getAttribute('stroke') || '').toLowerCase()))
        bad('ref-hides', `a reference line has a data series' colour ${ref.getAttribute('stroke')}`);
    }
    const lines = [...svg.querySelectorAll('polyline.series')].map(p => p.getAttribute('points').trim());
    for (let i = 0; i < lines.length; ++i)
      for (let j = i + 1; j < lines.length; ++j)
        if (lines[i] === lines[j]) bad('series-hidden', 'two data lines are identical: one hides the other');

    const isLine = !svg.querySelector('rect.bar');
    if (isLine && (plot.h < 100 || plot.h < 0.4 * box.h))
      bad('crushed', `plot box ${Math.round(plot.h)} px high in a ${Math.round(box.h)} px chart`);

    // The y scale from the y tick labels (right-aligned left of the plot): value at a pixel row.
    const yt = ticks.filter(t => t.getAttribute('text-anchor') === 'end')
                    .map(t => ({v: parseFloat(t.textContent), y: (R(t).y0 + R(t).y1) / 2}))
                    .filter(t => isFinite(t.v));
    if (isLine && refs.length && yt.length >= 2) {
      const a = yt[0], b = yt[yt.length - 1];
      const value = y => a.v + (y - a.y) * (b.v - a.v) / (b.y - a.y);
      const top = value(plot.y0);
      const refTop = Math.max(...refs.map(r => value((R(r).y0 + R(r).y1) / 2)));
      c.axis = [+value(plot.y1).toPrecision(3), +top.toPrecision(3), +refTop.toPrecision(3)];
      if (refTop > 0 && top > 1.5 * refTop)
        bad('axis-unfitted', `the y axis ends at ${top.toPrecision(3)}, ${(top / refTop).toFixed(1)}x the highest ` +
                             `reference line (${refTop.toPrecision(3)})`);
    }
  });

  const page = [];
  const headers = sel => [...document.querySelectorAll(sel + ' th')].map(th => th.textContent.trim());
  const need = ['strategy', 'sharding', 'precision', 'checkpointing'];
  for (const [sel, extra] of [['table.configs', ['collectives per step']], ['table.pareto', []]]) {
    if (!document.querySelector(sel)) { page.push(['plan-columns', `no ${sel}`]); continue; }
    const h = headers(sel);
    for (const col of need.concat(extra))
      if (!h.includes(col)) page.push(['plan-columns', `${sel} has no "${col}" column`]);
  }
  const main = R(document.querySelector('main') || document.body);
  document.querySelectorAll('table').forEach(t => {
    if (!t.closest('.scroll') && R(t).x1 > main.x1 + 1)
      page.push(['page-overflow', `a table (${t.className || 'unnamed'}) runs ${Math.round(R(t).x1 - main.x1)} px ` +
                                  'past the page\'s right edge']);
  });
  document.querySelectorAll('.scroll').forEach(d => {
    if (d.scrollWidth > d.clientWidth + 1)
      page.push(['page-overflow', `a scrolling table is ${d.scrollWidth} px wide in its ${d.clientWidth} px box ` +
                                  '(its right-hand columns are hidden)']);
  });
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    page.push(['page-overflow', `the page is ${document.documentElement.scrollWidth} px wide in a ` +
                                `${window.innerWidth} px window`]);
  const bare = [...document.querySelectorAll('td')].filter(td => td.textContent.trim() === 'no feasible config');
  if (bare.length) page.push(['bare-reason', `${bare.length} cells say only "no feasible config"`]);
  return JSON.stringify({charts: charts, page: page});
})()
"""


def measure(chromium, html, profile_dir):
    cdp = Cdp(chromium, profile_dir)
    try:
        target = cdp.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        cdp.call("Page.enable", session=session)
        cdp.call("Emulation.setDeviceMetricsOverride",
                 {"width": 1280, "height": 2000, "deviceScaleFactor": 1, "mobile": False}, session=session)
        cdp.call("Page.navigate", {"url": "file://" + os.path.abspath(html)}, session=session)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
                e.get("method") == "Page.loadEventFired" and e.get("sessionId") == session for e in cdp.events):
            cdp.pump(0.2)
        reply = cdp.call("Runtime.evaluate", {"expression": MEASURE_JS, "returnByValue": True}, session=session,
                         timeout=60)
    finally:
        cdp.close()
    if "exceptionDetails" in reply:
        raise RuntimeError("the measuring script failed: %s" % json.dumps(reply["exceptionDetails"])[:2000])
    return json.loads(reply["result"]["value"])


def problems_of(result):
    out = [(kind, "%s: %s" % (c["title"], msg)) for c in result["charts"] for kind, msg in c["problems"]]
    return out + [(kind, msg) for kind, msg in result["page"]]


# A page built to trip every detector: a chart with 14 legend entries, two of which overlap each
# other and the plot, a legend entry past the right edge, overlapping ticks, a point and a bar outside the plot,
# an opaque reference line over the data in a series' colour, two identical lines, a plot crushed
# to a strip, an axis far above its reference line; a bar chart with a bar below its plot; tables
# without plan columns; a bare reason; a table wider than the window.
BROKEN = """<!DOCTYPE html><html><body>
<svg class="chart" width="600" viewBox="0 0 600 400"><title>broken</title>
<rect class="plot" x="80" y="10" width="500" height="60"/>
<text class="tick" x="74" y="14" text-anchor="end">500</text>
<text class="tick" x="74" y="74" text-anchor="end">0</text>
<text class="tick" x="300" y="90" text-anchor="middle">1000</text>
<text class="tick" x="305" y="90" text-anchor="middle">1001</text>
<polyline class="series" fill="none" stroke="#0072B2" points="80,60 300,50 580,20"/>
<polyline class="series" fill="none" stroke="#E69F00" points="80,60 300,50 580,20"/>
<circle class="pt" cx="590" cy="30" r="3.5" fill="#0072B2"/>
<line class="ref" x1="80" y1="60" x2="580" y2="60" stroke="#E69F00" stroke-width="2"/>
<g class="entry"><rect x="80" y="60" width="12" height="12" fill="#0072B2"/><text x="100" y="70">first entry</text></g>
<g class="entry"><rect x="110" y="60" width="12" height="12" fill="#E69F00"/><text x="130" y="70">second</text></g>
<g class="entry"><text x="540" y="120">a long entry past the edge</text></g>
%s
</svg>
<svg class="chart" width="600" viewBox="0 0 600 200"><title>broken bars</title>
<rect class="plot" x="80" y="10" width="500" height="100"/>
<rect class="bar" x="100" y="150" width="40" height="10" fill="#009E73"/>
</svg>
<table class="configs"><tr><th>rank</th><th>strategy</th></tr><tr><td>1</td><td>overlap</td></tr></table>
<table class="pareto"><tr><th>world_size</th></tr><tr><td>no feasible config</td></tr></table>
<table class="wide" style="width:3000px"><tr><td>wider than the window</td></tr></table>
</body></html>""" % "".join('<g class="entry"><text x="%d" y="390">e%d</text></g>' % (20 + 40 * i, i) for i in range(11))
BROKEN_KINDS = {"legend-size", "legend-overlap", "legend-on-plot", "legend-outside", "tick-overlap", "data-outside", "crushed",
                "ref-hides", "series-hidden", "axis-unfitted", "plan-columns", "bare-reason", "page-overflow"}


def main():
    reports = sys.argv[1:]
    if not reports:
        print("usage: html_report_layout.py REPORT.html [REPORT.html ...]")
        return 1
    chromium = find_chromium()
    if not chromium:
        print("SKIP: chromium not installed (scripts/install-deps --test installs it)")
        return SKIP
    work = tempfile.mkdtemp(prefix="gaccum-layout-")
    failures = []
    try:
        broken = os.path.join(work, "broken.html")
        with open(broken, "w") as f:
            f.write(BROKEN)
        found = {kind for kind, _ in problems_of(measure(chromium, broken, os.path.join(work, "p0")))}
        for kind in sorted(BROKEN_KINDS - found):
            failures.append("self-test: the %s detector did not fire on a page built to trip it" % kind)
        for n, report in enumerate(reports):
            if not os.path.exists(report):
                failures.append("no report at %s" % report)
                continue
            result = measure(chromium, report, os.path.join(work, "p%d" % (n + 1)))
            print("%s:" % report)
            for c in result["charts"]:
                print("  %-62s plot %s in %s, %d legend entries, %d data elements%s" % (
                    c["title"][:62], c.get("plot"), c.get("chart"), c["legend"], c["data"],
                    ", y axis %s..%s (reference %s)" % tuple(c["axis"]) if "axis" in c else ""))
            if not result["charts"]:
                failures.append("%s: no charts" % report)
            failures += ["%s: %s" % (report, msg) for _, msg in problems_of(result)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return verdict(failures, "every chart's legend, data and reference lines are readable in %d report(s)" %
                   len(reports))


if __name__ == "__main__":
    sys.exit(main())
