// Checks the trace page's script under node (no browser needed).
// Usage: node check_trace_script.js PAGE_SCRIPT.js DATA.json EXPECTED.json
// PAGE_SCRIPT.js is the page's <script> (it exports its functions under node), DATA.json the data
// embedded in the page, EXPECTED.json the layout worked out by brute force in C++
// (tests/report/example_trace.h: expected_trace_layout). Then the drawing code runs against a stub
// DOM, and hovering, dragging, the wheel and the reset button must work and move the view.
// Exits non-zero with a message on the first mismatch.
"use strict";
const fs = require("fs");
const path = require("path");

const page = require(path.resolve(process.argv[2]));
const data = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const expected = JSON.parse(fs.readFileSync(process.argv[4], "utf8"));

function fail(message) {
  console.error("FAIL: " + message);
  process.exit(1);
}

const model = page.buildTraceModel(data.events);
for (const key of ["span_count", "lane_count", "counter_count", "sample_count", "instant_count"]) {
  const got = { span_count: model.spanCount, lane_count: model.lanes.length, counter_count: model.counters.length,
                sample_count: model.sampleCount, instant_count: model.instantCount }[key];
  if (got !== expected[key]) fail(key + ": page " + got + ", expected " + expected[key]);
}
// Optional expectations of hand-built traces: events the page could not read, E without B, B
// without E.
for (const [key, got] of [["invalid", model.invalid], ["unmatched_ends", model.unmatchedEnds],
                          ["unclosed_begins", model.unclosedBegins]]) {
  if (expected[key] !== undefined && got !== expected[key]) fail(key + ": page " + got + ", expected " + expected[key]);
}
const notDrawn = Object.values(data.skipped).reduce(function (a, b) { return a + b; }, 0) +
                 Object.values(model.skipped).reduce(function (a, b) { return a + b; }, 0);
if (notDrawn !== expected.not_drawn) fail("events not drawn: " + notDrawn + ", expected " + expected.not_drawn);

// Every span, its start, duration and nesting depth, lane by lane.
let worstTime = 0;
for (const lane of model.lanes) {
  const want = expected.lanes[lane.key] || [];
  if (lane.spans.length !== want.length) fail("lane " + lane.key + ": " + lane.spans.length + " spans, expected " + want.length);
  lane.spans.forEach(function (span, k) {
    const [name, start, dur, depth] = want[k];
    worstTime = Math.max(worstTime, Math.abs(span.start - start), Math.abs(span.dur - dur));
    if (span.name !== name || span.depth !== depth || Math.abs(span.start - start) > 1e-6 || Math.abs(span.dur - dur) > 1e-6) {
      fail("lane " + lane.key + " span " + k + ": page " + JSON.stringify([span.name, span.start, span.dur, span.depth]) +
           ", expected " + JSON.stringify(want[k]));
    }
  });
  // Rows hold spans that do not overlap, sorted by start (the bisection in drawing relies on it).
  lane.rows.forEach(function (row, d) {
    for (let k = 1; k < row.length; k++) {
      if (row[k].start < row[k - 1].start + row[k - 1].dur - 1e-9) fail("lane " + lane.key + " row " + d + " overlaps at " + k);
    }
  });
}
for (const counter of model.counters) {
  const want = expected.counters[counter.key];
  if (!want) fail("unexpected counter " + counter.key);
  counter.samples.forEach(function (sample, k) {
    if (Math.abs(sample.total - want[k]) > 1e-6 * Math.max(1, want[k])) fail("counter " + counter.key + " sample " + k + ": total " + sample.total + ", expected " + want[k]);
  });
}

// The drawing code against a stub DOM (canvas calls are no-ops; measureText is 6 px a character).
function stubElement(id) {
  return {
    id: id, className: "", style: {}, children: [], listeners: {}, attributes: {}, width: 0, height: 0,
    clientWidth: 1000, text: "",
    get textContent() { return this.text; },
    set textContent(value) { this.text = value; this.children = []; },
    appendChild: function (child) { this.children.push(child); return child; },
    addEventListener: function (type, handler) { this.listeners[type] = handler; },
    setAttribute: function (name, value) { this.attributes[name] = String(value); },
    getBoundingClientRect: function () { return { left: 0, top: 0, width: 1000, height: 600 }; },
    getContext: function () {
      return new Proxy({ measureText: function (text) { return { width: String(text).length * 6 }; } }, {
        get: function (target, name) { return name in target ? target[name] : function () {}; },
        set: function (target, name, value) { target[name] = value; return true; }
      });
    }
  };
}
const elements = {};
global.window = { devicePixelRatio: 2, innerWidth: 1200, listeners: {},
                  addEventListener: function (type, handler) { this.listeners[type] = handler; } };
