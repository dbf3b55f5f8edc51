"use strict";

// ---- Data model (no DOM): shared with tests/report/check_timeline_script.js under node. ----

function formatBytes(bytes) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  if (bytes < 1024) return Math.round(bytes) + " B";
  let value = bytes;
  let unit = 0;
  while (value >= 1023.995 && unit + 1 < units.length) { value /= 1024; unit += 1; }
  return value.toFixed(2) + " " + units[unit];
}

function hexAddress(address) { return "0x" + address.toString(16); }

function actionIndex(data) {
  const index = {};
  data.actions.forEach(function (name, i) { index[name] = i; });
  return index;
}

// Allocations as intervals over states: state 0 is before the first event, state i + 1 after
// event i. An allocation is live in states [start, end).
function buildAllocations(data) {
  const events = data.events;
  const count = events.action.length;
  const A = actionIndex(data);
  const allocations = [];
  const live = new Map();
  const allocAt = new Int32Array(count).fill(-1);
  const freeAt = new Int32Array(count).fill(-1);
  for (const block of data.initial_blocks) {
    live.set(block[0], allocations.length);
    allocations.push({ addr: block[0], size: block[1], category: block[2], owner: block[3],
                       start: 0, end: count + 1, allocEvent: -1, freeEvent: -1 });
  }
  for (let i = 0; i < count; i++) {
    const action = events.action[i];
    const addr = events.addr[i];
    if (action === A.alloc) {
      const previous = live.get(addr);
      if (previous !== undefined) { allocations[previous].end = i + 1; freeAt[i] = previous; }
      live.set(addr, allocations.length);
      allocAt[i] = allocations.length;
      allocations.push({ addr: addr, size: events.size[i], category: events.category[i], owner: events.owner[i],
                         start: i + 1, end: count + 1, allocEvent: i, freeEvent: -1 });
    } else if (action === A.free_completed) {
      const k = live.get(addr);
      if (k !== undefined) {
        allocations[k].end = i + 1;
        allocations[k].freeEvent = i;
        live.delete(addr);
        freeAt[i] = k;
      }
    }
  }
  return { allocations: allocations, allocAt: allocAt, freeAt: freeAt, stateCount: count + 1 };
}

// MemoryViz's layout: the `maxDrawn` largest allocations are bands stacked in allocation order
// (a new one goes on top, a freed one leaves and the bands above slide down); the others are
// summed into one "summarized" band on top of them.
function buildTimeline(data, maxDrawn) {
  const built = buildAllocations(data);
  const allocations = built.allocations;
  const stateCount = built.stateCount;
  const drawn = new Uint8Array(allocations.length);
  const bySize = allocations.map(function (_, i) { return i; });
  bySize.sort(function (a, b) { return allocations[b].size - allocations[a].size; });
  for (let i = 0; i < Math.min(maxDrawn, bySize.length); i++) drawn[bySize[i]] = 1;

  const stackTop = new Float64Array(stateCount);      // bytes in drawn bands per state
  const summarized = new Float64Array(stateCount);    // bytes in the summarized band per state
  const summarizedCount = new Int32Array(stateCount); // allocations in it per state
  const stack = [];
  let top = 0;
  let small = 0;
  let smallCount = 0;
  const bands = [];
  function push(k, state) {
    const a = allocations[k];
    if (!drawn[k]) { small += a.size; smallCount += 1; return; }
    a.band = bands.length;
    bands.push({ allocation: k, points: [[state, top]] });
    stack.push(k);
    top += a.size;
  }
  function remove(k, state) {
    const a = allocations[k];
    if (!drawn[k]) { small -= a.size; smallCount -= 1; return; }
    const position = stack.indexOf(k);
    if (position < 0) return;
    stack.splice(position, 1);
    top -= a.size;
    for (let q = position; q < stack.length; q++) {
      const band = bands[allocations[stack[q]].band];
      const offset = band.points[band.points.length - 1][1] - a.size;
      band.points.push([state, offset]);
    }
  }
  for (let k = 0; k < allocations.length && allocations[k].start === 0; k++) push(k, 0);
  stackTop[0] = top;
  summarized[0] = small;
  summarizedCount[0] = smallCount;
  for (let i = 0; i + 1 < stateCount; i++) {
    const state = i + 1;
    if (built.freeAt[i] >= 0) remove(built.freeAt[i], state);
    if (built.allocAt[i] >= 0) push(built.allocAt[i], state);
    stackTop[state] = top;
    summarized[state] = small;
    summarizedCount[state] = smallCount;
  }
  let peak = 0;
  let peakState = 0;
  for (let s = 0; s < stateCount; s++) {
    const total = stackTop[s] + summarized[s];
    if (total > peak) { peak = total; peakState = s; }
  }
  return { allocations: allocations, bands: bands, stackTop: stackTop, summarized: summarized,
           summarizedCount: summarizedCount, stateCount: stateCount, peakBytes: peak, peakState: peakState,
           drawnCount: bands.length };
}

