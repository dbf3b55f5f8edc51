"use strict";

// ---- Data model (no DOM): shared with tests/report/check_trace_script.js under node. ----
//
// The trace-event format (Google's "Trace Event Format" document, which chrome://tracing, Perfetto
// and torch.profiler's export_chrome_trace follow): every event has a phase "ph", a name, a
// timestamp "ts" in microseconds, a process "pid" and a thread "tid". Drawn here: complete events
// (X, with "dur"), begin/end pairs (B then E on the same thread; an E closes the latest open B),
// instant events (i, or the older I; scope "s" = t thread, p process, g global), counters (C: every
// numeric arg is one series of the counter named by pid, name and id) and metadata (M:
// process_name, thread_name, process_sort_index, thread_sort_index). Anything else (flows, async
// and object events, samples) is counted and left out.

function formatBytes(bytes) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  if (Math.abs(bytes) < 1024) return Math.round(bytes) + " B";
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1023.995 && unit + 1 < units.length) { value /= 1024; unit += 1; }
  return value.toFixed(2) + " " + units[unit];
}

// Milliseconds with as many decimals as `step` (the axis tick or the value's own size) needs.
function formatMs(ms, step) {
  const reference = step === undefined ? Math.abs(ms) : step;
  let decimals = 0;
  if (reference > 0) decimals = Math.max(0, Math.min(6, Math.ceil(-Math.log10(reference)) + (step === undefined ? 2 : 0)));
  return ms.toFixed(decimals) + " ms";
}

function formatNumber(value) {
  if (Number.isInteger(value)) return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return String(Number(value.toPrecision(6)));
}

// Thread and process ids may be numbers or strings; numbers sort numerically, before strings.
function compareIds(a, b) {
  const na = typeof a === "number";
  const nb = typeof b === "number";
  if (na && nb) return a - b;
  if (na !== nb) return na ? -1 : 1;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}

// A timestamp or duration: a number, or a number written as a string (some exporters quote them).
function eventTime(value) {
  const time = typeof value === "number" ? value : typeof value === "string" && value.trim() !== "" ? Number(value) : NaN;
  return Number.isFinite(time) ? time : NaN;
}

// Nesting depth of every span of one thread: sorted by start (longer first on ties), a span sits
// one row below every earlier span still open when it starts.
function assignDepths(spans) {
  spans.sort(function (a, b) { return a.start - b.start || b.dur - a.dur || a.order - b.order; });
  const open = [];
  let depthCount = 0;
  for (const span of spans) {
    while (open.length > 0 && open[open.length - 1] <= span.start) open.pop();
    span.depth = open.length;
    open.push(span.start + span.dur);
    depthCount = Math.max(depthCount, open.length);
  }
  return depthCount;
}

