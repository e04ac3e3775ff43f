// bakeoff label: keyboard-first judging and review. Served from the package; no inline script
// (the CSP forbids it) and no request to any other host. Every action is POSTed as JSON; the
// server commits it to SQLite, then answers with the new work area, which replaces #work.
// Keys pressed while an answer is pending are queued and applied in order to the item then shown.
(() => {
  "use strict";
  const body = document.body;
  const annotator = body.dataset.annotator;
  const page = body.dataset.page;
  const work = document.getElementById("work");
  const status = document.getElementById("status");
  const help = document.getElementById("help");
  // The launch key (also in an HttpOnly cookie): sent in a header with every action, which
  // another origin's page can neither read nor send.
  const keyMeta = document.querySelector('meta[name="bakeoff-key"]');
  const key = keyMeta ? keyMeta.content : "";
  if (!annotator || !work || (page !== "label" && page !== "review" && page !== "settle")) return;

  // Instrumentation read by the browser tests: pending actions, and per action the time from
  // the key event to the updated DOM (dom_ms) and to the next animation frame (frame_ms), and
  // the server's own time for it (server_ms, from its Server-Timing header).
  window.__bakeoffPending = 0;
  window.__bakeoffLatency = [];
  let chain = Promise.resolve();

  const state = () => {
    const s = document.getElementById("state");
    return s ? s.dataset : {};
  };
  const say = (text, error) => {
    status.textContent = text;
    status.className = error ? "error" : "";
  };

  function send(action, payload, t0) {
    window.__bakeoffPending += 1;
    chain = chain.then(async () => {
      const data = typeof payload === "function" ? payload() : payload;
      if (data === null) return; // nothing to act on (e.g. no current item)
      const r = await fetch(`/api/${encodeURIComponent(annotator)}/${page}/${action}`, {
        method: "POST", headers: { "Content-Type": "application/json", "X-Bakeoff-Key": key },
        body: JSON.stringify(data), credentials: "same-origin", cache: "no-store",
      });
      const html = await r.text();
      if (!r.ok && r.status !== 409) {
        const why = new DOMParser().parseFromString(html, "text/html").body.textContent.trim();
        throw new Error(`server answered ${r.status}${why ? ": " + why : ""}`);
      }
      const before = state();
      const was = `${before.qid}\u0000${before.doc}`;
      if (action === "view" && t0 === undefined && html.includes(`data-qid="${before.qid}" data-doc="${before.doc}"`)
          && document.getElementById("message")) {
        return; // the load-time refresh found the same item: keep the message the page was served with
      }
      work.innerHTML = html;
      const after = state();
      if (page !== "settle" && (`${after.qid}\u0000${after.doc}` !== was || after.done === "1")) {
        // a new document (or the end): its top in view and the focus on the work area, not left
        // where the previous, possibly long, document was scrolled to
        window.scrollTo(0, 0);
        work.focus({ preventScroll: true });
      }
      say(r.status === 409 ? "Not recorded (see message)" : "", r.status === 409);
      const dom = performance.now();
      if (t0 !== undefined) {
        const st = /dur=([0-9.]+)/.exec(r.headers.get("server-timing") || "");
        const rec = { action, dom_ms: dom - t0, frame_ms: null, server_ms: st ? Number(st[1]) : null };
        window.__bakeoffLatency.push(rec);
        requestAnimationFrame(() => { rec.frame_ms = performance.now() - t0; });
      }
    }).catch((e) => {
      say(`Error: ${e.message}. This key was not recorded; reload the page.`, true);
    }).finally(() => {
      requestAnimationFrame(() => { window.__bakeoffPending -= 1; });
    });
  }

  // -- labelling ------------------------------------------------------------------------
  const current = () => {
    const s = state();
    return s.done === "0" ? { qid: s.qid, doc: s.doc } : null;
  };
  const noteValue = () => {
    const n = document.getElementById("note");
    return n ? n.value : "";
  };
  const grade = (g, t0) => send("judge", () => {
    const c = current();
    // the grade this page shows: the server refuses the write when another tab changed it since
    const shown = state().grade;
    return c ? { ...c, grade: g, note: noteValue(), replaces: shown === undefined || shown === "" ? null : Number(shown) } : null;
  }, t0);
  const move = (to, t0, extra) => send("move", () => ({ to, ...(extra || {}) }), t0);

  function showAll() { // the rest of a long document, cut for reading (see display.py)
    const rest = document.getElementById("drest");
    const cut = document.getElementById("cut");
    if (rest) rest.hidden = false;
    if (cut) cut.hidden = true;
  }

  function labelKey(ev, t0) {
    switch (ev.key) {
      case "0": case "1": case "2": case "3": grade(Number(ev.key), t0); return true;
      case "n": move("next_query", t0); return true;
      case "p": move("prev_query", t0); return true;
      case "j": case "ArrowRight": move("next_doc", t0); return true;
      case "k": case "ArrowLeft": move("prev_doc", t0); return true;
      case "u": send("undo", {}, t0); return true;
      case "s": send("skip", () => current(), t0); return true;
      case "x": send("cant_tell", () => current(), t0); return true;
      case "m": showAll(); return true;
      case "o": window.location.href = `/overview/${encodeURIComponent(annotator)}`; return true;
      case "c": { // edit the note: the caret at its end, nothing selected (typing adds, never replaces)
        const n = document.getElementById("note");
        if (n) { n.focus(); n.setSelectionRange(n.value.length, n.value.length); }
        return true;
      }
      default: return false;
    }
  }

  // -- review ---------------------------------------------------------------------------
  const reviewing = () => {
    const s = state();
    return s.done === "0" ? s.qid : null;
  };
  const decide = (decision, t0, text) => send("decide", () => {
    const qid = reviewing();
    return qid ? { qid, decision, ...(text === undefined ? {} : { text }) } : null;
  }, t0);
  function openEdit() {
    const f = document.getElementById("editform");
    const i = document.getElementById("edit");
    if (!f || !i) return;
    f.hidden = false;
    i.focus();
    i.select();
  }

  function reviewKey(ev, t0) {
    switch (ev.key) {
      case "a": decide("accept", t0); return true;
      case "r": decide("reject", t0); return true;
      case "e": openEdit(); return true;
      case "n": send("move", { to: "next" }, t0); return true;
      case "p": send("move", { to: "prev" }, t0); return true;
      case "u": send("undo", {}, t0); return true;
      default: return false;
    }
  }

  // -- keys and clicks --------------------------------------------------------------------
  const toggleHelp = (show) => { help.hidden = show === undefined ? !help.hidden : !show; };
  const guide = document.getElementById("guide");
  const toggleGuide = (show) => { if (guide) guide.hidden = show === undefined ? !guide.hidden : !show; };

  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.isComposing) return;
    const t0 = ev.timeStamp;
    const target = ev.target;
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA")) {
      if (ev.key === "Escape") {
        if (target.id === "edit") document.getElementById("editform").hidden = true;
        target.blur();
        ev.preventDefault();
      } else if (ev.key === "Enter") {
        ev.preventDefault();
        if (target.id === "edit") {
          decide("edit", t0, target.value);
        } else if (target.id === "note") {
          const g = state().grade;
          target.blur();
          if (g !== undefined && g !== "") grade(Number(g), t0);
        }
      }
      return;
    }
    if (ev.key === "?") { toggleGuide(false); toggleHelp(); ev.preventDefault(); return; }
    if (ev.key === "g" && guide) { toggleHelp(false); toggleGuide(); ev.preventDefault(); return; }
    if (ev.key === "Escape") { toggleHelp(false); toggleGuide(false); return; }
    if (!help.hidden || (guide && !guide.hidden)) return;
    if (page === "settle") return;
    const handled = page === "label" ? labelKey(ev, t0) : reviewKey(ev, t0);
    if (handled) ev.preventDefault();
  });

  document.addEventListener("click", (ev) => {
    const el = ev.target.closest("button");
    if (!el) return;
    const t0 = ev.timeStamp;
    if (el.id === "help-button") { toggleGuide(false); toggleHelp(); return; }
    if (el.id === "guide-button") { toggleHelp(false); toggleGuide(); return; }
    if (el.dataset.settle !== undefined) { // the disagreements page: a reviewer's grade (or none)
      const item = el.closest("article");
      const g = el.dataset.settle;
      send("decide", { qid: item.dataset.qid, doc: item.dataset.doc, grade: g === "" ? null : Number(g) }, t0);
      return;
    }
    if (el.dataset.grade !== undefined) grade(Number(el.dataset.grade), t0);
    else if (el.dataset.decision === "edit") openEdit();
    else if (el.dataset.decision !== undefined) decide(el.dataset.decision, t0);
    else if (el.dataset.act === "skip") send("skip", () => current(), t0);
    else if (el.dataset.act === "cant_tell") send("cant_tell", () => current(), t0);
    else if (el.dataset.act === "undo") send("undo", {}, t0);
    else if (el.dataset.act === "showall") showAll();
    else if (el.dataset.act === "last") move("prev_query", t0);
    else if (el.dataset.act === "first") move("next_query", t0);
    else if (el.classList.contains("chip") && el.dataset.doc !== undefined) {
      const s = state();
      move("goto", t0, { qid: s.qid, doc: el.dataset.doc });
    }
  });

  // Refresh the work area once on load (untimed): it also warms the page's request path, so the
  // first key is answered as fast as the others.
  send("view", {});
  // guidelines open by themselves before an annotator's first grade
  if (guide && page === "label" && state().first === "1") toggleGuide(true);

  document.addEventListener("submit", (ev) => {
    if (ev.target.id === "editform") {
      ev.preventDefault();
      decide("edit", ev.timeStamp, document.getElementById("edit").value);
    }
  });
})();