// Offset of a band at a state: the last point at or before it.
function bandOffsetAt(band, state) {
  let lo = 0;
  let hi = band.points.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (band.points[mid][0] <= state) lo = mid; else hi = mid - 1;
  }
  return band.points[lo][1];
}

// Segments and live blocks after the first `state` events, by replay from the reconstructed
// initial state, with a checkpoint every `interval` states so that seeking is fast.
function SegmentReplay(data, interval) {
  this.data = data;
  this.A = actionIndex(data);
  this.interval = interval || 1000;
  this.count = data.events.action.length;
  this.checkpoints = [];
  const segments = new Map(data.initial_segments.map(function (s) { return [s[0], s[1]]; }));
  const blocks = new Map(data.initial_blocks.map(function (b) { return [b[0], [b[1], b[2], b[3]]]; }));
  for (let state = 0; state <= this.count; state++) {
    if (state % this.interval === 0) {
      this.checkpoints.push({ segments: Array.from(segments), blocks: Array.from(blocks) });
    }
    if (state < this.count) this.apply(segments, blocks, state);
  }
}

SegmentReplay.prototype.apply = function (segments, blocks, i) {
  const e = this.data.events;
  const A = this.A;
  const action = e.action[i];
  const addr = e.addr[i];
  const size = e.size[i];
  if (action === A.alloc) {
    blocks.set(addr, [size, e.category[i], e.owner[i]]);
  } else if (action === A.free_completed) {
    blocks.delete(addr);
  } else if (action === A.segment_alloc) {
    segments.set(addr, size);
  } else if (action === A.segment_free) {
    segments.delete(addr);
  } else if (action === A.segment_map) {
    for (const [start, bytes] of segments) {
      if (start + bytes === addr) { segments.set(start, bytes + size); return; }
    }
    segments.set(addr, size);
  } else if (action === A.segment_unmap) {
    if (segments.has(addr) && segments.get(addr) <= size) { segments.delete(addr); return; }
    for (const [start, bytes] of segments) {
      if (start < addr && start + bytes === addr + size) { segments.set(start, bytes - size); return; }
    }
  }
};

SegmentReplay.prototype.stateAt = function (state) {
  const clamped = Math.max(0, Math.min(this.count, state));
  const checkpoint = this.checkpoints[Math.floor(clamped / this.interval)];
  const segments = new Map(checkpoint.segments);
  const blocks = new Map(checkpoint.blocks);
  for (let i = Math.floor(clamped / this.interval) * this.interval; i < clamped; i++) {
    this.apply(segments, blocks, i);
  }
  return { segments: segments, blocks: blocks };
};

// Per-segment layout of a state: blocks inside each segment, allocated bytes, free gaps.
function layoutSegments(state) {
  const segments = Array.from(state.segments).sort(function (a, b) { return a[0] - b[0]; });
  const blocks = Array.from(state.blocks).sort(function (a, b) { return a[0] - b[0]; });
  const rows = [];
  let b = 0;
  let unplaced = 0;
  for (const [address, size] of segments) {
    while (b < blocks.length && blocks[b][0] < address) { unplaced += 1; b += 1; }
    const row = { address: address, size: size, blocks: [], allocated: 0, largestGap: 0, freeBytes: 0 };
    let cursor = address;
    while (b < blocks.length && blocks[b][0] < address + size) {
      const block = blocks[b];
      row.blocks.push(block);
      row.allocated += block[1][0];
      row.largestGap = Math.max(row.largestGap, block[0] - cursor);
      cursor = Math.max(cursor, block[0] + block[1][0]);
      b += 1;
    }
    row.largestGap = Math.max(row.largestGap, address + size - cursor);
    row.freeBytes = Math.max(0, size - row.allocated);
    rows.push(row);
  }
  unplaced += blocks.length - b;
  return { rows: rows, unplaced: unplaced };
}

