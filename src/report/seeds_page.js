"use strict";
// The seeds page: a variant's runs (one per seed) side by side on one step slider; the drawings are Panels'
// (panels.js), the data report/watch.h's seeds_watch_data.
(function () {
  const D = DATA;
  const $ = (id) => document.getElementById(id);
  const state = $("state");
  const PANELS = [["sim", "Cosine similarity of the rows", 232], ["path2", "The rows' path (its axes named in each)", 232],
                  ["spectrum", "Singular values and the noise floor", 200], ["periodogram", "Power along position", 200]];
  const SHOWN = ["signal_share", "effective_rank", "adjacent_cosine", "sinusoid_r2", "probe_r2", "val_loss"];

  const seeds = D.seeds.map((s) => ({ seed: s.seed, name: s.name, verdict: s.verdict, form: s.form,
                                      T: Panels.decode(s.data), metrics: s.data.metrics,
                                      evals: (s.data.evals || []).filter((e) => e[2] !== null && isFinite(e[2])) }));
  // Seeds whose analysis found more form than every seed holds: said, as they are drawn as the others are.
  const names = (ss) => (ss.length === 1 ? "seed " : "seeds ") +
      (ss.length === 1 ? String(ss[0].seed) : ss.slice(0, -1).map((s) => s.seed).join(", ") + " and " + ss[ss.length - 1].seed);
  const more = seeds.filter((s) => s.form !== D.path_form);
  if (more.length) {
    const found = ["helix", "circle"].map((form) => more.filter((s) => s.form === form))
        .filter((ss) => ss.length).map((ss) => names(ss) + " found a" + (ss[0].form === "helix" ? " helix" : " circle"));
    $("form").textContent = "At the last snapshot " + found.join(" and ") + ", " +
        names(seeds.filter((s) => s.form === D.path_form)) + (D.path_form === "circle" ? " a circle only" : " none") +
        ": every path here is on its seed's " + (D.path_form === "circle" ? "strongest circle" : "top principal directions") +
        ", so that the shapes compare.";
  }
  const S = Panels.scales([].concat(...seeds.map((s) => s.T.frames)));
  const steps = Array.from(new Set([].concat(...seeds.map((s) => s.T.frames.map((f) => f.step))))).sort((a, b) => a - b);

  // The page: a row of headings, then one row per seed (its numbers, then its four panels).
  const heads = document.createElement("div");
  heads.className = "heads";
  heads.innerHTML = "<div></div>" + PANELS.map((p) => "<div>" + p[1] + "</div>").join("");
  $("seeds").appendChild(heads);
  seeds.forEach((s, i) => {
    const row = document.createElement("section");
    row.className = "seed";
    const info = document.createElement("div");
    const h = document.createElement("h2");
    h.textContent = "seed " + s.seed;
    const name = document.createElement("div");
    name.className = "note";
    name.textContent = s.name;
    s.numbers = document.createElement("div");
    s.numbers.className = "numbers";
    s.hover = document.createElement("div");
    s.hover.className = "hover";
    info.append(h, name, s.numbers, s.hover);
    row.appendChild(info);
    s.canvas = {};
    for (const [id, title, height] of PANELS) {
      const c = document.createElement("canvas");
      c.width = 232;
      c.height = height;
      c.id = "s" + i + "-" + id;
      c.title = title;
      s.canvas[id] = c;
      row.appendChild(c);
    }
    for (const type of ["pointermove", "pointerdown"])  // a mouse's moves, a finger's tap
      s.canvas.sim.addEventListener(type, (e) => {
        s.hover.textContent = Panels.similarityAt(e, s.T, s.T.frames[s.shown]) || "\u00a0";
      });
    s.canvas.sim.addEventListener("pointerleave", () => { s.hover.textContent = "\u00a0"; });
    $("seeds").appendChild(row);
  });

  // The seed's snapshot for `step`: its latest at or before it (its first when it has none that early).
  function frameAt(s, step) {
    let k = 0;
    s.T.frames.forEach((f, i) => { if (f.step <= step) k = i; });
    return k;
  }

  function numbers(s, f, step) {
    const lines = [];
    if (f.step !== step) lines.push(["behind", (f.step < step ? "latest snapshot: step " : "first snapshot: step ") + f.step]);
    lines.push(["", f.rank + " component" + (f.rank === 1 ? "" : "s") + " above the noise floor"]);
    s.metrics.forEach((m, q) => {
      const v = f.metrics[q];
      if (m.key === "val_loss" && s.evals.length) {  // the latest evaluation at or before the snapshot's step
        const e = s.evals.filter((e) => e[0] <= f.step).pop();
        lines.push(["", m.label + " " + (e ? e[2].toPrecision(3) + (e[0] === f.step ? "" : " (step " + e[0] + ")") : "–")]);
        return;
      }
      // every seed's rows keep their lines at every step ("–": none at this one), so the panels do not jump
      if (SHOWN.includes(m.key)) lines.push(["", m.label + " " + (v !== null && isFinite(v) ? Number(v).toPrecision(3) : "–")]);
    });
    const helix = f.metrics[s.metrics.findIndex((m) => m.key === "helix_share")];
    lines.push(["", (f.circle ? "a circle: PC" + f.circle.components.join(" and PC") + ", period " + f.circle.period.toFixed(1) +
                                ", " + (100 * f.circle.share).toFixed(1) + "\u00a0% of the variance"
                              : "no circle") +
                    (helix !== null && helix !== undefined && isFinite(helix) ? "; a helix of " + (100 * helix).toFixed(0) + "\u00a0% (circle and slow axis together)" : "")]);
    // the path's axes: the share of this step's variance they hold, and the rows beyond the frame (open marks)
    const rows = f.outsideRows.length === 1 ? "row " + f.outsideRows[0] : "rows " + f.outsideRows.join(", ") +
        (f.outside > f.outsideRows.length ? ", …" : "");
    const ax = s.T.axes;  // the panel draws the first two; the share is of all the path's axes
    if (ax.length >= 2) lines.push(["", "path: " + ax[0] + " across, " + ax[1] + " up; " + (ax.length > 2 ? "with " + ax[2] + " " : "") +
                    "they hold " + (100 * f.share).toFixed(0) + "\u00a0% of the variance" +
                    (f.outside ? "; " + rows + " beyond the frame" : "")]);
    // the heads' kinds on position alone, and on real text where the run measured them (as the watch page says)
    if (f.kinds) lines.push(["", "layer 0, position alone: " + f.kinds.join(", ")]);
    if (f.textKinds) lines.push(["", "on text: " + f.textKinds.join(", ")]);
    if (s.verdict) lines.push(["", "verdict, end of run: " + s.verdict]);
    s.numbers.replaceChildren(...lines.map(([cls, text]) => {
      const d = document.createElement("div");
      if (cls) d.className = cls;
      d.textContent = text;
      return d;
    }));
  }

  function show(k) {
    const step = steps[k];
    $("label").textContent = "step " + step + " · " + (k + 1) + " of " + steps.length + " steps · " + seeds.length +
        " seed" + (seeds.length === 1 ? "" : "s");
    const digests = [], shown = [];
    seeds.forEach((s, i) => {
      s.shown = frameAt(s, step);
      const f = s.T.frames[s.shown];
      Panels.similarity(s.canvas.sim, s.T, f);
      Panels.path2(s.canvas.path2, s.T, f);
      Panels.spectrum(s.canvas.spectrum, f, S);
      Panels.periodogram(s.canvas.periodogram, f, S);
      numbers(s, f, step);
      shown.push(s.seed + ":" + f.step);
      for (const [id] of PANELS) digests.push("s" + i + "." + id + ":" + Panels.fnv(s.canvas[id]).toString(16));
    });
    state.dataset.step = String(step);
    state.dataset.frames = String(steps.length);
    state.dataset.seeds = String(seeds.length);
    state.dataset.shown = shown.join(" ");
    state.dataset.digests = digests.join(" ");
    state.dataset.digest = Panels.fnvText(digests).toString(16);
    state.dataset.pageWidth = String(document.documentElement.scrollWidth);  // wider than the window: it scrolls
  }
  Panels.player(steps, show);
})();
