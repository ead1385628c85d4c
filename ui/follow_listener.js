// The class follower's listener (ui/class_follow.py draws it, with its settings in the data-
// attributes of the hidden #attn-follow element, which every rerun updates): wait on the server
// (server/follow.py's /_attn/follow) for the class's next change; a sent page opens inside the
// Streamlit session as the Back button opens one (the address set, then a popstate event); any
// other change clicks the panel's "Look again" button, unless the answer's page signature is the
// one this page drew (data-page: the change leaves the page as it is, as another student removed),
// when it waits again for the next version without a rerun. An answer to a request whose address the
// page has since drawn anew is dropped, and the page's own asked. While the server cannot be asked, it
// clicks "Look again" every data-safety-ms. The browser runs the script once per page load.
(() => {
  if (window.attnFollowing) return;
  window.attnFollowing = true;
  const sleep = ms => new Promise(done => setTimeout(done, ms));
  const data = () => document.getElementById('attn-follow');
  const look = () => {
    const d = data(), b = d && document.querySelector('.st-key-' + d.dataset.look + ' button');
    if (b) b.click();
  };
  (async () => {
    let pause = 1000, looked = Date.now();
    for (;;) {
      const d = data();
      if (!d) { await sleep(500); continue; }
      const url = d.dataset.url, here = d.dataset.here;
      if (here && location.pathname + location.search !== here) history.replaceState(history.state, '', here);
      try {
        const r = await fetch(url, {credentials: 'same-origin', cache: 'no-store'});
        if (r.ok) {
          const s = await r.json();
          const now = data();
          if (now && now.dataset.url !== url) continue;  // the page drew its listener again meanwhile (an answer
          // taken: what a reveal would change there is another now), so this answer is not its: ask with its own
          if (s.open && s.page && s.page === d.dataset.page && s.version !== Number(d.dataset.version)) {
            // nothing on this page changes: wait past the new version (the next rerun draws it anyway)
            d.dataset.version = String(s.version);
            d.dataset.url = url.replace(/([?&]v=)-?[0-9]+/, '$1' + s.version);
          } else if (s.version !== Number(d.dataset.version) || !s.open) {
            const sent = s.open && s.link && d.dataset.stay !== '1' ? d.dataset.base + '/' + s.link : '';
            if (sent && location.pathname + location.search !== sent) {
              history.replaceState(history.state, '', sent);
              window.dispatchEvent(new PopStateEvent('popstate', {state: history.state}));
              window.attnSentOpened = (window.attnSentOpened || 0) + 1;  // the browser tests count them
            } else {
              look();
            }
            for (let i = 0; i < 200 && data() && data().dataset.url === url; i++) await sleep(50);
          }
          pause = 1000;
          continue;
        }
      } catch (e) {}
      if (Date.now() - looked >= Number(d.dataset.safetyMs)) { look(); looked = Date.now(); }
      await sleep(pause);
      pause = Math.min(2 * pause, 15000);
    }
  })();
})();
