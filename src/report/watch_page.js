"use strict";
(function () {
  const D = DATA;
  const $ = (id) => document.getElementById(id);
  const state = $("state");

  const T = Panels.decode(D), frames = T.frames, P = T.P;
  const simN = T.simRows.length, pathN = T.pathRows.length, comps = T.comps;
  const S = Panels.scales(frames);
  let current = () => 0;  // the frame shown (Panels.player's, once it runs)

  const drawSimilarity = (f) => Panels.similarity($("sim"), T, f);
  // Pointer events: a mouse's moves, and a finger's touch (a tap on a phone shows the pair under it).
  for (const type of ["pointermove", "pointerdown"])
    $("sim").addEventListener(type, (e) => {
      $("hover").textContent = Panels.similarityAt(e, T, frames[current()]) || "\u00a0";
    });
  $("sim").addEventListener("pointerleave", () => { $("hover").textContent = "\u00a0"; });
  const drawPath2 = (f) => Panels.path2($("path2"), T, f);
  let yaw = 0.6, pitch = 0.35;
  const drawPath3 = (f) => Panels.path3($("path3"), T, f, yaw, pitch);
  (function () {
    const c = $("path3");
    let drag = null;
    // A mouse or a finger (the canvas's touch-action: none keeps a drag on it from scrolling the page), held by the
    // canvas until it lets go.
    c.style.touchAction = "none";
    c.addEventListener("pointerdown", (e) => {
      drag = [e.clientX, e.clientY, yaw, pitch];
      c.style.cursor = "grabbing";
      c.setPointerCapture(e.pointerId);
    });
    const release = () => { drag = null; c.style.cursor = "grab"; };
    c.addEventListener("pointerup", release);
    c.addEventListener("pointercancel", release);
    c.addEventListener("pointermove", (e) => {
      if (!drag) return;
      yaw = drag[2] + (e.clientX - drag[0]) * 0.01;
      pitch = Math.max(-1.5, Math.min(1.5, drag[3] + (e.clientY - drag[1]) * 0.01));
      drawPath3(frames[current()]);
    });
    c.addEventListener("dblclick", () => { yaw = 0.6; pitch = 0.35; drawPath3(frames[current()]); });
  })();
  const drawSpectrum = (f) => Panels.spectrum($("spectrum"), f, S);
  const drawPeriodogram = (f) => Panels.periodogram($("periodogram"), f, S);

  // Kernels: one small heatmap per head, queries from the top; colour is the square root of the weight.
  function drawKernels(f) {
    const c = $("kernels"), ctx = Panels.clear(c);
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
      Panels.heatmap(ctx, x, y + 14, size, n, f.kernels, h * n * n, Panels.KERNEL_LUT);
      ctx.fillStyle = "#333";
      ctx.textAlign = "left";
      ctx.fillText("h" + h + " " + (f.kinds ? f.kinds[h] : ""), x, y + 11);
    }
  }

  // Metric curves: one small chart each, x = step. Each curve's points are the snapshots' values, except the
  // losses': the run's every evaluation (D.evals: [step, train, val] estimates on fixed windows), snapshot or not,
  // where the data has them (a snapshot's own train loss is one batch's, noisier than the evaluation's).
  const steps = frames.map((f) => f.step), s0 = steps[0], s1 = steps[steps.length - 1];
  const evals = (D.evals || []).filter((e) => e[0] >= s0 && e[0] <= s1);
  const EVAL_COLUMN = { train_loss: 1, val_loss: 2 };
  const fromEvals = (q) => evals.length > 0 && EVAL_COLUMN[D.metrics[q].key] !== undefined;
  const pointsOf = (q) => (fromEvals(q) ? evals.map((e) => [e[0], e[EVAL_COLUMN[D.metrics[q].key]]])
                                        : frames.map((f) => [f.step, f.metrics[q]]));
  // the point shown at frame k: its own, or for the evaluations the latest at or before its step (-1: none yet)
  const latest = (pts, k) => {
    let j = -1;
    pts.forEach((p, i) => { if (p[0] <= steps[k]) j = i; });
    return j;
  };
  // [step, train, val] of the latest evaluation at or before frame k's step (the frames' own values where the data
  // has no evaluations), or null
  const lastEval = (k) => {
    const pts = (evals.length ? evals : frames.map((f) => [f.step, f.trainLoss, f.valLoss]))
                    .filter((e) => e[2] !== null && isFinite(e[2]));
    const j = latest(pts, k);
    return j >= 0 ? pts[j] : null;
  };
  function drawCurves(k) {
    const c = $("curves"), ctx = Panels.clear(c);
    // Each curve on its own scale, from its lowest value to its highest (both on its name's line, on the right); the
    // steps along the foot.
    const foot = 16, M = D.metrics.length, h = (c.height - foot) / M, m = { l: 8, r: 8 }, labelX = 8;
    const rows = [];  // each curve's name and value baselines, for the page's self-check (data-curve-rows)
    const X = (s) => m.l + (s1 > s0 ? (s - s0) / (s1 - s0) : 0.5) * (c.width - m.l - m.r);
    const short = (v) => (Number.isInteger(v) ? String(v) : Math.abs(v) >= 1e4 || Math.abs(v) < 1e-3 ? v.toExponential(1)
                                                                                                      : v.toPrecision(3));
    ctx.fillStyle = "#666";
    ctx.textAlign = "left";
    ctx.fillText("step " + s0, m.l, c.height - 4);
    ctx.textAlign = "right";
    ctx.fillText("step " + s1, c.width - m.r, c.height - 4);
    for (let q = 0; q < M; ++q) {
      const pts = pointsOf(q), vals = pts.map((p) => p[1]);
      const finite = vals.filter((v) => v !== null && isFinite(v));
      const y0 = q * h + 14, hh = h - 22;
      ctx.fillStyle = "#333";
      ctx.textAlign = "left";
      const labelY = q * h + 11, labelEnd = labelX + ctx.measureText(D.metrics[q].label).width;
      ctx.fillText(D.metrics[q].label, labelX, labelY);
      // the step's value beside the curve's name, on its line ("–" where the step has none: no helix, no evaluation;
      // a curve with no value at any step, a run that never formed a helix, too)
      const at = fromEvals(q) ? latest(pts, k) : k;
      const v = at >= 0 ? vals[at] : null, has = v !== null && isFinite(v);
      const text = "= " + (!has ? "–" : Number.isInteger(v) ? String(v) : Number(v).toPrecision(3));
      const x = labelEnd + 6, y = labelY;
      ctx.fillStyle = "#b5651d";
      ctx.fillText(text, x, y);
      // its offset below the name's baseline, its gap after the name, the room left on its right (in pixels)
      rows.push([y - labelY, x - labelEnd, c.width - (x + ctx.measureText(text).width)].map(Math.round).join(":"));
      if (!finite.length) continue;
      let a = Math.min.apply(null, finite), b = Math.max.apply(null, finite);
      // the scale, where it fits beside the value: "0.0108 – 0.0296", or the one value of a flat line
      const scale = b - a < 1e-12 ? "all " + short(a) : short(a) + " – " + short(b);
      if (x + ctx.measureText(text).width + 12 + ctx.measureText(scale).width <= c.width - m.r - 8) {
        ctx.fillStyle = "#888";
        ctx.textAlign = "right";
        ctx.fillText(scale, c.width - m.r - 8, labelY);  // clear of the marked point at the last step
      }
      if (b - a < 1e-12) { a -= 0.5; b += 0.5; }
      const Y = (v) => y0 + hh - ((v - a) / (b - a)) * hh;
      ctx.strokeStyle = "#21918c";
      ctx.beginPath();
      let started = false;
      // A step without a value breaks a curve with gaps (the helix's share); the others join their values over it.
      const gaps = D.metrics[q].gaps === true;
      pts.forEach(([step, v]) => {
        if (v === null || !isFinite(v)) { if (gaps) started = false; return; }
        if (started) ctx.lineTo(X(step), Y(v)); else { ctx.moveTo(X(step), Y(v)); started = true; }
      });
      ctx.stroke();
      ctx.fillStyle = "#21918c";  // a value alone between gaps: a dot, as no line reaches it
      if (gaps) vals.forEach((v, i) => {
        const alone = (j) => j < 0 || j >= vals.length || vals[j] === null || !isFinite(vals[j]);
        if (v !== null && isFinite(v) && alone(i - 1) && alone(i + 1)) {
          ctx.beginPath(); ctx.arc(X(pts[i][0]), Y(v), 1.8, 0, 2 * Math.PI); ctx.fill();
        }
      });
      ctx.strokeStyle = "#bbb";
      ctx.beginPath(); ctx.moveTo(X(frames[k].step), y0); ctx.lineTo(X(frames[k].step), y0 + hh); ctx.stroke();
      if (has) {
        ctx.fillStyle = "#b5651d";
        ctx.beginPath(); ctx.arc(X(pts[at][0]), Y(v), 3.5, 0, 2 * Math.PI); ctx.fill();
      }
    }
    state.dataset.curveRows = rows.join(" ");
    state.dataset.curves = String(M);
  }

  // The path's axes, named: a helix's or circle's where the (last) table's analysis found one.
  const names = T.axes, list = (xs) => xs.slice(0, -1).join(", ") + " and " + xs[xs.length - 1];
  const pathAxes = D.path.what || (D.table ? "the table's" : "the last snapshot's") + " top " + comps + " principal directions";
  // a turned helix's axes have names of their own, too long for a heading: said in words
  const turned = D.path.kind === "turned helix";
  if (names.length >= 2)
    $("path2title").textContent = turned ? "The rows' path on the circle's axes" : "The rows' path in " + names[0] + " and " + names[1];
  if (names.length >= 2) $("path3title").textContent = turned ? "The path along the helix's axes" : "The path in " + list(names);
  $("path3cap").textContent = "The same rows in three dimensions: drag to rotate (double-click resets). Axes: " +
      names.map((n, i) => n + " " + ["red", "green", "blue"][i]).join(", ") +
      (T.up === 2 ? ", the slow axis upright" : "") + "; colour along the path is position, as on the left.";

  // "row 0", "rows 0 and 1", "6 rows (0, 1, 2, 3, …)": the path's rows beyond its frame (the first four are named)
  const outsideWords = (f) => {
    const r = f.outsideRows;
    if (f.outside > r.length) return f.outside + " rows (" + r.join(", ") + ", …)";
    return r.length === 1 ? "row " + r[0] : "rows " + r.slice(0, -1).join(", ") + " and " + r[r.length - 1];
  };

  const PANELS = ["sim", "path2", "path3", "spectrum", "periodogram", "kernels", "curves"];

  const label = $("label");
  function show(k) {
    const f = frames[k];
    // the latest evaluation's train and val loss at or before this step (with its step when an earlier one)
    const ev = lastEval(k);
    label.textContent = "step " + f.step + " · snapshot " + (k + 1) + " of " + frames.length +
        (ev ? " · " + (ev[0] === f.step ? "" : "at step " + ev[0] + ": ") +
              (ev[1] !== null && isFinite(ev[1]) ? "train loss " + ev[1].toFixed(3) + ", " : "") +
              "val loss " + ev[2].toFixed(3) : "");
    drawSimilarity(f);
    drawPath2(f);
    drawPath3(f);
    drawSpectrum(f);
    drawPeriodogram(f);
    drawKernels(f);
    drawCurves(k);
    $("pathcap").textContent = "The rows (centred) projected on " + pathAxes + (D.table ? "; they hold " :
        ", the same axes at every step so the picture never flips; at this step they hold ") + (100 * f.share).toFixed(0) +
        " % of the table's variance" + (D.path.scaled ? " (each axis in units of its own standard deviation" +
        (D.table ? "" : " at the last snapshot") + ", as the circle rule reads it, framed at ±" + T.scale.toFixed(1) + " sd" +
        (f.outside ? "; " + outsideWords(f) + " beyond it, open marks on the frame's edge" : "") + ")" : "") +
        ". Colour: position, dark first, yellow last." +
        (pathN < P ? " Every " + Panels.ordinal(D.path.positions[1] - D.path.positions[0]) + " row of " + P + "." : "");
    $("speccap").textContent = "Singular values of the centred table (log scale" + (D.table ? "); " : ", the same axis at every step); ") + f.rank +
        " above the noise floor (Gavish–Donoho, dashed), in colour.";
    $("percap").textContent = "The share of the centred table's power at each frequency along position, summed over " +
        "its dimensions" + (f.power.length < Math.floor(P / 2) ? " (the lowest " + f.power.length + " of " + Math.floor(P / 2) + ")" : "") +
        "; noise spreads it evenly, a formed table holds it at a few low frequencies." +
        (f.turnedCircle && f.circle ? " The helix's circle, turned apart within " + list(f.turnedCircle.components.map((c) => "PC" + c)) +
            ", has a period of " + f.turnedCircle.period.toFixed(1) + " positions (" + f.turnedCircle.turns.toFixed(2) +
            " cycles: the dashed orange line); components " + f.circle.components.join(" and ") + " alone read " +
            f.circle.period.toFixed(1) + " positions, " + (100 * f.circle.share).toFixed(1) + " % of the variance."
        : f.circle ? " Components " + f.circle.components.join(" and ") + (D.table ? " of the table" : " of this step's table") +
            " turn in a circle with a period of " + f.circle.period.toFixed(1) + " positions, " +
            (100 * f.circle.share).toFixed(1) + " % of the variance; the dashed orange line marks its frequency, " +
            f.circle.turns.toFixed(2) + " cycles." : D.table ? " No circle in the table." : " No circle at this step.") +
        (f.circle ? " The bars there hold all the table's power at that frequency, the circle's and the rest's; a " +
            "frequency between two whole numbers of cycles spreads over the two bars beside it." : "");
    $("kercap").textContent = !D.kernels ? "The run wrote no layer-0 kernels (no transformer layer, or an older run)." :
        "The attention each head of layer 0 pays from positions alone (queries down, keys across; colour: √weight)," +
        " and its kind (docs/analysis.md)." + (f.textKinds ? " On real text: " + f.textKinds.map((k, h) => "h" + h + " " + k).join(", ") + "." : "") +
        (D.kernels.resolution < P ? " Averaged to " + D.kernels.resolution + " × " + D.kernels.resolution + "." : "");
    const digests = PANELS.map((id) => id + ":" + Panels.fnv($(id)).toString(16));
    const all = Panels.fnvText(digests);
    state.dataset.step = String(f.step);
    state.dataset.frame = String(k);
    state.dataset.frames = String(frames.length);
    state.dataset.digests = digests.join(" ");
    state.dataset.digest = all.toString(16);
    state.dataset.pageWidth = String(document.documentElement.scrollWidth);  // wider than the window: it scrolls
  }
  $("simcap").textContent = "cos(w_i, w_j) for every pair of rows: blue −1, white 0, red +1. A band along the " +
      "diagonal is a smooth table." + (simN < P ? " Every " + Panels.ordinal(D.sim.positions[1] - D.sim.positions[0]) + " row of " + P + "." : "");

  if (D.table) {  // one table, not a run: no steps to play, no kernels, no curves over training
    document.querySelector("h1").textContent = "poslab: one position table, drawn";
    const hide = (e) => { e.style.display = "none"; e.dataset.hidden = "1"; };
    for (const id of ["kernels", "curves"]) hide($(id).closest("section"));
    hide(document.querySelector(".controls"));
    hide(document.querySelector(".keys"));
  }

  current = Panels.player(frames.map((f) => f.step), show);
})();