function buildTraceModel(events) {
  const processNames = new Map();
  const processSort = new Map();
  const threadNames = new Map();
  const threadSort = new Map();
  const lanes = new Map();
  const counters = new Map();
  const globalInstants = [];
  const processInstants = [];
  const skipped = {};
  let invalid = 0;
  let unmatchedEnds = 0;
  let unclosedBegins = 0;
  let minTime = Infinity;
  let maxTime = -Infinity;
  const laneKey = function (pid, tid) { return JSON.stringify([pid, tid]); };
  function lane(pid, tid) {
    const key = laneKey(pid, tid);
    let found = lanes.get(key);
    if (!found) {
      found = { key: key, pid: pid, tid: tid, spans: [], instants: [], open: [], depthCount: 0 };
      lanes.set(key, found);
    }
    return found;
  }
  function seen(time) { minTime = Math.min(minTime, time); maxTime = Math.max(maxTime, time); }
  events.forEach(function (event, order) {
    if (event === null || typeof event !== "object" || typeof event.ph !== "string") { invalid += 1; return; }
    const ph = event.ph;
    const pid = event.pid === undefined ? 0 : event.pid;
    const tid = event.tid === undefined ? 0 : event.tid;
    const args = event.args && typeof event.args === "object" ? event.args : {};
    if (ph === "M") {
      if (event.name === "process_name") processNames.set(JSON.stringify(pid), String(args.name));
      else if (event.name === "thread_name") threadNames.set(laneKey(pid, tid), String(args.name));
      else if (event.name === "process_sort_index") processSort.set(JSON.stringify(pid), Number(args.sort_index));
      else if (event.name === "thread_sort_index") threadSort.set(laneKey(pid, tid), Number(args.sort_index));
      return;
    }
    const ts = eventTime(event.ts);
    if (Number.isNaN(ts)) { invalid += 1; return; }
    const name = event.name === undefined ? "" : String(event.name);
    const cat = event.cat === undefined ? "" : String(event.cat);
    if (ph === "X") {
      const dur = Math.max(0, eventTime(event.dur === undefined ? 0 : event.dur) || 0);
      lane(pid, tid).spans.push({ name: name, cat: cat, start: ts, dur: dur, args: args, order: order, ph: "X" });
      seen(ts);
      seen(ts + dur);
    } else if (ph === "B") {
      const span = { name: name, cat: cat, start: ts, dur: 0, args: Object.assign({}, args), order: order, ph: "B" };
      lane(pid, tid).open.push(span);
      seen(ts);
    } else if (ph === "E") {
      const owner = lane(pid, tid);
      const span = owner.open.pop();
      seen(ts);
      if (!span) { unmatchedEnds += 1; return; }
      span.dur = Math.max(0, ts - span.start);
      Object.assign(span.args, args);
      owner.spans.push(span);
    } else if (ph === "i" || ph === "I") {
      const scope = event.s === "g" || event.s === "p" ? event.s : "t";
      const instant = { name: name, cat: cat, time: ts, args: args, scope: scope, pid: pid };
      if (scope === "g") globalInstants.push(instant);
      else if (scope === "p") processInstants.push(instant);
      else lane(pid, tid).instants.push(instant);
      seen(ts);
    } else if (ph === "C") {
      const key = JSON.stringify([pid, name, event.id === undefined ? null : event.id]);
      let counter = counters.get(key);
      if (!counter) {
        counter = { key: key, pid: pid, name: name + (event.id === undefined ? "" : " " + event.id), series: [], samples: [] };
        counters.set(key, counter);
      }
      const values = {};
      for (const series of Object.keys(args)) {
        // Numbers, or numbers written as strings; null, booleans and objects are not values.
        const raw = args[series];
        const value = typeof raw === "number" ? raw : typeof raw === "string" && raw.trim() !== "" ? Number(raw) : NaN;
        if (!Number.isFinite(value)) continue;
        if (counter.series.indexOf(series) < 0) counter.series.push(series);
        values[series] = value;
      }
      counter.samples.push({ time: ts, values: values, order: order });
      seen(ts);
    } else {
      skipped[String(ph)] = (skipped[String(ph)] || 0) + 1;
    }
  });
  if (minTime === Infinity) { minTime = 0; maxTime = 0; }
  // A B never closed runs to the end of the trace.
  for (const owner of lanes.values()) {
    for (const span of owner.open) {
      span.dur = Math.max(0, maxTime - span.start);
      span.unclosed = true;
      owner.spans.push(span);
      unclosedBegins += 1;
    }
    owner.open = [];
  }
  // Process-scoped instants show on every thread of their process (a lane is made if none).
  for (const instant of processInstants) {
    let placed = false;
    for (const owner of lanes.values()) {
      if (JSON.stringify(owner.pid) === JSON.stringify(instant.pid)) { owner.instants.push(instant); placed = true; }
    }
    if (!placed) lane(instant.pid, "(process)").instants.push(instant);
  }
  // Times relative to the first event, so that microsecond epochs stay readable.
  const origin = minTime;
  let spanCount = 0;
  let instantCount = globalInstants.length + processInstants.length;
  const laneList = [];
  for (const owner of lanes.values()) {
    for (const span of owner.spans) span.start -= origin;
    for (const instant of owner.instants) {
      if (instant.scope === "t") { instant.time -= origin; instantCount += 1; }
    }
    owner.depthCount = assignDepths(owner.spans);
    owner.instants.sort(function (a, b) { return a.time - b.time; });
    // Rows of spans by depth, each sorted by start: a view finds its first visible span by bisection.
    owner.rows = [];
    for (let d = 0; d < owner.depthCount; d++) owner.rows.push([]);
    for (const span of owner.spans) owner.rows[span.depth].push(span);
    spanCount += owner.spans.length;
    const processName = processNames.get(JSON.stringify(owner.pid));
    const threadName = threadNames.get(owner.key);
    owner.label = (processName !== undefined ? processName : "pid " + owner.pid) + " / " +
                  (threadName !== undefined ? threadName : "tid " + owner.tid);
    owner.processSort = processSort.has(JSON.stringify(owner.pid)) ? processSort.get(JSON.stringify(owner.pid)) : 0;
    owner.threadSort = threadSort.has(owner.key) ? threadSort.get(owner.key) : 0;
    if (owner.spans.length > 0 || owner.instants.length > 0) laneList.push(owner);
  }
  for (const instant of processInstants) instant.time -= origin;
  for (const instant of globalInstants) instant.time -= origin;
  laneList.sort(function (a, b) {
    return a.processSort - b.processSort || compareIds(a.pid, b.pid) || a.threadSort - b.threadSort ||
           compareIds(a.tid, b.tid);
  });
  const counterList = Array.from(counters.values());
  const counterPids = new Set(counterList.map(function (counter) { return JSON.stringify(counter.pid); }));
  let sampleCount = 0;
  for (const counter of counterList) {
    counter.samples.sort(function (a, b) { return a.time - b.time || a.order - b.order; });
    // A series missing from a sample keeps its previous value (one event may update one series).
    const last = counter.series.map(function () { return 0; });
    counter.max = 0;
    for (const sample of counter.samples) {
      sample.time -= origin;
      let total = 0;
      sample.stack = counter.series.map(function (series, k) {
        if (sample.values[series] !== undefined) last[k] = sample.values[series];
        total += Math.max(0, last[k]);
        return last[k];
      });
      sample.total = total;
      counter.max = Math.max(counter.max, total);
    }
    sampleCount += counter.samples.length;
    const processName = processNames.get(JSON.stringify(counter.pid));
    counter.label = counter.name + (processName !== undefined && counterPids.size > 1 ? " (" + processName + ")" : "");
    counter.bytes = /byte|alloc|reserv|mem/i.test(counter.name + " " + counter.series.join(" "));
  }
  counterList.sort(function (a, b) { return compareIds(a.pid, b.pid) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0); });
  globalInstants.sort(function (a, b) { return a.time - b.time; });
  return { lanes: laneList, counters: counterList, globalInstants: globalInstants, origin: origin,
           duration: maxTime - minTime, spanCount: spanCount, instantCount: instantCount,
           sampleCount: sampleCount, skipped: skipped, invalid: invalid, unmatchedEnds: unmatchedEnds,
           unclosedBegins: unclosedBegins };
}

