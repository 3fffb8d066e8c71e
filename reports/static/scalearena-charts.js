/* scalearena report figures: turns each <figure class="chart"> spec (Chart.js 4 configs written by
   reports/figures.py, in a <script type="application/json" class="chart-spec">) into charts.
   Resolves the keys JSON cannot express: "xy" point arrays, "hatch" patterns, tick "fmt",
   tooltip "dodge"; wires the HTML legend (click shows/hides a series in every panel of the figure).
   Static drawing: no animation, so a headless screenshot shows the final picture. */
(function () {
  "use strict";
  if (typeof Chart === "undefined") {  // a page with figures but without the chart code: say so, loudly
    if (document.querySelector("figure.chart")) { console.error("scalearena: Chart.js is not on this page"); }
    return;
  }
  if (window["chartjs-plugin-annotation"]) { Chart.register(window["chartjs-plugin-annotation"]); }
  // Whiskers of a 95 % interval on bars: a dataset's "errors" holds [centre, half width] per label
  // (the centre is the stack's total when the dataset tops a stack).
  Chart.register({
    id: "scalearenaErrorBars",
    afterDatasetsDraw: function (chart) {
      const g = chart.ctx;
      chart.data.datasets.forEach(function (ds, i) {
        if (!ds.errors || !chart.isDatasetVisible(i)) { return; }
        const meta = chart.getDatasetMeta(i), y = chart.scales[meta.yAxisID];
        g.save(); g.strokeStyle = "#000"; g.lineWidth = 1.1;
        ds.errors.forEach(function (e, k) {
          const el = meta.data[k];
          if (!e || !el) { return; }
          const lo = y.getPixelForValue(Math.max(e[0] - e[1], y.min)), hi = y.getPixelForValue(e[0] + e[1]);
          const w = Math.max(2, Math.min(5, (el.width || 8) / 3));
          g.beginPath();
          g.moveTo(el.x, lo); g.lineTo(el.x, hi);
          g.moveTo(el.x - w, lo); g.lineTo(el.x + w, lo); g.moveTo(el.x - w, hi); g.lineTo(el.x + w, hi);
          g.stroke();
        });
        g.restore();
      });
    },
  });
  const d = Chart.defaults;
  d.animation = false;
  d.responsive = true;
  d.maintainAspectRatio = false;
  d.font.family = getComputedStyle(document.body).fontFamily;
  d.font.size = 12;
  d.color = "#1f2328";
  d.plugins.legend.display = false;
  d.plugins.title.font = { weight: "bold", size: 14 };
  d.interaction = { mode: "nearest", axis: "x", intersect: false };

  const num = new Intl.NumberFormat("en-US", { maximumFractionDigits: 3 });
  const FORMATS = {
    // 1-2-5 labels on a log axis, plain numbers (1,000 not 1e3), other ticks unlabelled
    log125: function (v) {
      const m = v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
      return [1, 2, 5].some(function (k) { return Math.abs(m - k) < 1e-6; }) ? num.format(v) : "";
    },
    int: function (v) { return Number.isInteger(v) ? num.format(v) : ""; },
    pct: function (v) { return num.format(v) + " %"; },
  };

  function hatch(color, kind) {
    const c = document.createElement("canvas");
    c.width = 8; c.height = 8;
    const g = c.getContext("2d");
    g.fillStyle = color; g.fillRect(0, 0, 8, 8);
    g.strokeStyle = "#000"; g.fillStyle = "#000"; g.lineWidth = 1;
    g.beginPath();
    if (kind === "////") { g.moveTo(0, 8); g.lineTo(8, 0); g.moveTo(-2, 2); g.lineTo(2, -2); g.moveTo(6, 10); g.lineTo(10, 6); }
    else if (kind === "\\\\") { g.moveTo(0, 0); g.lineTo(8, 8); g.moveTo(6, -2); g.lineTo(10, 2); g.moveTo(-2, 6); g.lineTo(2, 10); }
    else if (kind === "xxxx") { g.moveTo(0, 8); g.lineTo(8, 0); g.moveTo(0, 0); g.lineTo(8, 8); }
    else if (kind === "....") { g.fillRect(1, 1, 2, 2); g.fillRect(5, 5, 2, 2); }
    g.stroke();
    return g.createPattern(c, "repeat");
  }

  // A filled five-pointed star (Chart.js's own "star" is stroked only): the bound (oracle) marker.
  function star(color, r) {
    const c = document.createElement("canvas"), s = 2 * r + 2;
    c.width = s; c.height = s;
    const g = c.getContext("2d");
    g.beginPath();
    for (let i = 0; i < 10; i++) {
      const a = Math.PI / 2 + i * Math.PI / 5, rr = i % 2 ? r * 0.45 : r;
      g.lineTo(s / 2 + rr * Math.cos(a), s / 2 - rr * Math.sin(a));
    }
    g.closePath();
    g.fillStyle = color; g.fill();
    g.strokeStyle = "#000"; g.lineWidth = 0.8; g.stroke();
    return c;
  }

  function resolve(spec) {
    const cfg = { type: spec.type, data: spec.data, options: spec.options || {} };
    cfg.data.datasets.forEach(function (ds) {
      if (ds.xy) {
        const xs = ds.xy[0], ys = ds.xy[1];
        ds.data = xs.map(function (x, i) { return { x: x, y: ys[i] }; });
        delete ds.xy;
      }
      if (ds.hatch) { ds.backgroundColor = hatch(ds.backgroundColor, ds.hatch); }
      if (ds.pointStyle === "star5") { ds.pointStyle = star(ds.backgroundColor, 11); }
    });
    Object.values(cfg.options.scales || {}).forEach(function (s) {
      if (s.fmt) { s.ticks = Object.assign({}, s.ticks, { callback: FORMATS[s.fmt] }); delete s.fmt; }
      if (s.width) { const w = s.width; s.afterFit = function (sc) { sc.width = w; }; delete s.width; }
    });
    const plugins = cfg.options.plugins = cfg.options.plugins || {};
    if (spec.title) { plugins.title = Object.assign({ display: true, text: spec.title }, plugins.title); }
    plugins.tooltip = Object.assign({
      callbacks: {
        label: function (ctx) {
          const ds = ctx.dataset, p = ctx.raw || {};
          if (ds.tip === "xy") {
            const name = ds.names ? ds.names[ctx.dataIndex] : ds.label;  // per-point names (the frontier's runs)
            return name + ": " + num.format(p.x) + ", " + num.format(p.y);
          }
          if (ds.tip === "span") { return ds.label + ": " + num.format(p.x[0]) + "-" + num.format(p.x[1]) + " (" + num.format(p.s) + " s)"; }
          const y = ctx.parsed.y - (ds.dodge || 0);
          return ds.label + ": " + num.format(y);
        },
      },
    }, plugins.tooltip);
    return cfg;
  }

  function build(fig) {
    const holder = fig.querySelector("script.chart-spec");
    if (!holder) { return; }
    const specs = JSON.parse(holder.textContent);
    const canvases = fig.querySelectorAll("canvas");
    const charts = specs.map(function (s, i) { return new Chart(canvases[i], resolve(s)); });
    fig.querySelectorAll(".legend li[data-key]").forEach(function (li) {
      li.addEventListener("click", function () {
        const key = li.getAttribute("data-key");
        const hide = !li.classList.contains("off");
        li.classList.toggle("off", hide);
        charts.forEach(function (ch) {
          ch.data.datasets.forEach(function (ds, i) { if (ds.key === key) { ch.setDatasetVisibility(i, !hide); } });
          ch.update();
        });
      });
    });
  }

  document.querySelectorAll("figure.chart").forEach(build);
})();
