// The teacher's live views (ui/class_live.py draws it, with its settings in the data- attributes of
// the hidden #attn-live element, which every full rerun updates): wait on the server
// (server/class_live.py's /_attn/class-live) for the class's next change, then click the hidden
// button of every live fragment (one fragment rerun each; at most one round per data-gap-ms). Nothing
// while data-paused is 1. A pause and a resume are said in a status region a screen reader reads.
// The browser runs the script once per page load.
(() => {
  if (window.attnLive) return;
  window.attnLive = true;
  const sleep = ms => new Promise(done => setTimeout(done, ms));
  const data = () => document.getElementById('attn-live');
  const region = document.createElement('div');
  region.id = 'attn-live-said';
  region.setAttribute('role', 'status');
  region.style.cssText = 'position:absolute;width:1px;height:1px;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);'
    + 'white-space:nowrap;border:0';
  document.body.appendChild(region);
  let paused = null;
  setInterval(() => {  // the pause said as soon as a rerun draws it, not after the open request
    const d = data();
    if (!d) return;
    const now = d.dataset.paused === '1';
    if (paused !== null && now !== paused) region.textContent = now ? d.dataset.saidPaused : d.dataset.saidResumed;
    paused = now;
  }, 250);
  // a look's click reruns its fragment (Streamlit's front end hears it at its root) and stops there: an
  // open popover (the roster, the waiting list), which closes on a click outside it, stays open
  document.body.addEventListener('click', e => {
    if (e.target.closest && e.target.closest('[class*="st-key-' + (data() || {dataset: {}}).dataset.look + '"]'))
      e.stopPropagation();
  });
  // one click at a time: the front end sends the clicks of one moment as one batch, which reruns
  // only one fragment (the first's); the server queues the fragment reruns that follow each other
  const look = async () => {
    window.attnLiveLooks = (window.attnLiveLooks || 0) + 1;  // the browser tests count them
    const d = data(), step = Number(d.dataset.stepMs);
    for (const b of document.querySelectorAll('[class*="st-key-' + d.dataset.look + '"] button')) {
      b.click();
      await sleep(step);
    }
  };
  const still = (url, drawn) => { const d = data(); return d && d.dataset.url === url && d.dataset.version === drawn
    && d.dataset.paused !== '1'; };
  (async () => {
    let drawn = null, seen = null, last = 0, pause = 1000;
    for (;;) {
      const d = data();
      if (!d || d.dataset.paused === '1') { await sleep(300); continue; }
      if (d.dataset.version !== drawn) drawn = seen = d.dataset.version;  // a full rerun drew it afresh
      const url = d.dataset.url;
      try {
        const r = await fetch(url + '&v=' + encodeURIComponent(seen), {credentials: 'same-origin', cache: 'no-store'});
        if (r.ok) {
          const s = await r.json();
          if (s.version !== seen && still(url, drawn)) {
            await sleep(last + Number(d.dataset.gapMs) - Date.now());
            if (still(url, drawn)) { seen = s.version; last = Date.now(); await look(); }
          }
          pause = 1000;
          continue;
        }
      } catch (e) {}
      await sleep(pause);
      pause = Math.min(2 * pause, 15000);
    }
  })();
})();
