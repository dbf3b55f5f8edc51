// Checks the data functions of the memory timeline page's script under node (no browser needed).
// Usage: node check_timeline_script.js PAGE_SCRIPT.js MODEL.json EXPECTED.json
// PAGE_SCRIPT.js is the page's <script> (it exports its functions under node), MODEL.json the data
// embedded in the page, EXPECTED.json {segments: [[addr, size]], blocks: [[addr, size]]} taken from
// the snapshot's final "segments", and owners: [[event index, tensor, module, phase,
// [[filename, line, function], ...]]] read from the snapshot's alloc entries by the C++ test.
// Exits non-zero with a message on the first mismatch.
"use strict";
const fs = require("fs");
const path = require("path");

const page = require(path.resolve(process.argv[2]));
const model = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const expected = JSON.parse(fs.readFileSync(process.argv[4], "utf8"));

function fail(message) {
  console.error("FAIL: " + message);
  process.exit(1);
}

const eventCount = model.events.action.length;
const built = page.buildAllocations(model);

// Brute force: allocated bytes per state from the intervals.
const liveBytes = new Float64Array(eventCount + 1);
for (const a of built.allocations) {
  for (let s = a.start; s < a.end; s++) liveBytes[s] += a.size;
}
let brutePeak = 0;
for (let s = 0; s <= eventCount; s++) brutePeak = Math.max(brutePeak, liveBytes[s]);
if (brutePeak !== model.summary.peak_allocated_bytes) {
  fail("brute-force peak " + brutePeak + " != C++ summary peak " + model.summary.peak_allocated_bytes);
}

for (const maxDrawn of [2000, 5, 0]) {
  const timeline = page.buildTimeline(model, maxDrawn);
  if (timeline.peakBytes !== model.summary.peak_allocated_bytes) {
    fail("maxDrawn " + maxDrawn + ": timeline peak " + timeline.peakBytes + " != " + model.summary.peak_allocated_bytes);
  }
  // Every state for small traces, about 400 spread over the trace for big ones.
  const stride = Math.max(1, Math.floor(eventCount / 400));
  for (let s = 0; s <= eventCount; s++) {
    const total = timeline.stackTop[s] + timeline.summarized[s];
    if (total !== liveBytes[s]) fail("maxDrawn " + maxDrawn + ": state " + s + " stacks " + total + " bytes, live " + liveBytes[s]);
    if (s % stride !== 0 && s !== timeline.peakState) continue;
    // Drawn bands at this state tile [0, stackTop) without gaps or overlaps.
    const spans = [];
    for (const band of timeline.bands) {
      const a = timeline.allocations[band.allocation];
      if (s >= a.start && s < a.end) spans.push([page.bandOffsetAt(band, s), a.size]);
    }
    spans.sort(function (x, y) { return x[0] - y[0]; });
    let cursor = 0;
    for (const [offset, size] of spans) {
      if (offset !== cursor) fail("maxDrawn " + maxDrawn + ": state " + s + " band at " + offset + ", expected " + cursor);
      cursor += size;
    }
    if (cursor !== timeline.stackTop[s]) fail("state " + s + ": bands end at " + cursor + ", stack top " + timeline.stackTop[s]);
  }
  if (timeline.drawnCount > Math.max(maxDrawn, 0)) fail("drew " + timeline.drawnCount + " bands, limit " + maxDrawn);
}

function sortedPairs(map, pick) {
  return Array.from(map).map(pick).sort(function (x, y) { return x[0] - y[0]; });
}
// A small odd checkpoint interval exercises seeking between checkpoints.
const replay = new page.SegmentReplay(model, eventCount > 5000 ? 997 : 7);
const reference = new page.SegmentReplay(model, eventCount + 1);
const final = replay.stateAt(eventCount);
const finalSegments = sortedPairs(final.segments, function (e) { return [e[0], e[1]]; });
const finalBlocks = sortedPairs(final.blocks, function (e) { return [e[0], e[1][0]]; });
if (JSON.stringify(finalSegments) !== JSON.stringify(expected.segments)) {
  fail("replayed final segments " + JSON.stringify(finalSegments).slice(0, 300) + " != snapshot " +
       JSON.stringify(expected.segments).slice(0, 300));
}
if (JSON.stringify(finalBlocks) !== JSON.stringify(expected.blocks)) {
  fail("replayed final blocks differ from the snapshot's active blocks (" + finalBlocks.length + " vs " +
       expected.blocks.length + ")");
}
// Interned owners decode to exactly what each alloc entry of the snapshot said.
for (const [eventIndex, tensor, module, phase, frames] of expected.owners) {
  const info = page.ownerInfo(model, model.events.owner[eventIndex]);
  const got = JSON.stringify([info.tensor, info.module, info.phase,
                              info.stack.map(function (f) { return [f.file, f.line, f.name]; })]);
  const want = JSON.stringify([tensor, module, phase, frames]);
  if (got !== want) fail("event " + eventIndex + ": owner decodes to " + got.slice(0, 400) + ", snapshot says " + want.slice(0, 400));
}
for (let trial = 0; trial < 25; trial++) {
  const s = Math.floor((trial / 24) * eventCount);
  const a = replay.stateAt(s);
  const b = reference.stateAt(s);
  if (JSON.stringify(sortedPairs(a.blocks, function (e) { return e; })) !==
      JSON.stringify(sortedPairs(b.blocks, function (e) { return e; }))) {
    fail("checkpointed replay differs from a full replay at state " + s);
  }
  const layout = page.layoutSegments(a);
  let allocatedInSegments = 0;
  for (const row of layout.rows) {
    allocatedInSegments += row.allocated;
    if (row.largestGap > row.size) fail("state " + s + ": gap larger than its segment");
  }
  if (allocatedInSegments + 0 > liveBytes[s]) fail("state " + s + ": segments hold more than is live");
}
// Runs the page's drawing code against a stub DOM (every canvas call is a no-op) to catch run-time
// errors a syntax check cannot: it must build the summary, legend and tables, draw both canvases,
// and survive hovering, clicking and moving the slider.
function stubElement(id) {
  const node = {
    id: id, className: "", value: "0", max: "0", style: {}, children: [], listeners: {}, attributes: {},
    width: 0, height: 0, clientWidth: 900, title: "",
    get textContent() { return this.text || ""; },
    set textContent(value) { this.text = value; this.children = []; },
    appendChild: function (child) { this.children.push(child); return child; },
    setAttribute: function (name, value) { this.attributes[name] = String(value); },
    addEventListener: function (type, handler) { this.listeners[type] = handler; },
    getBoundingClientRect: function () { return { left: 0, top: 0, width: 900, height: 420 }; },
    getContext: function () {
      return new Proxy({}, {
        get: function (target, name) { return name in target ? target[name] : function () {}; },
        set: function (target, name, value) { target[name] = value; return true; }
      });
    }
  };
  return node;
}
const elements = {};
global.window = { devicePixelRatio: 2, innerWidth: 1200, listeners: {},
                  addEventListener: function (type, handler) { this.listeners[type] = handler; } };
