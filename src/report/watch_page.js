"use strict";
(function () {
  const D = DATA;
  const $ = (id) => document.getElementById(id);
  const state = $("state");

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

  const frames = D.frames.map((f) => ({
    step: f.step, trainLoss: f.train_loss, valLoss: f.val_loss, sim: bytes(f.sim), path: int16s(f.path),
    share: f.path_share, sv: f.sv, floor: f.floor, rank: f.signal_rank, metrics: f.metrics, power: f.periodogram,
    circle: f.circle,
    kernels: f.kernels ? bytes(f.kernels) : null, kinds: f.kinds, textKinds: f.text_kinds,
  }));
  const P = D.positions;
  const simN = D.sim.positions.length;
  const pathN = D.path.positions.length, comps = D.path.components, pathScale = D.path.scale || 1;

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
  const SIM = { x: 40, y: 10, size: 330 };
  function drawSimilarity(f) {
    const c = $("sim"), ctx = clear(c);
    heatmap(ctx, SIM.x, SIM.y, SIM.size, simN, f.sim, 0, COS_LUT);
    ctx.fillStyle = "#444";
    ctx.textAlign = "right";
    ctx.fillText("0", SIM.x - 4, SIM.y + 10);
    ctx.fillText(String(P - 1), SIM.x - 4, SIM.y + SIM.size);
    ctx.textAlign = "center";
    ctx.fillText("position j", SIM.x + SIM.size / 2, SIM.y + SIM.size + 16);
    ctx.save();
    ctx.translate(12, SIM.y + SIM.size / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText("position i", 0, 0);
    ctx.restore();
  }
  $("sim").addEventListener("mousemove", (e) => {
    const r = e.target.getBoundingClientRect();
    const j = Math.floor((e.clientX - r.left - SIM.x) / SIM.size * simN);
    const i = Math.floor((e.clientY - r.top - SIM.y) / SIM.size * simN);
    if (i < 0 || j < 0 || i >= simN || j >= simN) { $("hover").textContent = "\u00a0"; return; }
    const v = frames[current].sim[i * simN + j] / 255 * 2 - 1;
    $("hover").textContent = "i = " + D.sim.positions[i] + ", j = " + D.sim.positions[j] + ": cos " + v.toFixed(3);
  });
  $("sim").addEventListener("mouseleave", () => { $("hover").textContent = "\u00a0"; });

  function coordinate(f, row, k) { return k < comps ? f.path[row * comps + k] / 32767 * pathScale : 0; }

  function drawPath2(f) {
    const c = $("path2"), ctx = clear(c);
    const m = 30, w = c.width - 2 * m, half = w / 2, cx = m + half, cy = m + half;
    const s = half / (pathScale * 1.05);
    ctx.strokeStyle = "#ddd";
    ctx.beginPath();
    ctx.moveTo(m, cy); ctx.lineTo(m + w, cy); ctx.moveTo(cx, m); ctx.lineTo(cx, m + w);
    ctx.stroke();
    ctx.fillStyle = "#444";
    ctx.textAlign = "center";
    ctx.fillText("PC1", m + w - 12, cy - 6);
    ctx.fillText("PC2", cx + 16, m + 10);
    ctx.lineWidth = 1.6;
    for (let r = 0; r < pathN; ++r) {
      const x = cx + s * coordinate(f, r, 0), y = cy - s * coordinate(f, r, 1);
      if (r + 1 < pathN) {
        ctx.strokeStyle = positionColour(D.path.positions[r], P);
        ctx.beginPath();
        ctx.moveTo(x, y);
        ctx.lineTo(cx + s * coordinate(f, r + 1, 0), cy - s * coordinate(f, r + 1, 1));
        ctx.stroke();
      }
      ctx.fillStyle = positionColour(D.path.positions[r], P);
      ctx.beginPath();
      ctx.arc(x, y, 2.2, 0, 2 * Math.PI);
      ctx.fill();
    }
    ctx.lineWidth = 1;
    ctx.fillStyle = "#444";
    ctx.textAlign = "left";
    ctx.fillText("first position", m, c.height - 8);
    ctx.fillStyle = positionColour(0, P);
    ctx.fillRect(m + 78, c.height - 17, 10, 10);
    ctx.fillStyle = positionColour(P - 1, P);
    ctx.fillRect(m + 176, c.height - 17, 10, 10);
    ctx.fillStyle = "#444";
    ctx.fillText("last", m + 140, c.height - 8);
  }

  let yaw = 0.6, pitch = 0.35;
  function drawPath3(f) {
    const c = $("path3"), ctx = clear(c);
    const half = c.width / 2, s = half / (pathScale * 1.9);
    const cy = Math.cos(yaw), sy = Math.sin(yaw), cp = Math.cos(pitch), sp = Math.sin(pitch);
    const project = (x, y, z) => {
      const x1 = cy * x + sy * z, z1 = -sy * x + cy * z;
      const y2 = cp * y - sp * z1;
      return [half + s * x1, half - s * y2];
    };
    const axes = [[[1, 0, 0], "#d62728", "PC1"], [[0, 1, 0], "#2ca02c", "PC2"], [[0, 0, 1], "#1f77b4", "PC3"]];
    for (const [a, colour, name] of axes) {
      const p0 = project(-a[0] * pathScale, -a[1] * pathScale, -a[2] * pathScale);
      const p1 = project(a[0] * pathScale, a[1] * pathScale, a[2] * pathScale);
      ctx.strokeStyle = colour;
      ctx.globalAlpha = 0.5;
      ctx.beginPath(); ctx.moveTo(p0[0], p0[1]); ctx.lineTo(p1[0], p1[1]); ctx.stroke();
      ctx.globalAlpha = 1;
      ctx.fillStyle = colour;
      ctx.fillText(name, p1[0] + 3, p1[1] - 3);
    }
    ctx.lineWidth = 1.6;
    let prev = null;
    for (let r = 0; r < pathN; ++r) {
      const p = project(coordinate(f, r, 0), coordinate(f, r, 1), coordinate(f, r, 2));
      ctx.strokeStyle = ctx.fillStyle = positionColour(D.path.positions[r], P);
      if (prev) { ctx.beginPath(); ctx.moveTo(prev[0], prev[1]); ctx.lineTo(p[0], p[1]); ctx.stroke(); }
      ctx.beginPath(); ctx.arc(p[0], p[1], 2, 0, 2 * Math.PI); ctx.fill();
      prev = p;
    }
    ctx.lineWidth = 1;
  }
  (function () {
    const c = $("path3");
    let drag = null;
    c.addEventListener("mousedown", (e) => { drag = [e.clientX, e.clientY, yaw, pitch]; c.style.cursor = "grabbing"; });
    window.addEventListener("mouseup", () => { drag = null; c.style.cursor = "grab"; });
    window.addEventListener("mousemove", (e) => {
      if (!drag) return;
      yaw = drag[2] + (e.clientX - drag[0]) * 0.01;
      pitch = Math.max(-1.5, Math.min(1.5, drag[3] + (e.clientY - drag[1]) * 0.01));
      drawPath3(frames[current]);
    });
    c.addEventListener("dblclick", () => { yaw = 0.6; pitch = 0.35; drawPath3(frames[current]); });
  })();

  // Spectrum: log scale, fixed over the frames so that growth shows.
  // Values below 1e-4 of the largest (the centred table's last, zero, component) would squash the axis: left out.
  let svMin = Infinity, svMax = 0;
  for (const f of frames) for (const v of f.sv.concat([f.floor])) if (v > svMax) svMax = v;
  for (const f of frames) for (const v of f.sv.concat([f.floor])) if (v >= 1e-4 * svMax) svMin = Math.min(svMin, v);
  if (!(svMax > 0)) { svMin = 0.1; svMax = 1; }
  const lo = Math.log10(svMin) - 0.05, hi = Math.log10(svMax) + 0.05;
  function drawSpectrum(f) {
    const c = $("spectrum"), ctx = clear(c);
    const m = { l: 46, r: 10, t: 10, b: 34 }, w = c.width - m.l - m.r, h = c.height - m.t - m.b;
    const n = Math.max(f.sv.length, 2);
    const X = (k) => m.l + (k / (n - 1)) * w, Y = (v) => m.t + h - ((Math.log10(v) - lo) / (hi - lo)) * h;
    ctx.strokeStyle = "#ccc";
    ctx.strokeRect(m.l, m.t, w, h);
    ctx.fillStyle = "#444";
    ctx.textAlign = "right";
    for (let e = Math.ceil(lo); e <= Math.floor(hi); ++e) {
      ctx.fillText("1e" + e, m.l - 4, Y(Math.pow(10, e)) + 4);
      ctx.strokeStyle = "#eee";
      ctx.beginPath(); ctx.moveTo(m.l, Y(Math.pow(10, e))); ctx.lineTo(m.l + w, Y(Math.pow(10, e))); ctx.stroke();
    }
    ctx.textAlign = "center";
    ctx.fillText("component k (1 … " + f.sv.length + ")", m.l + w / 2, c.height - 8);
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
      if (!(f.sv[k] >= svMin)) continue;
      ctx.fillStyle = k < f.rank ? "#21918c" : "#999";
      ctx.beginPath(); ctx.arc(X(k), Y(f.sv[k]), 2.4, 0, 2 * Math.PI); ctx.fill();
    }
  }

  // Periodogram: the share of the table's power at each frequency along position, one bar per frequency, on one
  // axis for every step.
  let powerMax = 0;
  for (const f of frames) for (const v of f.power) if (v > powerMax) powerMax = v;
  if (!(powerMax > 0)) powerMax = 1;
  function drawPeriodogram(f) {
    const c = $("periodogram"), ctx = clear(c);
    const m = { l: 46, r: 10, t: 10, b: 34 }, w = c.width - m.l - m.r, h = c.height - m.t - m.b;
    const n = Math.max(f.power.length, 1), bar = w / n;
    const Y = (v) => m.t + h - (v / powerMax) * h;
    ctx.strokeStyle = "#ccc";
    ctx.strokeRect(m.l, m.t, w, h);
    ctx.fillStyle = "#444";
    ctx.textAlign = "right";
    for (const v of [0, powerMax / 2, powerMax]) ctx.fillText((100 * v).toFixed(0) + " %", m.l - 4, Y(v) + 4);
    ctx.textAlign = "center";
    for (const k of [1, Math.ceil(n / 4), Math.ceil(n / 2), n]) ctx.fillText(String(k), m.l + (k - 0.5) * bar, m.t + h + 14);
    ctx.fillText("cycles over the table (1 … " + f.power.length + ")", m.l + w / 2, c.height - 4);
    for (let k = 0; k < f.power.length; ++k) {
      const on = f.circle && Math.abs(k + 1 - f.circle.turns) < 0.5;
      ctx.fillStyle = on ? "#b5651d" : "#21918c";
      ctx.fillRect(m.l + k * bar + 0.5, Y(f.power[k]), Math.max(1, bar - 1), m.t + h - Y(f.power[k]));
    }
  }

  // Kernels: one small heatmap per head, queries from the top; colour is the square root of the weight.
  function drawKernels(f) {
    const c = $("kernels"), ctx = clear(c);
    if (!D.kernels || !f.kernels) {
      ctx.fillStyle = "#666";
      ctx.fillText("no layer-0 kernels at this step", 20, 30);
      return;
    }
    const H = D.kernels.n_head, n = D.kernels.resolution;
    const cols = Math.ceil(Math.sqrt(H)), rows = Math.ceil(H / cols);
    const cell = Math.min((c.width - 8) / cols, (c.height - 8) / rows), size = cell - 18;
    for (let h = 0; h < H; ++h) {
      const x = 4 + (h % cols) * cell, y = 4 + Math.floor(h / cols) * cell;
      heatmap(ctx, x, y + 14, size, n, f.kernels, h * n * n, KERNEL_LUT);
      ctx.fillStyle = "#333";
      ctx.textAlign = "left";
      ctx.fillText("h" + h + " " + (f.kinds ? f.kinds[h] : ""), x, y + 11);
    }
  }

  // Metric curves: one small chart each, x = step.
  const steps = frames.map((f) => f.step), s0 = steps[0], s1 = steps[steps.length - 1];
  function drawCurves(k) {
    const c = $("curves"), ctx = clear(c);
    const M = D.metrics.length, h = c.height / M, m = { l: 8, r: 8 };
    const rows = [];  // each curve's name and value baselines, for the page's self-check (data-curve-rows)
    const X = (s) => m.l + (s1 > s0 ? (s - s0) / (s1 - s0) : 0.5) * (c.width - m.l - m.r);
    for (let q = 0; q < M; ++q) {
      const vals = frames.map((f) => f.metrics[q]);
      const finite = vals.filter((v) => v !== null && isFinite(v));
      const y0 = q * h + 14, hh = h - 22;
      ctx.fillStyle = "#333";
      ctx.textAlign = "left";
      const labelY = q * h + 11, labelEnd = m.l + ctx.measureText(D.metrics[q].label).width;
      ctx.fillText(D.metrics[q].label, m.l, labelY);
      if (!finite.length) continue;
      const v = vals[k];
      if (v !== null && isFinite(v)) {  // the step's value beside the curve's name, on its line
        const text = "= " + Number(v).toPrecision(3), x = labelEnd + 6, y = labelY;
        ctx.fillStyle = "#b5651d";
        ctx.fillText(text, x, y);
        // its offset below the name's baseline, its gap after the name, the room left on its right (in pixels)
        rows.push([y - labelY, x - labelEnd, c.width - (x + ctx.measureText(text).width)].map(Math.round).join(":"));
      }
      let a = Math.min.apply(null, finite), b = Math.max.apply(null, finite);
      if (b - a < 1e-12) { a -= 0.5; b += 0.5; }
      const Y = (v) => y0 + hh - ((v - a) / (b - a)) * hh;
      ctx.strokeStyle = "#21918c";
      ctx.beginPath();
      let started = false;
      frames.forEach((f, i) => {
        const v = vals[i];
        if (v === null || !isFinite(v)) return;
        if (started) ctx.lineTo(X(f.step), Y(v)); else { ctx.moveTo(X(f.step), Y(v)); started = true; }
      });
      ctx.stroke();
      ctx.strokeStyle = "#bbb";
      ctx.beginPath(); ctx.moveTo(X(frames[k].step), y0); ctx.lineTo(X(frames[k].step), y0 + hh); ctx.stroke();
      if (v !== null && isFinite(v)) {
        ctx.fillStyle = "#b5651d";
        ctx.beginPath(); ctx.arc(X(frames[k].step), Y(v), 3.5, 0, 2 * Math.PI); ctx.fill();
      }
    }
    state.dataset.curveRows = rows.join(" ");
  }

  // 2 → "2nd", 8 → "8th", 21 → "21st", 12 → "12th".
  function ordinal(n) {
    const teen = n % 100 >= 11 && n % 100 <= 13;
    return n + (teen ? "th" : ["th", "st", "nd", "rd"][n % 10] || "th");
  }

  function fnv(id) {
    const c = $(id), d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let h = 0x811c9dc5;
    for (let i = 0; i < d.length; ++i) { h ^= d[i]; h = Math.imul(h, 16777619) >>> 0; }
    return h;
  }
  const PANELS = ["sim", "path2", "path3", "spectrum", "periodogram", "kernels", "curves"];

  const slider = $("slider"), label = $("label");
  slider.max = String(frames.length - 1);
  let current = 0;
  function show(k, fromHash) {
    current = Math.max(0, Math.min(frames.length - 1, k));
    const f = frames[current];
    slider.value = String(current);
    label.textContent = "step " + f.step + " · snapshot " + (current + 1) + " of " + frames.length +
        (f.valLoss !== null ? " · val loss " + f.valLoss.toFixed(3) : f.trainLoss !== null ? " · train loss " + f.trainLoss.toFixed(3) : "");
    drawSimilarity(f);
    drawPath2(f);
    drawPath3(f);
    drawSpectrum(f);
    drawPeriodogram(f);
    drawKernels(f);
    drawCurves(current);
    $("pathcap").textContent = "The rows (centred) projected on " + (D.table ? "the table's top " + comps +
        " principal directions; they hold " : "the last snapshot's top " + comps + " principal directions, the same " +
        "axes at every step so the picture never flips; at this step they hold ") + (100 * f.share).toFixed(0) +
        " % of the table's variance. Colour: position, dark first, yellow last." +
        (pathN < P ? " Every " + ordinal(D.path.positions[1] - D.path.positions[0]) + " row of " + P + "." : "");
    $("speccap").textContent = "Singular values of the centred table (log scale" + (D.table ? "); " : ", the same axis at every step); ") + f.rank +
        " above the noise floor (Gavish–Donoho, dashed), in colour.";
    $("percap").textContent = "The share of the centred table's power at each frequency along position, summed over " +
        "its dimensions" + (f.power.length < P / 2 ? " (the lowest " + f.power.length + " of " + Math.floor(P / 2) + ")" : "") +
        "; noise spreads it evenly, a formed table holds it at a few low frequencies." +
        (f.circle ? " Components " + f.circle.components.join(" and ") + " turn in a circle with a period of " +
            f.circle.period.toFixed(1) + " positions (its frequency in orange)." : " No circle at this step.");
    $("kercap").textContent = !D.kernels ? "The run wrote no layer-0 kernels (no transformer layer, or an older run)." :
        "The attention each head of layer 0 pays from positions alone (queries down, keys across; colour: √weight)," +
        " and its kind (docs/analysis.md)." + (f.textKinds ? " On real text: " + f.textKinds.map((k, h) => "h" + h + " " + k).join(", ") + "." : "") +
        (D.kernels.resolution < P ? " Averaged to " + D.kernels.resolution + " × " + D.kernels.resolution + "." : "");
    if (!fromHash) {
      try { history.replaceState(null, "", "#step=" + f.step); } catch (e) { /* some file:// setups refuse it */ }
    }
    const digests = PANELS.map((id) => id + ":" + fnv(id).toString(16));
    let all = 0x811c9dc5;
    for (const d of digests) for (let i = 0; i < d.length; ++i) { all ^= d.charCodeAt(i); all = Math.imul(all, 16777619) >>> 0; }
    state.dataset.step = String(f.step);
    state.dataset.frame = String(current);
    state.dataset.frames = String(frames.length);
    state.dataset.digests = digests.join(" ");
    state.dataset.digest = all.toString(16);
    state.dataset.pageWidth = String(document.documentElement.scrollWidth);  // wider than the window: it scrolls
  }
  $("simcap").textContent = "cos(w_i, w_j) for every pair of rows: blue −1, white 0, red +1. A band along the " +
      "diagonal is a smooth table." + (simN < P ? " Every " + ordinal(D.sim.positions[1] - D.sim.positions[0]) + " row of " + P + "." : "");

  let timer = null;
  const play = $("play");
  function stop() { if (timer) clearInterval(timer); timer = null; play.innerHTML = "&#9654; play"; }
  function start() {
    if (frames.length < 2) return;
    if (current >= frames.length - 1) show(0);
    timer = setInterval(() => { if (current >= frames.length - 1) stop(); else show(current + 1); }, 700);
    play.innerHTML = "&#10074;&#10074; pause";
  }
  play.addEventListener("click", () => (timer ? stop() : start()));
  slider.addEventListener("input", () => { stop(); show(Number(slider.value)); });
  document.addEventListener("keydown", (e) => {
    if (e.target === slider && (e.key === "ArrowLeft" || e.key === "ArrowRight" || e.key === "Home" || e.key === "End")) return;
    if (e.key === "ArrowRight") { stop(); show(current + 1); }
    else if (e.key === "ArrowLeft") { stop(); show(current - 1); }
    else if (e.key === "Home") { stop(); show(0); }
    else if (e.key === "End") { stop(); show(frames.length - 1); }
    else if (e.key === " ") { e.preventDefault(); timer ? stop() : start(); }
    else return;
  });
  if (frames.length < 2) { play.disabled = true; slider.disabled = true; }
  if (D.table) {  // one table, not a run: no steps to play, no kernels, no curves over training
    document.querySelector("h1").textContent = "poslab: one position table, drawn";
    const hide = (e) => { e.style.display = "none"; e.dataset.hidden = "1"; };
    for (const id of ["kernels", "curves"]) hide($(id).closest("section"));
    hide(document.querySelector(".controls"));
    hide(document.querySelector(".keys"));
  }

  function fromHash() {
    const m = /step=(\d+)/.exec(location.hash);
    if (!m) return false;
    const want = Number(m[1]);
    let best = 0;
    frames.forEach((f, i) => { if (Math.abs(f.step - want) < Math.abs(frames[best].step - want)) best = i; });
    $("note").textContent = frames[best].step === want ? "" : "Step " + want + " is not a snapshot: showing step " + frames[best].step + ".";
    show(best, true);
    return true;
  }
  window.addEventListener("hashchange", () => { stop(); fromHash(); });
  if (!fromHash()) show(frames.length - 1);
})();