// Index of the bracket that closes the one at `open` ("(" or "<" or "{"), or -1.
function closingBracket(text, open) {
  const pairs = { "(": ")", "<": ">", "{": "}", "[": "]" };
  const stack = [];
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (pairs[c] !== undefined) stack.push(pairs[c]);
    else if (stack.length > 0 && c === stack[stack.length - 1]) { stack.pop(); if (stack.length === 0) return i; }
  }
  return -1;
}

// A demangled C++ function name shortened for a stack listing: no return type, no parameter
// list, template arguments as "<…>", lambdas as "{lambda#N}", and only the last two scopes
// ("vramlab::nn::Linear::forward(vramlab::Tensor const&) const" -> "Linear::forward"). Names
// that are not C++ (Python functions, raw addresses) come back unchanged.
function shortFunctionName(name) {
  let text = String(name || "").trim();
  if (text === "") return "(unknown)";
  // Operators whose names contain brackets would unbalance the parsing below.
  const operators = [];
  text = text.replace(/operator\s*(<=>|<<=|>>=|<<|>>|->\*|->|<=|>=|<|>|\(\)|\[\])/g, function (match) {
    operators.push(match.replace(/\s+/g, ""));
    return "\u0001" + (operators.length - 1) + "\u0002";
  }).replace(/\s+</g, "<");
  let out = "";
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "{") {
      // {lambda(int)#1} keeps its number, not its parameters.
      const end = closingBracket(text, i);
      if (end < 0) { out += text.slice(i); break; }
      const inner = text.slice(i + 1, end);
      const lambda = /^lambda\(.*\)(#\d+)$/.exec(inner);
      if (depth === 0) out += lambda ? "{lambda" + lambda[1] + "}" : "{" + inner + "}";
      i = end;
    } else if (c === "<" || c === "(") {
      const end = closingBracket(text, i);
      if (end < 0) { if (depth === 0) out += text.slice(i); break; }
      const inner = text.slice(i + 1, end);
      if (depth === 0) {
        if (c === "<") out += "<…>";
        else if (inner === "anonymous namespace") out += "(anonymous namespace)";
        else out += "\u0003";  // a parameter list: cut below
      }
      i = end;
    } else if (depth === 0) {
      out += c;
    }
  }
  // Parameters end the name; what follows them (const, noexcept, a return type's tail) goes too.
  // A leading return type is what precedes the last space outside brackets.
  const parameters = out.lastIndexOf("\u0003");
  if (parameters >= 0) out = out.slice(0, parameters);
  out = out.replace(/\u0003/g, "");
  const space = out.lastIndexOf(" ");
  if (space >= 0 && !out.slice(0, space).endsWith("(anonymous")) out = out.slice(space + 1);
  const scopes = out.split("::").filter(function (scope) { return scope !== "" && scope !== "(anonymous namespace)"; });
  let keep = 2;
  if (scopes.length >= 2 && /^\{lambda/.test(scopes[scopes.length - 2])) keep = 3;
  out = scopes.slice(-keep).join("::");
  out = out.replace(/\u0001(\d+)\u0002/g, function (_, k) { return operators[Number(k)]; });
  return out === "" ? String(name).trim() : out;
}

// "linear.cpp:42" from a frame's file and line ("" when neither is known).
function shortLocation(filename, line) {
  const file = String(filename || "");
  const base = file.slice(Math.max(file.lastIndexOf("/"), file.lastIndexOf("\\")) + 1);
  if (base === "" || base === "??") return line > 0 ? "line " + line : "";
  return line > 0 ? base + ":" + line : base;
}

// An owner's fields as strings, and its stack as [{name, short, file, line, location}].
function ownerInfo(data, ownerIndex) {
  const owner = data.owners[ownerIndex] || [0, 0, 0, 0];
  const strings = data.strings;
  const stack = (data.stacks[owner[3]] || []).map(function (frameIndex) {
    const frame = data.frames[frameIndex];
    const name = strings[frame[2]];
    return { name: name, short: shortFunctionName(name), file: strings[frame[0]], line: frame[1],
             location: shortLocation(strings[frame[0]], frame[1]) };
  });
  return { tensor: strings[owner[0]], module: strings[owner[1]], phase: strings[owner[2]], stack: stack };
}