global.document = {
  getElementById: function (id) {
    if (!elements[id]) {
      elements[id] = stubElement(id);
      if (id === "vramlab-data") elements[id].text = fs.readFileSync(process.argv[3], "utf8");
    }
    return elements[id];
  },
  createElement: function (tag) { return stubElement(tag); },
  createTextNode: function (text) { return { textContent: text }; }
};
page.main();
const canvas = elements.trace;
const attributes = canvas.attributes;
if (elements.cards.children.length < 4) fail("summary cards missing");
if (attributes["data-span-count"] !== String(expected.span_count)) fail("data-span-count " + attributes["data-span-count"]);
const drawn = Number(attributes["data-drawn-spans"]);
if (expected.span_count > 0 && !(drawn > 0 && drawn <= expected.span_count)) fail("drew " + drawn + " of " + expected.span_count + " spans");
const hooks = global.window.vramlabTrace;
// Hover the middle of every span of the first lane's top row: the tooltip names it.
let hovered = 0;
for (let laneIndex = 0; laneIndex < model.lanes.length; laneIndex++) {
  const lane = hooks.model.lanes[laneIndex];
  for (let k = 0; k < lane.spans.length && hovered < 200; k++) {
    const span = lane.spans[k];
    const point = hooks.pointOfSpan(laneIndex, k);
    if (!point || span.dur === 0) continue;
    canvas.listeners.mousemove(point);
    if (elements.tooltip.style.display !== "block") fail("hovering span " + span.name + " showed nothing");
    // Spans narrower than the hover tolerance may yield a neighbour; wide ones must be exact.
    const widthPx = span.dur / (hooks.model.duration || 1) * (1000 - 182);
    if (widthPx > 8 && !elements.tooltip.text.startsWith(span.name + "\n")) {
      fail("hovering span '" + span.name + "' showed '" + elements.tooltip.text.split("\n")[0] + "'");
    }
    hovered += 1;
  }
}
if (expected.span_count > 0 && hovered === 0) fail("no span could be hovered");
// The wheel zooms in around the pointer, a drag zooms to its range, reset restores everything.
const fullStart = Number(attributes["data-view-start-ms"]);
const fullEnd = Number(attributes["data-view-end-ms"]);
// (A trace of no length has nothing to zoom into: the view is already the 1 ns minimum.)
if (model.duration > 0) {
  canvas.listeners.wheel({ clientX: 600, clientY: 50, deltaY: -300, preventDefault: function () {} });
  const zoomedStart = Number(attributes["data-view-start-ms"]);
  const zoomedEnd = Number(attributes["data-view-end-ms"]);
  if (!(zoomedEnd - zoomedStart < 0.7 * (fullEnd - fullStart))) fail("the wheel did not zoom in: " + zoomedStart + ".." + zoomedEnd);
  canvas.listeners.mousedown({ clientX: 300, clientY: 60 });
  canvas.listeners.mousemove({ clientX: 500, clientY: 60 });
  canvas.listeners.mouseup({ clientX: 500, clientY: 60 });
  const draggedStart = Number(attributes["data-view-start-ms"]);
  const draggedEnd = Number(attributes["data-view-end-ms"]);
  const plotWidth = 1000 - 170 - 12;
  const wantStart = zoomedStart + (300 - 170) / plotWidth * (zoomedEnd - zoomedStart);
  const wantEnd = zoomedStart + (500 - 170) / plotWidth * (zoomedEnd - zoomedStart);
  if (Math.abs(draggedStart - wantStart) > 1e-9 * Math.max(1, fullEnd) || Math.abs(draggedEnd - wantEnd) > 1e-9 * Math.max(1, fullEnd)) {
    fail("drag zoomed to " + draggedStart + ".." + draggedEnd + ", expected " + wantStart + ".." + wantEnd);
  }
}
elements.reset.listeners.click();
if (Number(attributes["data-view-start-ms"]) !== fullStart || Number(attributes["data-view-end-ms"]) !== fullEnd) fail("reset did not restore the full view");
window.listeners.resize();
// Counter tracks answer a hover with their values.
for (const counter of hooks.model.counters) {
  canvas.listeners.mousemove({ clientX: 900, clientY: counter.top + 40 });
  if (!elements.tooltip.text.startsWith(counter.label + " at ")) fail("hovering counter " + counter.label + " showed '" + elements.tooltip.text + "'");
}
console.log("OK: " + model.spanCount + " spans on " + model.lanes.length + " lanes, " + model.counters.length +
            " counters, " + model.instantCount + " instants; worst time difference " + worstTime + " us");