// Index of the first item of `sorted` whose key(item) >= value.
function lowerBound(sorted, value, key) {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (key(sorted[mid]) < value) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// Axis ticks: a 1, 2 or 5 times a power of ten step giving about `count` ticks over [start, end].
function niceTicks(start, end, count) {
  const span = end - start;
  if (!(span > 0)) return { step: 1, ticks: [start] };
  const raw = span / Math.max(1, count);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  let step = power;
  for (const m of [1, 2, 5, 10]) { if (m * power >= raw) { step = m * power; break; } }
  const ticks = [];
  for (let t = Math.ceil(start / step) * step; t <= end + step * 1e-9; t += step) ticks.push(t);
  return { step: step, ticks: ticks };
}

const kFixedColours = { phase: "#8250df", module: "#1a7f37", kernel: "#0969da" };
const kPalette = ["#bf3989", "#bc4c00", "#4d2d00", "#0550ae", "#116329", "#953800", "#6639ba", "#9a6700",
                  "#1b7c83", "#cf222e"];

// A category's colour: phase, module and kernel (vramlab's categories) fixed, others hashed.
function categoryColour(category) {
  if (kFixedColours[category]) return kFixedColours[category];
  let hash = 0;
  for (let i = 0; i < category.length; i++) hash = (hash * 31 + category.charCodeAt(i)) >>> 0;
  return kPalette[hash % kPalette.length];
}

if (typeof module !== "undefined" && module.exports) {
  module.exports = { buildTraceModel: buildTraceModel, assignDepths: assignDepths, lowerBound: lowerBound,
                     niceTicks: niceTicks, categoryColour: categoryColour, formatMs: formatMs,
                     formatBytes: formatBytes, main: function () { main(); } };
}

// ---- Drawing (browser only). ----

function main() {
  const data = JSON.parse(document.getElementById("vramlab-data").textContent);
  const model = buildTraceModel(data.events);
  const tooltip = document.getElementById("tooltip");
  const canvas = document.getElementById("trace");
  document.getElementById("title").textContent = data.title;

  function element(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (className) node.className = className;
    return node;
  }
  function showTooltip(x, y, text) {
    tooltip.textContent = text;
    tooltip.style.display = "block";
    tooltip.style.left = Math.max(0, Math.min(x + 14, window.innerWidth - 540)) + "px";
    tooltip.style.top = (y + 14) + "px";
  }
  function hideTooltip() { tooltip.style.display = "none"; }

  const cards = document.getElementById("cards");
  function card(value, what) {
    const node = element("div", undefined, "card");
    node.appendChild(element("div", value, "value"));
    node.appendChild(element("div", what, "what"));
    cards.appendChild(node);
  }
  card(formatMs(model.duration / 1000), "from the first event to the last");
  card(formatNumber(model.spanCount), "spans (X, and B/E pairs) on " + model.lanes.length + " threads");
  card(formatNumber(model.counters.length), "counter tracks (" + formatNumber(model.sampleCount) + " samples)");
  card(formatNumber(model.instantCount), "instant events");
  const skippedPhases = Object.keys(model.skipped).concat(data.skipped ? Object.keys(data.skipped) : []);

  // Legend: every category that has a span, in order of first appearance.
  const categories = [];
  for (const owner of model.lanes) {
    for (const span of owner.spans) if (categories.indexOf(span.cat) < 0) categories.push(span.cat);
  }
  const legend = document.getElementById("legend");
  for (const category of categories) {
    const item = element("span");
    const swatch = element("span", undefined, "swatch");
    swatch.style.background = categoryColour(category);
    item.appendChild(swatch);
    item.appendChild(document.createTextNode(category === "" ? "(no category)" : category));
    legend.appendChild(item);
  }

  // Layout in CSS pixels: the time axis, one lane per thread (a row per nesting depth), then one
  // stacked-area track per counter.
  const labelWidth = 170;
  const rightMargin = 12;
  const axisHeight = 30;
  const rowHeight = 18;
  const lanePadding = 8;
  const counterHeight = 72;
  const maxRows = 60;
  let top = axisHeight;
  for (const owner of model.lanes) {
    owner.top = top;
    owner.visibleRows = Math.min(owner.depthCount, maxRows);
    owner.height = Math.max(1, owner.visibleRows) * rowHeight + (owner.instants.length > 0 ? 8 : 0) + lanePadding;
    top += owner.height;
  }
  for (const counter of model.counters) {
    counter.top = top;
    counter.height = counterHeight;
    top += counterHeight + lanePadding;
  }
  const totalHeight = Math.max(top + 8, axisHeight + 40);
  const full = { start: 0, end: Math.max(model.duration, 1e-3) };
  let view = { start: full.start, end: full.end };
  let surface = null;
  let plotWidth = 0;
  function timeToX(time) { return labelWidth + plotWidth * (time - view.start) / (view.end - view.start); }
  function xToTime(x) { return view.start + (x - labelWidth) / plotWidth * (view.end - view.start); }

  function setupCanvas() {
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth || 900;
    // Browsers cap a canvas at about 32k pixels a side.
    const scale = Math.min(ratio, 32000 / totalHeight);
    canvas.style.height = totalHeight + "px";
    canvas.width = Math.round(width * scale);
    canvas.height = Math.round(totalHeight * scale);
    const context = canvas.getContext("2d");
    context.setTransform(scale, 0, 0, scale, 0, 0);
    plotWidth = Math.max(50, width - labelWidth - rightMargin);
    return { context: context, width: width, height: totalHeight };
  }

  let selection = null;
  function draw() {
    surface = setupCanvas();
    const context = surface.context;
    context.clearRect(0, 0, surface.width, surface.height);
    context.font = "11px sans-serif";
    context.textBaseline = "middle";
    const viewMs = { start: view.start / 1000, end: view.end / 1000 };
    const axis = niceTicks(viewMs.start, viewMs.end, Math.max(2, Math.floor(plotWidth / 110)));
    context.strokeStyle = "#eaeef2";
    context.fillStyle = "#57606a";
    context.textAlign = "center";
    for (const tick of axis.ticks) {
      const x = timeToX(tick * 1000);
      context.beginPath();
      context.moveTo(x, axisHeight - 6);
      context.lineTo(x, surface.height);
      context.stroke();
      context.fillText(formatMs(tick, axis.step), x, 11);
    }
    context.textAlign = "left";
    context.fillText("time since the first event", 4, 11);
    context.strokeStyle = "#d0d7de";
    context.beginPath();
    context.moveTo(labelWidth, axisHeight - 1);
    context.lineTo(labelWidth + plotWidth, axisHeight - 1);
    context.stroke();

    let drawnSpans = 0;
    context.save();
    for (const owner of model.lanes) {
      context.fillStyle = "#f6f8fa";
      context.fillRect(0, owner.top, surface.width, owner.height - lanePadding / 2);
      context.fillStyle = "#1d1d1f";
      context.textAlign = "left";
      context.fillText(clip(context, owner.label, labelWidth - 8), 4, owner.top + rowHeight / 2);
      context.save();
      context.beginPath();
      context.rect(labelWidth, owner.top, plotWidth, owner.height);
      context.clip();
      for (let d = 0; d < owner.visibleRows; d++) {
        const row = owner.rows[d];
        const y = owner.top + d * rowHeight;
        // Spans on one row do not overlap, so their ends are sorted too.
        let k = lowerBound(row, view.start, function (span) { return span.start + span.dur; });
        let lastPixel = -1;
        for (; k < row.length && row[k].start <= view.end; k++) {
          const span = row[k];
          const x0 = timeToX(span.start);
          const x1 = timeToX(span.start + span.dur);
          // Spans narrower than a pixel share it: one is drawn for each pixel.
          if (x1 - x0 < 1 && Math.floor(x0) === lastPixel) continue;
          lastPixel = Math.floor(x0);
          const left = Math.max(x0, labelWidth - 2);
          const width = Math.max(1, Math.min(x1, labelWidth + plotWidth + 2) - left);
          context.fillStyle = categoryColour(span.cat);
          context.fillRect(left, y + 1, width, rowHeight - 2);
          drawnSpans += 1;
          if (width > 24) {
            context.fillStyle = "white";
            context.fillText(clip(context, span.name, width - 6), left + 3, y + rowHeight / 2);
          }
        }
      }
      context.fillStyle = "#cf222e";
      const instantY = owner.top + Math.max(1, owner.visibleRows) * rowHeight + 4;
      for (const instant of owner.instants) {
        if (instant.time < view.start || instant.time > view.end) continue;
        const x = timeToX(instant.time);
        context.beginPath();
        context.moveTo(x, instantY - 4);
        context.lineTo(x + 4, instantY + 3);
        context.lineTo(x - 4, instantY + 3);
        context.closePath();
        context.fill();
      }
      context.restore();
      if (owner.depthCount > owner.visibleRows) {
        context.fillStyle = "#57606a";
        context.fillText("+" + (owner.depthCount - owner.visibleRows) + " deeper rows not shown", 4,
                         owner.top + rowHeight * 1.5);
      }
    }
    for (const counter of model.counters) drawCounter(context, counter);
    // Global instants: a dashed line through every lane.
    context.strokeStyle = "#cf222e";
    context.setLineDash([3, 3]);
    for (const instant of model.globalInstants) {
      if (instant.time < view.start || instant.time > view.end) continue;
      const x = timeToX(instant.time);
      context.beginPath();
      context.moveTo(x, axisHeight);
      context.lineTo(x, surface.height);
      context.stroke();
    }
    context.setLineDash([]);
    context.restore();
    if (selection) {
      context.fillStyle = "rgba(9, 105, 218, 0.15)";
      const left = Math.min(selection.from, selection.to);
      context.fillRect(left, axisHeight, Math.abs(selection.to - selection.from), surface.height - axisHeight);
    }
    canvas.setAttribute("data-drawn-spans", String(drawnSpans));
    canvas.setAttribute("data-view-start-ms", String(viewMs.start));
    canvas.setAttribute("data-view-end-ms", String(viewMs.end));
    document.getElementById("view-label").textContent =
        "showing " + formatMs(viewMs.start, axis.step) + " to " + formatMs(viewMs.end, axis.step) +
        (view.start === full.start && view.end === full.end ? " (all)" : "");
  }

  function clip(context, text, width) {
    if (context.measureText(text).width <= width) return text;
    let lo = 0;
    let hi = text.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (context.measureText(text.slice(0, mid) + "…").width <= width) lo = mid; else hi = mid - 1;
    }
    return lo === 0 ? "" : text.slice(0, lo) + "…";
  }

  // Memory categories keep the memory timeline's colours (PyTorch's profiler colours); other
  // series take the palette in order, so the series of one track always differ.
  function seriesColour(counter, s) {
    const known = data.series_colours && data.series_colours[counter.series[s]];
    return known || kPalette[s % kPalette.length];
  }

  function counterValue(counter, value) { return counter.bytes ? formatBytes(value) : formatNumber(value); }

  // A stacked step area: each sample's values hold until the next sample. Within one pixel column
  // the sample with the largest total stands for the others, so peaks are never hidden.
  function drawCounter(context, counter) {
    const bottom = counter.top + counter.height;
    const scale = counter.max > 0 ? (counter.height - 14) / counter.max : 0;
    context.fillStyle = "#f6f8fa";
    context.fillRect(0, counter.top, surface.width, counter.height);
    context.fillStyle = "#1d1d1f";
    context.textAlign = "left";
    context.fillText(clip(context, counter.label, labelWidth - 8), 4, counter.top + 9);
    context.fillStyle = "#57606a";
    context.fillText("max " + counterValue(counter, counter.max), 4, counter.top + 24);
    const samples = counter.samples;
    let first = Math.max(0, lowerBound(samples, view.start, function (s) { return s.time; }) - 1);
    const columns = [];
    for (let k = first; k < samples.length && samples[k].time <= view.end; k++) {
      const x = Math.max(labelWidth, timeToX(samples[k].time));
      const column = Math.floor(x);
      const previous = columns[columns.length - 1];
      if (previous && previous.column === column) {
        if (samples[k].total >= previous.peak.total) previous.peak = samples[k];
        previous.last = samples[k];
      } else {
        columns.push({ column: column, x: x, peak: samples[k], last: samples[k] });
      }
    }
    context.save();
    context.beginPath();
    context.rect(labelWidth, counter.top, plotWidth, counter.height);
    context.clip();
    counter.series.forEach(function (series, s) {
      context.fillStyle = seriesColour(counter, s);
      for (let c = 0; c < columns.length; c++) {
        const x0 = columns[c].x;
        const x1 = c + 1 < columns.length ? columns[c + 1].x : labelWidth + plotWidth;
        // The column's peak fills its own pixel; after it, its last sample holds.
        for (const [sample, from, to] of [[columns[c].peak, x0, Math.min(x1, x0 + 1)],
                                          [columns[c].last, Math.min(x1, x0 + 1), x1]]) {
          if (to <= from) continue;
          let below = 0;
          for (let q = 0; q < s; q++) below += Math.max(0, sample.stack[q]);
          const value = Math.max(0, sample.stack[s]);
          if (value <= 0) continue;
          // Whole pixels, so that neighbouring columns leave no seams.
          context.fillRect(Math.floor(from), bottom - (below + value) * scale, Math.ceil(to) - Math.floor(from),
                           value * scale);
        }
      }
    });
    context.restore();
    context.textAlign = "right";
    let x = labelWidth + plotWidth - 4;
    for (let s = counter.series.length - 1; s >= 0; s--) {
      const name = counter.series[s];
      context.fillStyle = seriesColour(counter, s);
      context.fillText(name, x, counter.top + 8);
      x -= context.measureText(name).width + 12;
      if (x < labelWidth + 40) break;
    }
  }

  // What is under the pointer: a span, an instant, or a counter's values.
  function hitAt(px, py) {
    if (px < labelWidth || px > labelWidth + plotWidth) return null;
    const time = xToTime(px);
    const tolerance = 3 * (view.end - view.start) / plotWidth;
    for (const owner of model.lanes) {
      if (py < owner.top || py >= owner.top + owner.height) continue;
      const d = Math.floor((py - owner.top) / rowHeight);
      if (d < owner.visibleRows) {
        const row = owner.rows[d];
        const k = lowerBound(row, time - tolerance, function (span) { return span.start + span.dur; });
        let best = null;
        for (let q = k; q < row.length && row[q].start <= time + tolerance; q++) {
          const distance = time < row[q].start ? row[q].start - time : Math.max(0, time - row[q].start - row[q].dur);
          if (!best || distance < best.distance) best = { span: row[q], distance: distance };
        }
        if (best) return { span: best.span, lane: owner };
      }
      let nearest = null;
      for (const instant of owner.instants) {
        const distance = Math.abs(instant.time - time);
        if (distance <= tolerance && (!nearest || distance < nearest.distance)) nearest = { instant: instant, distance: distance };
      }
      if (nearest) return { instant: nearest.instant, lane: owner };
      return null;
    }
    for (const counter of model.counters) {
      if (py < counter.top || py >= counter.top + counter.height) continue;
      const k = lowerBound(counter.samples, time, function (s) { return s.time; });
      const sample = counter.samples[k < counter.samples.length && counter.samples[k].time === time ? k : k - 1];
      return sample ? { counter: counter, sample: sample } : null;
    }
    return null;
  }

  function argsText(args) {
    const lines = [];
    for (const key of Object.keys(args).slice(0, 14)) {
      let value = typeof args[key] === "object" ? JSON.stringify(args[key]) : String(args[key]);
      if (value.length > 160) value = value.slice(0, 157) + "…";
      lines.push("  " + key + ": " + value);
    }
    if (Object.keys(args).length > 14) lines.push("  … " + (Object.keys(args).length - 14) + " more");
    return lines.length > 0 ? "\nargs:\n" + lines.join("\n") : "";
  }

  function describeHit(hit) {
    if (hit.span) {
      const span = hit.span;
      return span.name + "\ncategory " + (span.cat || "(none)") + ", " + hit.lane.label + "\nstart " +
             formatMs(span.start / 1000) + ", duration " + formatMs(span.dur / 1000) +
             (span.unclosed ? " (never ended: drawn to the end of the trace)" : "") + argsText(span.args);
    }
    if (hit.instant) {
      return hit.instant.name + " (instant)\ncategory " + (hit.instant.cat || "(none)") + ", at " +
             formatMs(hit.instant.time / 1000) + argsText(hit.instant.args);
    }
    const lines = [hit.counter.label + " at " + formatMs(hit.sample.time / 1000)];
    hit.counter.series.forEach(function (series, s) { lines.push("  " + series + ": " + counterValue(hit.counter, hit.sample.stack[s])); });
    if (hit.counter.series.length > 1) lines.push("  total: " + counterValue(hit.counter, hit.sample.total));
    return lines.join("\n");
  }

  function canvasPoint(event) {
    const rect = canvas.getBoundingClientRect();
    return { x: event.clientX - rect.left, y: event.clientY - rect.top };
  }
  function setView(start, end) {
    const minimum = 1e-3;  // 1 ns
    if (end - start < minimum) { const middle = (start + end) / 2; start = middle - minimum / 2; end = middle + minimum / 2; }
    view = { start: Math.max(full.start, start), end: Math.min(full.end, end) };
    if (view.end <= view.start) view = { start: full.start, end: full.end };
    draw();
  }
  canvas.addEventListener("mousedown", function (event) {
    const point = canvasPoint(event);
    if (point.x < labelWidth) return;
    selection = { from: point.x, to: point.x };
  });
  canvas.addEventListener("mousemove", function (event) {
    const point = canvasPoint(event);
    if (selection) {
      selection.to = Math.max(labelWidth, Math.min(labelWidth + plotWidth, point.x));
      hideTooltip();
      draw();
      return;
    }
    const hit = hitAt(point.x, point.y);
    if (hit) showTooltip(event.clientX, event.clientY, describeHit(hit)); else hideTooltip();
  });
  canvas.addEventListener("mouseup", function () {
    if (!selection) return;
    const from = Math.min(selection.from, selection.to);
    const to = Math.max(selection.from, selection.to);
    selection = null;
    if (to - from >= 3) setView(xToTime(from), xToTime(to)); else draw();
  });
  canvas.addEventListener("mouseleave", function () {
    hideTooltip();
    if (selection) { selection = null; draw(); }
  });
  canvas.addEventListener("wheel", function (event) {
    const point = canvasPoint(event);
    if (point.x < labelWidth) return;
    event.preventDefault();
    const anchor = xToTime(point.x);
    const factor = Math.pow(1.0015, event.deltaY);  // a notch (100) zooms by about 1.16
    setView(anchor - (anchor - view.start) * factor, anchor + (view.end - anchor) * factor);
  }, { passive: false });
  document.getElementById("reset").addEventListener("click", function () { setView(full.start, full.end); });
  window.addEventListener("resize", draw);

  canvas.setAttribute("data-span-count", String(model.spanCount));
  canvas.setAttribute("data-lane-count", String(model.lanes.length));
  canvas.setAttribute("data-counter-count", String(model.counters.length));
  canvas.setAttribute("data-sample-count", String(model.sampleCount));
  canvas.setAttribute("data-instant-count", String(model.instantCount));
  const notes = [];
  if (skippedPhases.length > 0) {
    const counts = Object.assign({}, data.skipped || {});
    for (const ph of Object.keys(model.skipped)) counts[ph] = (counts[ph] || 0) + model.skipped[ph];
    notes.push("not drawn: " + Object.keys(counts).map(function (ph) { return counts[ph] + " '" + ph + "' events"; }).join(", ") +
               " (flows, async and object events, samples)");
  }
  if (model.invalid > 0) notes.push(model.invalid + " events without a numeric ts skipped");
  if (model.unmatchedEnds > 0) notes.push(model.unmatchedEnds + " E events without a B");
  if (model.unclosedBegins > 0) notes.push(model.unclosedBegins + " B events never ended (drawn to the end)");
  document.getElementById("trace-note").textContent =
      "Lanes are threads (process / thread), spans nest by time; counter tracks stack their series. " + notes.join("; ");
  // For tests and scripting: where a span is on screen, so a synthetic mouse event can hover it.
  window.vramlabTrace = {
    model: model,
    pointOfSpan: function (laneIndex, spanIndex) {
      const owner = model.lanes[laneIndex];
      const span = owner && owner.spans[spanIndex];
      if (!span || span.depth >= owner.visibleRows) return null;
      const middle = Math.max(view.start, Math.min(view.end, span.start + span.dur / 2));
      const rect = canvas.getBoundingClientRect();
      return { clientX: rect.left + timeToX(middle), clientY: rect.top + owner.top + span.depth * rowHeight + rowHeight / 2 };
    }
  };
  draw();
}

if (typeof document !== "undefined") main();