if (typeof module !== "undefined" && module.exports) {
  module.exports = { formatBytes: formatBytes, buildAllocations: buildAllocations, buildTimeline: buildTimeline,
                     bandOffsetAt: bandOffsetAt, SegmentReplay: SegmentReplay, layoutSegments: layoutSegments,
                     shortFunctionName: shortFunctionName, shortLocation: shortLocation, ownerInfo: ownerInfo,
                     main: function () { main(); } };
}

// ---- Drawing (browser only). ----

function main() {
  const data = JSON.parse(document.getElementById("vramlab-data").textContent);
  const strings = data.strings;
  const colours = data.colours;
  const summary = data.summary;
  const eventCount = data.events.action.length;
  const tooltip = document.getElementById("tooltip");
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
    tooltip.style.left = Math.min(x + 14, window.innerWidth - 440) + "px";
    tooltip.style.top = (y + 14) + "px";
  }
  function hideTooltip() { tooltip.style.display = "none"; }
  function describe(category, owner) {
    const info = ownerInfo(data, owner);
    const headline = info.tensor || (info.stack.length > 0 ? info.stack[0].short : "(unnamed)");
    return headline + "  [" + data.categories[category] + "]" + (info.module ? "\n" + info.module : "") +
           (info.phase ? "  (" + info.phase + ")" : "");
  }

  // The details panel under the timeline: what memory_viz shows below its plot when one hovers or
  // selects an allocation. Hover replaces it; a click pins it until the next click or Escape.
  const details = document.getElementById("details");
  let pinned = null;
  function showDetails(a, how) {
    const info = ownerInfo(data, a.owner);
    details.textContent = "";
    details.setAttribute("data-state", how);
    const head = element("div", undefined, "details-head");
    head.appendChild(element("strong", info.tensor || "(unnamed)"));
    head.appendChild(document.createTextNode("  " + formatBytes(a.size) + " (" + a.size + " bytes), " +
                                             data.categories[a.category] + (how === "pinned" ? "  — pinned" : "")));
    details.appendChild(head);
    const facts = [["module", info.module || "(none)"], ["phase", info.phase || "(not recorded)"],
                   ["address", hexAddress(a.addr)]];
    if (a.allocEvent !== undefined) {
      facts.push(["allocated", a.allocEvent < 0 ? "before recording" : "at event #" + a.allocEvent]);
      facts.push(["freed", a.freeEvent < 0 ? "still live at the end" : "at event #" + a.freeEvent]);
    }
    const meta = element("div", undefined, "details-meta");
    for (const [what, value] of facts) {
      const item = element("span");
      item.appendChild(element("b", what + " "));
      item.appendChild(document.createTextNode(value));
      meta.appendChild(item);
    }
    details.appendChild(meta);
    if (info.stack.length === 0) {
      details.appendChild(element("div", "no call stack recorded for this allocation", "note"));
    } else {
      details.appendChild(element("div", "call stack, innermost first (" + info.stack.length +
                                         " frames; hover a frame for its full name)", "note"));
      const list = element("ol", undefined, "frames");
      for (const frame of info.stack) {
        const item = element("li");
        item.title = frame.name + (frame.file ? "\n" + frame.file + (frame.line > 0 ? ":" + frame.line : "") : "");
        item.setAttribute("data-function", frame.name);
        item.appendChild(element("span", frame.short, "function"));
        if (frame.location) item.appendChild(element("span", frame.location, "location"));
        list.appendChild(item);
      }
      details.appendChild(list);
    }
  }
  function clearDetails() {
    details.textContent = "Hover an allocation to see its tensor, module, phase and call stack; click to pin it.";
    details.setAttribute("data-state", "empty");
  }
  function hover(a) { if (!pinned) showDetails(a, "hover"); }
  function pin(a) {
    pinned = pinned === a ? null : a;
    if (pinned) showDetails(a, "pinned"); else clearDetails();
  }
  clearDetails();
  window.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && pinned) { pinned = null; clearDetails(); }
  });
  function setupCanvas(canvas, cssHeight) {
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth || 900;
    canvas.style.height = cssHeight + "px";
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(cssHeight * ratio);
    const context = canvas.getContext("2d");
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    return { context: context, width: width, height: cssHeight };
  }

  // Summary cards and tables.
  const cards = document.getElementById("cards");
  function card(value, what) {
    const node = element("div", undefined, "card");
    node.appendChild(element("div", value, "value"));
    node.appendChild(element("div", what, "what"));
    cards.appendChild(node);
  }
  function eventName(index) { return index < 0 ? "before the first event" : "at event #" + index; }
  card(formatBytes(summary.peak_allocated_bytes), "peak allocated, " + eventName(summary.peak_allocated_event));
  card(formatBytes(summary.peak_reserved_bytes), "peak reserved, " + eventName(summary.peak_reserved_event));
  card(formatBytes(summary.final_allocated_bytes), "allocated at the end");
  card(formatBytes(summary.final_reserved_bytes), "reserved at the end");
  card(String(summary.event_count), "trace events (" + summary.alloc_count + " allocs, " + summary.free_count + " frees)");
  card(String(summary.segment_alloc_count) + " / " + summary.segment_free_count, "segments allocated / freed");
  if (summary.oom_count > 0) card(String(summary.oom_count), "out-of-memory events");
  if (summary.inconsistent_event_count > 0) {
    card(String(summary.inconsistent_event_count), "events inconsistent with the final segments");
  }
  const categoryTable = document.getElementById("category-table");
  const head = element("tr");
  head.appendChild(element("th", "category"));
  head.appendChild(element("th", "bytes at peak", "num"));
  head.appendChild(element("th", "share", "num"));
  categoryTable.appendChild(head);
  for (const category of data.categories) {
    const bytes = summary.peak_allocated_bytes_by_category[category] || 0;
    if (bytes === 0) continue;
    const row = element("tr");
    const name = element("td");
    const swatch = element("span", undefined, "swatch");
    swatch.style.cssText = "display:inline-block;width:10px;height:10px;margin-right:6px;background:" +
                           colours[data.categories.indexOf(category)];
    name.appendChild(swatch);
    name.appendChild(document.createTextNode(category));
    row.appendChild(name);
    row.appendChild(element("td", formatBytes(bytes), "num"));
    row.appendChild(element("td", (100 * bytes / Math.max(1, summary.peak_allocated_bytes)).toFixed(1) + " %", "num"));
    categoryTable.appendChild(row);
  }
  document.getElementById("settings").textContent = JSON.stringify(data.allocator_settings, null, 2);
  const legend = document.getElementById("legend");
  data.categories.forEach(function (category, i) {
    const item = element("span");
    const swatch = element("span", undefined, "swatch");
    swatch.style.background = colours[i];
    item.appendChild(swatch);
    item.appendChild(document.createTextNode(category));
    legend.appendChild(item);
  });
  const summarizedItem = element("span");
  const summarizedSwatch = element("span", undefined, "swatch");
  summarizedSwatch.style.background = "#c8c8c8";
  summarizedItem.appendChild(summarizedSwatch);
  summarizedItem.appendChild(document.createTextNode("summarized (smaller allocations)"));
  legend.appendChild(summarizedItem);

  // (a) Active memory timeline.
  const timeline = buildTimeline(data, 2000);
  const timelineCanvas = document.getElementById("timeline");
  const margin = { left: 80, right: 16, top: 16, bottom: 28 };
  let plot = null;
  function drawTimeline() {
    const surface = setupCanvas(timelineCanvas, 420);
    const context = surface.context;
    const width = surface.width - margin.left - margin.right;
    const height = surface.height - margin.top - margin.bottom;
    const maxBytes = Math.max(1, timeline.peakBytes);
    const states = timeline.stateCount;
    const x = function (state) { return margin.left + width * state / states; };
    const y = function (bytes) { return margin.top + height - height * bytes / maxBytes; };
    plot = { x: x, y: y, width: width, height: height, maxBytes: maxBytes, states: states };
    context.clearRect(0, 0, surface.width, surface.height);
    context.font = "11px sans-serif";
    context.fillStyle = "#57606a";
    context.strokeStyle = "#eaeef2";
    for (let t = 0; t <= 5; t++) {
      const bytes = maxBytes * t / 5;
      context.beginPath();
      context.moveTo(margin.left, y(bytes));
      context.lineTo(margin.left + width, y(bytes));
      context.stroke();
      context.textAlign = "right";
      context.fillText(formatBytes(bytes), margin.left - 6, y(bytes) + 4);
    }
    context.textAlign = "center";
    for (let t = 0; t <= 8; t++) {
      const state = Math.round(states * t / 8);
      context.fillText(String(state), x(state), margin.top + height + 16);
    }
    for (const band of timeline.bands) {
      const a = timeline.allocations[band.allocation];
      const points = band.points;
      context.fillStyle = colours[a.category];
      context.beginPath();
      context.moveTo(x(points[0][0]), y(points[0][1]));
      for (let k = 1; k < points.length; k++) {
        context.lineTo(x(points[k][0]), y(points[k - 1][1]));
        context.lineTo(x(points[k][0]), y(points[k][1]));
      }
      const last = points[points.length - 1][1];
      context.lineTo(x(a.end), y(last));
      context.lineTo(x(a.end), y(last + a.size));
      for (let k = points.length - 1; k >= 1; k--) {
        context.lineTo(x(points[k][0]), y(points[k][1] + a.size));
        context.lineTo(x(points[k][0]), y(points[k - 1][1] + a.size));
      }
      context.lineTo(x(points[0][0]), y(points[0][1] + a.size));
      context.closePath();
      context.fill();
    }
    // Summarized band: one column per pixel (the maximum inside it) keeps 100k states cheap.
    context.fillStyle = "#c8c8c8";
    const columns = Math.max(1, Math.floor(width));
    for (let c = 0; c < columns; c++) {
      const first = Math.floor(states * c / columns);
      const end = Math.max(first + 1, Math.floor(states * (c + 1) / columns));
      let low = Infinity;
      let high = 0;
      for (let s = first; s < end && s < states; s++) {
        if (timeline.summarized[s] <= 0) continue;
        low = Math.min(low, timeline.stackTop[s]);
        high = Math.max(high, timeline.stackTop[s] + timeline.summarized[s]);
      }
      if (high > 0) context.fillRect(margin.left + width * c / columns, y(high), width / columns + 0.5, y(low) - y(high));
    }
    const peakX = x(timeline.peakState + 0.5);
    context.strokeStyle = "#b00000";
    context.setLineDash([5, 4]);
    context.beginPath();
    context.moveTo(peakX, margin.top);
    context.lineTo(peakX, margin.top + height);
    context.stroke();
    context.setLineDash([]);
    context.fillStyle = "#b00000";
    context.textAlign = peakX > margin.left + width / 2 ? "right" : "left";
    context.fillText("peak " + formatBytes(timeline.peakBytes) + " (state " + timeline.peakState + ")",
                     peakX + (context.textAlign === "right" ? -4 : 4), margin.top + 10);
  }
  function timelineHit(event) {
    if (!plot) return null;
    const rect = timelineCanvas.getBoundingClientRect();
    const state = Math.floor((event.clientX - rect.left - margin.left) / plot.width * plot.states);
    const bytes = (margin.top + plot.height - (event.clientY - rect.top)) / plot.height * plot.maxBytes;
    if (state < 0 || state >= plot.states || bytes < 0) return null;
    for (const band of timeline.bands) {
      const a = timeline.allocations[band.allocation];
      if (state < a.start || state >= a.end) continue;
      const offset = bandOffsetAt(band, state);
      if (bytes >= offset && bytes < offset + a.size) return { state: state, allocation: a };
    }
    if (bytes >= timeline.stackTop[state] && bytes < timeline.stackTop[state] + timeline.summarized[state]) {
      return { state: state, summarized: true };
    }
    return { state: state };
  }
  timelineCanvas.addEventListener("mousemove", function (event) {
    const hit = timelineHit(event);
    if (!hit || (!hit.allocation && !hit.summarized)) { hideTooltip(); return; }
    if (hit.summarized) {
      showTooltip(event.clientX, event.clientY, "summarized: " + timeline.summarizedCount[hit.state] +
                  " smaller allocations, " + formatBytes(timeline.summarized[hit.state]) + " at state " + hit.state);
      return;
    }
    const a = hit.allocation;
    hover(a);
    showTooltip(event.clientX, event.clientY, describe(a.category, a.owner) + "\n" + formatBytes(a.size) +
                " (" + a.size + " bytes) at " + hexAddress(a.addr) + "\nallocated " +
                (a.allocEvent < 0 ? "before recording" : "at event #" + a.allocEvent) + ", " +
                (a.freeEvent < 0 ? "still live at the end" : "freed at event #" + a.freeEvent) +
                "\nits call stack is below the plot; click: pin it and show the segments at this state");
  });
  timelineCanvas.addEventListener("mouseleave", hideTooltip);
  timelineCanvas.addEventListener("click", function (event) {
    const hit = timelineHit(event);
    if (!hit) return;
    if (hit.allocation) pin(hit.allocation);
    else if (pinned) { pinned = null; clearDetails(); }
    setState(hit.state);
  });
  timelineCanvas.setAttribute("data-allocations", String(timeline.allocations.length));
  timelineCanvas.setAttribute("data-drawn", String(timeline.drawnCount));
  // For tests and scripting: where an allocation's band is on screen, so a synthetic mouse event
  // can hover it exactly as a user would.
  window.vramlabTimeline = {
    allocations: timeline.allocations,
    findAllocation: function (allocEvent) {
      for (let k = 0; k < timeline.allocations.length; k++) {
        if (timeline.allocations[k].allocEvent === allocEvent) return k;
      }
      return -1;
    },
    pointOf: function (k) {
      const a = timeline.allocations[k];
      if (!plot || !a || a.band === undefined) return null;
      const state = Math.floor((a.start + Math.min(a.end, plot.states) - 1) / 2);
      const offset = bandOffsetAt(timeline.bands[a.band], state);
      const rect = timelineCanvas.getBoundingClientRect();
      return { clientX: rect.left + margin.left + plot.width * (state + 0.5) / plot.states,
               clientY: rect.top + plot.y(offset + a.size / 2) };
    }
  };
  document.getElementById("timeline-note").textContent =
      timeline.allocations.length + " allocations over " + eventCount + " events; " +
      (timeline.drawnCount < timeline.allocations.length
           ? "the " + timeline.drawnCount + " largest are drawn one by one, the other " +
             (timeline.allocations.length - timeline.drawnCount) + " as the grey summarized band. "
           : "all are drawn. ") +
      "State 0 is before the first event; blocks live then come from the snapshot's segments.";

  // (b) Segments at a chosen state.
  const replay = new SegmentReplay(data, 1000);
  const slider = document.getElementById("slider");
  slider.max = String(eventCount);
  const segmentCanvas = document.getElementById("segments");
  let segmentHits = [];
  let currentState = eventCount;
  function setState(state) {
    currentState = Math.max(0, Math.min(eventCount, state));
    slider.value = String(currentState);
    drawSegments();
  }
  function drawSegments() {
    const state = replay.stateAt(currentState);
    const layout = layoutSegments(state);
    const maxRows = 300;
    const rows = layout.rows.slice(0, maxRows);
    const rowHeight = 22;
    const surface = setupCanvas(segmentCanvas, Math.max(40, rows.length * rowHeight + 10));
    const context = surface.context;
    const labelWidth = 190;
    const barWidth = Math.max(100, surface.width - labelWidth - 10);
    let maxSize = 1;
    for (const row of layout.rows) maxSize = Math.max(maxSize, row.size);
    let reserved = 0;
    let allocated = 0;
    let largestGap = 0;
    for (const row of layout.rows) { reserved += row.size; allocated += row.allocated; largestGap = Math.max(largestGap, row.largestGap); }
    const free = Math.max(0, reserved - allocated);
    context.clearRect(0, 0, surface.width, surface.height);
    context.font = "11px sans-serif";
    segmentHits = [];
    rows.forEach(function (row, r) {
      const top = 5 + r * rowHeight;
      const width = Math.max(30, barWidth * row.size / maxSize);
      context.fillStyle = "#57606a";
      context.textAlign = "left";
      context.fillText(hexAddress(row.address) + "  " + formatBytes(row.size), 4, top + 14);
      context.fillStyle = "#e6e6e6";
      context.fillRect(labelWidth, top, width, rowHeight - 6);
      segmentHits.push({ x: labelWidth, y: top, w: width, h: rowHeight - 6,
                         text: "segment " + hexAddress(row.address) + ": " + formatBytes(row.size) + ", allocated " +
                               formatBytes(row.allocated) + ", largest free gap " + formatBytes(row.largestGap) });
      for (const block of row.blocks) {
        const bx = labelWidth + width * (block[0] - row.address) / row.size;
        const bw = Math.max(1, width * block[1][0] / row.size);
        context.fillStyle = colours[block[1][1]];
        context.fillRect(bx, top, bw, rowHeight - 6);
        segmentHits.push({ x: bx, y: top, w: bw, h: rowHeight - 6,
                           block: { addr: block[0], size: block[1][0], category: block[1][1], owner: block[1][2] },
                           text: describe(block[1][1], block[1][2]) + "\n" + formatBytes(block[1][0]) +
                                 " at " + hexAddress(block[0]) + "\nclick: its call stack under the timeline" });
      }
    });
    document.getElementById("slider-label").textContent =
        "state " + currentState + " of " + eventCount + (currentState === 0 ? " (before the first event)" : " (after event #" + (currentState - 1) + ")");
    document.getElementById("state-stats").textContent =
        layout.rows.length + " segments, reserved " + formatBytes(reserved) + ", allocated " + formatBytes(allocated) +
        ", cached free " + formatBytes(free) + ", largest free gap " + formatBytes(largestGap) +
        (free > 0 ? ", fragmentation " + (100 * (1 - largestGap / free)).toFixed(1) + " % (1 - largest gap / free)" : "") +
        (layout.rows.length > maxRows ? "; showing the first " + maxRows + " segments by address" : "") +
        (layout.unplaced > 0 ? "; " + layout.unplaced + " blocks outside any known segment" : "");
    drawEventList();
  }
  function drawEventList() {
    const table = document.getElementById("event-list");
    table.textContent = "";
    const header = element("tr");
    for (const name of ["#", "action", "size", "address", "category", "tensor", "module", "phase"]) {
      header.appendChild(element("th", name, name === "size" || name === "#" ? "num" : undefined));
    }
    table.appendChild(header);
    const e = data.events;
    const last = currentState - 1;
    for (let i = Math.max(0, last - 8); i < Math.min(eventCount, last + 9); i++) {
      const row = element("tr", undefined, "clickable" + (i === last ? " current" : ""));
      const action = data.actions[e.action[i]];
      row.appendChild(element("td", String(i), "num"));
      row.appendChild(element("td", action));
      row.appendChild(element("td", formatBytes(e.size[i]), "num"));
      row.appendChild(element("td", action === "oom" ? "device free " + formatBytes(e.addr[i]) : hexAddress(e.addr[i])));
      row.appendChild(element("td", data.categories[e.category[i]]));
      const info = ownerInfo(data, e.owner[i]);
      row.appendChild(element("td", info.tensor));
      row.appendChild(element("td", info.module));
      row.appendChild(element("td", info.phase));
      row.addEventListener("click", function () { setState(i + 1); });
      table.appendChild(row);
    }
  }
  function segmentHit(event) {
    const rect = segmentCanvas.getBoundingClientRect();
    const px = event.clientX - rect.left;
    const py = event.clientY - rect.top;
    for (let h = segmentHits.length - 1; h >= 0; h--) {
      const hit = segmentHits[h];
      if (px >= hit.x && px < hit.x + hit.w && py >= hit.y && py < hit.y + hit.h) return hit;
    }
    return null;
  }
  segmentCanvas.addEventListener("mousemove", function (event) {
    const hit = segmentHit(event);
    if (hit) showTooltip(event.clientX, event.clientY, hit.text); else hideTooltip();
  });
  segmentCanvas.addEventListener("click", function (event) {
    const hit = segmentHit(event);
    if (hit && hit.block) pin(hit.block);
  });
  segmentCanvas.addEventListener("mouseleave", hideTooltip);
  slider.addEventListener("input", function () { setState(Number(slider.value)); });
  document.getElementById("prev").addEventListener("click", function () { setState(currentState - 1); });
  document.getElementById("next").addEventListener("click", function () { setState(currentState + 1); });
  window.addEventListener("resize", function () { drawTimeline(); drawSegments(); });
  drawTimeline();
  setState(summary.peak_reserved_event >= 0 ? summary.peak_reserved_event + 1 : eventCount);
}

if (typeof document !== "undefined") main();