global.document = {
  getElementById: function (id) {
    if (!elements[id]) {
      elements[id] = stubElement(id);
      if (id === "vramlab-data") elements[id].textContent = fs.readFileSync(process.argv[3], "utf8");
    }
    return elements[id];
  },
  createElement: function (tag) { return stubElement(tag); },
  createTextNode: function (text) { return { textContent: text }; }
};
page.main();
if (elements.cards.children.length < 6) fail("summary cards missing: " + elements.cards.children.length);
if (elements.title.textContent !== model.title) fail("title not shown");
if (elements.slider.max !== String(eventCount)) fail("slider max " + elements.slider.max);
let timelineHits = 0;
let segmentHits = 0;
for (let x = 0; x < 900; x += 37) {
  for (let y = 0; y < 420; y += 7) {
    elements.timeline.listeners.mousemove({ clientX: x, clientY: y });
    if (elements.tooltip.style.display === "block") timelineHits += 1;
    elements.segments.listeners.mousemove({ clientX: x, clientY: y });
    if (elements.tooltip.style.display === "block") segmentHits += 1;
  }
}
if (model.summary.peak_allocated_bytes > 0 && timelineHits === 0) fail("hovering the timeline never hit a band");
// Hovering the largest allocation through the page's own pointOf fills the details panel with
// its owner and every frame of its stack, innermost first; a click pins it against later hovers.
const hooks = global.window.vramlabTimeline;
const allocations = hooks.allocations;
if (elements.timeline.attributes["data-allocations"] !== String(built.allocations.length)) {
  fail("data-allocations " + elements.timeline.attributes["data-allocations"] + ", expected " + built.allocations.length);
}
if (allocations.length > 0) {
  let largest = 0;
  for (let k = 1; k < allocations.length; k++) if (allocations[k].size > allocations[largest].size) largest = k;
  const point = hooks.pointOf(largest);
  if (!point) fail("pointOf(largest allocation) is null");
  elements.timeline.listeners.mousemove(point);
  const details = elements.details;
  if (details.attributes["data-state"] !== "hover") fail("details state after hover: " + details.attributes["data-state"]);
  const info = page.ownerInfo(model, allocations[largest].owner);
  const list = details.children.find(function (child) { return child.className === "frames"; });
  if (info.stack.length > 0) {
    if (!list) fail("hovering an allocation with a stack showed no frame list");
    const shown = list.children.map(function (item) { return item.attributes["data-function"]; });
    const want = info.stack.map(function (f) { return f.name; });
    if (JSON.stringify(shown) !== JSON.stringify(want)) fail("frames shown " + JSON.stringify(shown) + ", expected " + JSON.stringify(want));
  }
  elements.timeline.listeners.click(point);
  if (details.attributes["data-state"] !== "pinned") fail("a click did not pin the details");
  const other = hooks.pointOf(allocations.findIndex(function (a, k) { return k !== largest && a.band !== undefined; }));
  if (other) {
    elements.timeline.listeners.mousemove(other);
    if (details.attributes["data-state"] !== "pinned") fail("hovering another allocation replaced the pinned one");
  }
  elements.timeline.listeners.click(point);
  if (details.attributes["data-state"] !== "empty") fail("a second click did not unpin");
}
if (model.initial_segments.length + model.summary.segment_alloc_count > 0 && segmentHits === 0) {
  fail("hovering the segment view never hit a segment");
}
elements.timeline.listeners.click({ clientX: 450, clientY: 300 });
for (const value of [0, Math.floor(eventCount / 2), eventCount]) {
  elements.slider.value = String(value);
  elements.slider.listeners.input();
}
elements.prev.listeners.click();
elements.next.listeners.click();
window.listeners.resize();
if (!elements["state-stats"].textContent.includes("segments")) fail("state statistics not shown");

if (page.formatBytes(1536) !== "1.50 KiB" || page.formatBytes(512) !== "512 B") fail("formatBytes");
console.log("OK: " + eventCount + " events, " + built.allocations.length + " allocations, peak " +
            page.formatBytes(brutePeak));
