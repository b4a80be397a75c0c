"use strict";
// What the watch page (watch_page.js) and the seeds page (seeds_page.js) share: the drawings of one table's similarity,
// its rows' path in 2-D and 3-D, its spectrum with the noise floor and its periodogram, each on a canvas of any size,
// from one frame of report/watch.h's data (decoded by Panels.decode); and the step slider with its keys.
const Panels = (function () {
  function bytes(b64) {
    const s = atob(b64);
    const a = new Uint8Array(s.length);
    for (let i = 0; i < s.length; ++i) a[i] = s.charCodeAt(i);
    return a;
  }
  function int16s(b64) {
    const b = bytes(b64);
    const v = new DataView(b.buffer);
    const a = new Int16Array(b.length / 2);
    for (let i = 0; i < a.length; ++i) a[i] = v.getInt16(2 * i, true);
    return a;
  }

  // Colour maps: viridis for position, blue-white-red for cosines, white to blue for attention.
  const VIRIDIS = [[68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142], [31, 158, 137],
                   [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37]];
  const DIVERGING = [[33, 102, 172], [103, 169, 207], [209, 229, 240], [247, 247, 247], [253, 219, 199],
                     [239, 138, 98], [178, 24, 43]];
  const BLUES = [[255, 255, 255], [198, 219, 239], [107, 174, 214], [33, 113, 181], [8, 48, 107]];
  function ramp(stops, t) {
    t = Math.min(1, Math.max(0, t));
    const x = t * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
    return [0, 1, 2].map((k) => Math.round(stops[i][k] + f * (stops[i + 1][k] - stops[i][k])));
  }
  function lut(stops) {
    const t = new Uint8Array(256 * 3);
    for (let q = 0; q < 256; ++q) t.set(ramp(stops, q / 255), 3 * q);
    return t;
  }
  const COS_LUT = lut(DIVERGING), KERNEL_LUT = lut(BLUES);
  const rgb = (c) => "rgb(" + c[0] + "," + c[1] + "," + c[2] + ")";
  const positionColour = (i, n) => rgb(ramp(VIRIDIS, n > 1 ? i / (n - 1) : 0));

  // One run's (or table's) data, decoded: its frames and the shapes and scales every frame shares.
  function decode(D) {
    const frames = D.frames.map((f) => ({
      step: f.step, trainLoss: f.train_loss, valLoss: f.val_loss, sim: bytes(f.sim), path: int16s(f.path),
      share: f.path_share, sv: f.sv, svOf: f.sv_of || f.sv.length, floor: f.floor, rank: f.signal_rank,
      metrics: f.metrics, power: f.periodogram, powerOf: f.periodogram_of || f.periodogram.length,
      circle: f.circle, turnedCircle: f.turned_circle || null,
      outside: f.path_outside || 0, outsideRows: f.path_outside_rows || [],
      kernels: f.kernels ? bytes(f.kernels) : null, kinds: f.kinds, textKinds: f.text_kinds,
    }));
    const comps = D.path.components, scale = D.path.scale || 1;
    // the path's axes: a helix's or circle's (each in its own sd) or the top principal directions
    const axes = D.path.axes || ["PC1", "PC2", "PC3"].slice(0, comps);
    return {
      frames, P: D.positions, simRows: D.sim.positions, pathRows: D.path.positions, comps, scale, axes,
      up: D.path.up || 1,  // the axis the 3-D view stands upright
      // a row beyond the frame on one of a view's first `n` axes, set on its edge (axes in sd units, framed at ±3.5 sd
      // at most; a frame at the rows' own reach holds them all): drawn as an open mark, no line joining it, as it is
      // not where the row is
      clamped: (f, r, n) => !!D.path.scaled && scale >= 3.5 - 1e-9 && [0, 1, 2].some((k) =>
          k < Math.min(n, comps) && Math.abs(f.path[r * comps + k]) >= 32767),
      // row r's coordinate on principal axis k (0 beyond the table's components)
      coordinate: (f, r, k) => (k < comps ? f.path[r * comps + k] / 32767 * scale : 0),
    };
  }

  // The spectrum's log axis and the periodogram's height, fixed over `frames` (one run's, or several runs')
  // so that growth shows. Values below 1e-4 of the largest (the centred table's last, zero, component) would squash
  // the axis: left out.
  function scales(frames) {
    let svMin = Infinity, svMax = 0, powerMax = 0;
    for (const f of frames) for (const v of f.sv.concat([f.floor])) if (v > svMax) svMax = v;
    for (const f of frames) for (const v of f.sv.concat([f.floor])) if (v >= 1e-4 * svMax) svMin = Math.min(svMin, v);
    if (!(svMax > 0)) { svMin = 0.1; svMax = 1; }
    for (const f of frames) for (const v of f.power) if (v > powerMax) powerMax = v;
    if (!(powerMax > 0)) powerMax = 1;
    return { svMin, lo: Math.log10(svMin) - 0.05, hi: Math.log10(svMax) + 0.05, powerMax };
  }

  function clear(c) {
    const ctx = c.getContext("2d");
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, c.width, c.height);
    ctx.font = "12px sans-serif";
    return ctx;
  }
  function heatmap(ctx, x0, y0, size, n, q, offset, table) {
    const img = new ImageData(n, n);
    for (let k = 0; k < n * n; ++k) {
      const v = q[offset + k];
      img.data[4 * k] = table[3 * v];
      img.data[4 * k + 1] = table[3 * v + 1];
      img.data[4 * k + 2] = table[3 * v + 2];
      img.data[4 * k + 3] = 255;
    }
    const off = document.createElement("canvas");
    off.width = n;
    off.height = n;
    off.getContext("2d").putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(off, x0, y0, size, size);
  }

  // Similarity: rows are queries i from the top, columns j from the left.
  const simBox = (c) => ({ x: 40, y: 10, size: c.width - 50 });
  function similarity(c, T, f) {
    const ctx = clear(c), b = simBox(c), n = T.simRows.length;
    heatmap(ctx, b.x, b.y, b.size, n, f.sim, 0, COS_LUT);
    ctx.fillStyle = "#444";
    ctx.textAlign = "right";
    ctx.fillText("0", b.x - 4, b.y + 10);
    ctx.fillText(String(T.P - 1), b.x - 4, b.y + b.size);
    ctx.textAlign = "center";
    ctx.fillText("position j", b.x + b.size / 2, b.y + b.size + 16);
    ctx.save();
    ctx.translate(12, b.y + b.size / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText("position i", 0, 0);
    ctx.restore();
  }
  // The text for the pointer over the similarity map (a mouse event), or null off the map.
  function similarityAt(e, T, f) {
    const c = e.target, r = c.getBoundingClientRect(), b = simBox(c), n = T.simRows.length;
    // In the canvas's own pixels: on a narrow screen it is drawn smaller than it is (max-width: 100%).
    const x = (e.clientX - r.left) * c.width / r.width, y = (e.clientY - r.top) * c.height / r.height;
    const j = Math.floor((x - b.x) / b.size * n);
    const i = Math.floor((y - b.y) / b.size * n);
    if (i < 0 || j < 0 || i >= n || j >= n) return null;
    const v = f.sim[i * n + j] / 255 * 2 - 1;
    return "i = " + T.simRows[i] + ", j = " + T.simRows[j] + ": cos " + v.toFixed(3);
  }

  // Text in `colour` at (x, y) (the context's alignment) on a white, nearly opaque box: readable over a drawing.
  function backedText(ctx, text, x, y, colour) {
    if (!text) return;
    const w = ctx.measureText(text).width, left = ctx.textAlign === "right" ? x - w : x;
    ctx.fillStyle = "rgba(255, 255, 255, 0.85)";
    ctx.fillRect(left - 2, y - 10, w + 4, 13);
    ctx.fillStyle = colour;
    ctx.fillText(text, x, y);
  }

  function path2(c, T, f) {
    const ctx = clear(c);
    const m = 30, w = c.width - 2 * m, half = w / 2, cx = m + half, cy = m + half;
    const s = half / (T.scale * 1.05), n = T.pathRows.length;
    ctx.strokeStyle = "#ddd";
    ctx.beginPath();
    ctx.moveTo(m, cy); ctx.lineTo(m + w, cy); ctx.moveTo(cx, m); ctx.lineTo(cx, m + w);
    ctx.stroke();
    ctx.lineWidth = 1.6;
    for (let r = 0; r < n; ++r) {
      const x = cx + s * T.coordinate(f, r, 0), y = cy - s * T.coordinate(f, r, 1), out = T.clamped(f, r, 2);
      if (r + 1 < n && !out && !T.clamped(f, r + 1, 2)) {
        ctx.strokeStyle = positionColour(T.pathRows[r], T.P);
        ctx.beginPath();
        ctx.moveTo(x, y);
        ctx.lineTo(cx + s * T.coordinate(f, r + 1, 0), cy - s * T.coordinate(f, r + 1, 1));
        ctx.stroke();
      }
      ctx.fillStyle = ctx.strokeStyle = positionColour(T.pathRows[r], T.P);
      ctx.beginPath();
      ctx.arc(x, y, out ? 3 : 2.2, 0, 2 * Math.PI);
      if (out) ctx.stroke(); else ctx.fill();
    }
    ctx.lineWidth = 1;
    // the axes' names over the path, on a pale backing where the path runs under them
    ctx.textAlign = "right";
    backedText(ctx, T.axes[0] || "", m + w, cy - 6, "#444");
    ctx.textAlign = "left";
    backedText(ctx, T.axes[1] || "", cx + 5, m + 10, "#444");
    ctx.fillStyle = "#444";
    ctx.fillText("first position", m, c.height - 8);
    ctx.fillStyle = positionColour(0, T.P);
    ctx.fillRect(m + 78, c.height - 17, 10, 10);
    ctx.fillStyle = positionColour(T.P - 1, T.P);
    ctx.fillRect(m + 176, c.height - 17, 10, 10);
    ctx.fillStyle = "#444";
    ctx.fillText("last", m + 140, c.height - 8);
  }

  // The path in three dimensions, seen from angles (yaw, pitch).
  function path3(c, T, f, yaw, pitch) {
    const ctx = clear(c);
    const half = c.width / 2, s = half / (T.scale * 1.6), n = T.pathRows.length;
    // The axis drawn upright (a helix's slow axis, as the report's figure stands it), the rest across and in depth.
    const up = T.up, depth = 3 - up;
    const place = (i) => (i === 0 ? [1, 0, 0] : i === up ? [0, 1, 0] : [0, 0, 1]);
    const cy = Math.cos(yaw), sy = Math.sin(yaw), cp = Math.cos(pitch), sp = Math.sin(pitch);
    const project = (x, y, z) => {
      const x1 = cy * x + sy * z, z1 = -sy * x + cy * z;
      const y2 = cp * y - sp * z1;
      return [half + s * x1, half - s * y2];
    };
    const axes = [[place(0), "#d62728", T.axes[0]], [place(1), "#2ca02c", T.axes[1]], [place(2), "#1f77b4", T.axes[2]]]
      .slice(0, T.comps);
    for (const [a, colour, name] of axes) {
      const p0 = project(-a[0] * T.scale, -a[1] * T.scale, -a[2] * T.scale);
      const p1 = project(a[0] * T.scale, a[1] * T.scale, a[2] * T.scale);
      ctx.strokeStyle = colour;
      ctx.globalAlpha = 0.5;
      ctx.beginPath(); ctx.moveTo(p0[0], p0[1]); ctx.lineTo(p1[0], p1[1]); ctx.stroke();
      ctx.globalAlpha = 1;
    }
    ctx.lineWidth = 1.6;
    let prev = null;
    for (let r = 0; r < n; ++r) {
      const p = project(T.coordinate(f, r, 0), T.coordinate(f, r, up), T.coordinate(f, r, depth)), out = T.clamped(f, r, 3);
      ctx.strokeStyle = ctx.fillStyle = positionColour(T.pathRows[r], T.P);
      if (prev && !out) { ctx.beginPath(); ctx.moveTo(prev[0], prev[1]); ctx.lineTo(p[0], p[1]); ctx.stroke(); }
      ctx.beginPath(); ctx.arc(p[0], p[1], out ? 3 : 2, 0, 2 * Math.PI);
      if (out) ctx.stroke(); else ctx.fill();
      prev = out ? null : p;  // a row beyond the frame: an open mark, no line to or from it
    }
    ctx.lineWidth = 1;
    ctx.textAlign = "left";  // the axes' names over the path, on a pale backing
    for (const [a, colour, name] of axes) {
      const p1 = project(a[0] * T.scale, a[1] * T.scale, a[2] * T.scale);
      backedText(ctx, name, p1[0] + 3, p1[1] - 3, colour);
    }
  }

  // Singular values on a log axis (`S` from scales), the noise floor dashed, the components above it in colour.
  function spectrum(c, f, S) {
    const ctx = clear(c);
    const m = { l: 46, r: 10, t: 10, b: 34 }, w = c.width - m.l - m.r, h = c.height - m.t - m.b;
    const n = Math.max(f.sv.length, 2);
    const X = (k) => m.l + (k / (n - 1)) * w, Y = (v) => m.t + h - ((Math.log10(v) - S.lo) / (S.hi - S.lo)) * h;
    ctx.strokeStyle = "#ccc";
    ctx.strokeRect(m.l, m.t, w, h);
    ctx.fillStyle = "#444";
    ctx.textAlign = "right";
    // Ticks at the powers of ten in range; within one decade there is none, so the range's ends are labelled.
    const ticks = [];
    for (let e = Math.ceil(S.lo); e <= Math.floor(S.hi); ++e) ticks.push([Math.pow(10, e), "1e" + e]);
    if (ticks.length === 0)
      for (const e of [S.lo + 0.05, S.hi - 0.05]) ticks.push([Math.pow(10, e), Math.pow(10, e).toPrecision(2)]);
    for (const [v, text] of ticks) {
      ctx.fillText(text, m.l - 4, Y(v) + 4);
      ctx.strokeStyle = "#eee";
      ctx.beginPath(); ctx.moveTo(m.l, Y(v)); ctx.lineTo(m.l + w, Y(v)); ctx.stroke();
    }
    ctx.textAlign = "center";
    ctx.fillText("component k (1 … " + f.sv.length + (f.svOf > f.sv.length ? " of " + f.svOf : "") + ")",
                 m.l + w / 2, c.height - 8);
    if (f.floor > 0) {
      ctx.strokeStyle = "#b5651d";
      ctx.setLineDash([5, 4]);
      ctx.beginPath(); ctx.moveTo(m.l, Y(f.floor)); ctx.lineTo(m.l + w, Y(f.floor)); ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = "#b5651d";
      ctx.textAlign = "right";
      ctx.fillText("noise floor", m.l + w - 4, Y(f.floor) - 4);
    }
    for (let k = 0; k < f.sv.length; ++k) {
      if (!(f.sv[k] >= S.svMin)) continue;
      ctx.fillStyle = k < f.rank ? "#21918c" : "#999";
      ctx.beginPath(); ctx.arc(X(k), Y(f.sv[k]), 2.4, 0, 2 * Math.PI); ctx.fill();
    }
  }

  // The share of the table's power at each frequency along position, one bar per frequency (height: S.powerMax);
  // the circle's frequency in orange.
  function periodogram(c, f, S) {
    const ctx = clear(c);
    const m = { l: 46, r: 10, t: 10, b: 34 }, w = c.width - m.l - m.r, h = c.height - m.t - m.b;
    const n = Math.max(f.power.length, 1), bar = w / n;
    const Y = (v) => m.t + h - (v / S.powerMax) * h;
    ctx.strokeStyle = "#ccc";
    ctx.strokeRect(m.l, m.t, w, h);
    ctx.fillStyle = "#444";
    ctx.textAlign = "right";
    // Two significant figures below 10 % (1.5 %, not a rounded 1 %: the ticks are half and all of the top).
    const percent = (v) => (v === 0 ? "0" : 100 * S.powerMax < 10 ? (100 * v).toPrecision(2) : (100 * v).toFixed(0));
    for (const v of [0, S.powerMax / 2, S.powerMax]) ctx.fillText(percent(v) + " %", m.l - 4, Y(v) + 4);
    ctx.textAlign = "center";
    for (const k of [1, Math.ceil(n / 4), Math.ceil(n / 2), n]) ctx.fillText(String(k), m.l + (k - 0.5) * bar, m.t + h + 14);
    // the label within the canvas: the long form where it fits, else the short one (a seeds page's narrow panels)
    const range = "1 … " + f.power.length + (f.powerOf > f.power.length ? " of " + f.powerOf : "");
    const long = "cycles over the table (" + range + ")";
    ctx.fillText(ctx.measureText(long).width <= c.width - 8 ? long : "cycles (" + range + ")", c.width / 2, c.height - 4);
    ctx.fillStyle = "#21918c";
    for (let k = 0; k < f.power.length; ++k)
      ctx.fillRect(m.l + k * bar + 0.5, Y(f.power[k]), Math.max(1, bar - 1), m.t + h - Y(f.power[k]));
    // The circle's frequency (a turned helix's circle's, where the analysis turned one apart), a dashed orange line
    // and a mark on the axis: the bars there hold all the table's power at that frequency, the circle's share of it
    // and the rest's (a ramp's, at low frequencies). Each on a white edge: over a bar, often the tallest, orange on
    // teal alone is lost.
    const turns = f.turnedCircle ? f.turnedCircle.turns : f.circle ? f.circle.turns : NaN;
    const x = m.l + (turns - 0.5) * bar;
    if (x >= m.l && x <= m.l + w) {
      const line = () => { ctx.beginPath(); ctx.moveTo(x, m.t); ctx.lineTo(x, m.t + h); ctx.stroke(); };
      const mark = () => {
        ctx.beginPath(); ctx.moveTo(x, m.t + h - 9); ctx.lineTo(x - 6, m.t + h); ctx.lineTo(x + 6, m.t + h);
        ctx.closePath();
      };
      ctx.strokeStyle = "#fff";
      ctx.lineWidth = 4;
      line();
      mark(); ctx.stroke();
      ctx.strokeStyle = ctx.fillStyle = "#b5651d";
      ctx.lineWidth = 2;
      ctx.setLineDash([5, 3]);
      line();
      ctx.setLineDash([]);
      ctx.lineWidth = 1;
      mark(); ctx.fill();
    }
  }

  // 2 → "2nd", 8 → "8th", 21 → "21st", 12 → "12th".
  function ordinal(n) {
    const teen = n % 100 >= 11 && n % 100 <= 13;
    return n + (teen ? "th" : ["th", "st", "nd", "rd"][n % 10] || "th");
  }

  // A hash of a canvas's pixels (FNV-1a), and of strings: the pages' self-check (data-digests in <output id="state">).
  function fnv(c) {
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let h = 0x811c9dc5;
    for (let i = 0; i < d.length; ++i) { h ^= d[i]; h = Math.imul(h, 16777619) >>> 0; }
    return h;
  }
  function fnvText(strings) {
    let all = 0x811c9dc5;
    for (const d of strings) for (let i = 0; i < d.length; ++i) { all ^= d.charCodeAt(i); all = Math.imul(all, 16777619) >>> 0; }
    return all;
  }

  // The page's step slider (#slider), play button (#play), keys (← → step, Home / End, space plays and pauses) and
  // address (#step=N opens the frame nearest step N; #note says when it is not one) over frames at `steps`:
  // draw(k) draws frame k. Shows the address's step, else the last. Returns a function giving the frame shown.
  function player(steps, draw) {
    const slider = document.getElementById("slider"), play = document.getElementById("play");
    const n = steps.length;
    let current = 0, timer = null;
    slider.max = String(n - 1);
    function show(k, fromHash) {
      current = Math.max(0, Math.min(n - 1, k));
      slider.value = String(current);
      if (!fromHash) {  // a step chosen here: the address's note, about another step, goes
        const note = document.getElementById("note");
        if (note) note.textContent = "";
        try { history.replaceState(null, "", "#step=" + steps[current]); } catch (e) { /* some file:// setups refuse it */ }
      }
      draw(current);
    }
    function stop() { if (timer) clearInterval(timer); timer = null; play.innerHTML = "&#9654; play"; }
    function start() {
      if (n < 2) return;
      if (current >= n - 1) show(0);
      timer = setInterval(() => { if (current >= n - 1) stop(); else show(current + 1); }, 700);
      play.innerHTML = "&#10074;&#10074; pause";
    }
    play.addEventListener("click", () => (timer ? stop() : start()));
    slider.addEventListener("input", () => { stop(); show(Number(slider.value)); });
    document.addEventListener("keydown", (e) => {
      if (e.target === slider && (e.key === "ArrowLeft" || e.key === "ArrowRight" || e.key === "Home" || e.key === "End")) return;
      if (e.key === "ArrowRight") { stop(); show(current + 1); }
      else if (e.key === "ArrowLeft") { stop(); show(current - 1); }
      else if (e.key === "Home") { stop(); show(0); }
      else if (e.key === "End") { stop(); show(n - 1); }
      else if (e.key === " ") { e.preventDefault(); timer ? stop() : start(); }
    });
    if (n < 2) { play.disabled = true; slider.disabled = true; }
    function fromHash() {
      const m = /step=(\d+)/.exec(location.hash);
      if (!m) return false;
      const want = Number(m[1]);
      let best = 0;
      steps.forEach((s, i) => { if (Math.abs(s - want) < Math.abs(steps[best] - want)) best = i; });
      document.getElementById("note").textContent =
          steps[best] === want ? "" : "Step " + want + " is not a snapshot: showing step " + steps[best] + ".";
      show(best, true);
      return true;
    }
    window.addEventListener("hashchange", () => { stop(); fromHash(); });
    if (!fromHash()) show(n - 1);
    return () => current;
  }

  return { bytes, clear, heatmap, KERNEL_LUT, decode, scales, similarity, similarityAt, path2, path3, spectrum,
           periodogram, ordinal, fnv, fnvText, player };
})();
