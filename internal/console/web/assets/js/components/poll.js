// Polling a read until it says stop, with the page's AbortSignal ending it. fn returns true to
// continue. A failed read stops the loop and is handed to onError. Reads only: writes are never
// repeated.

export function poll(fn, { interval = 1000, signal, onError } = {}) {
  let timer = null;
  let stopped = false;
  const stop = () => { stopped = true; if (timer) clearTimeout(timer); };
  if (signal) signal.addEventListener('abort', stop, { once: true });
  const tick = async () => {
    if (stopped) return;
    let more = false;
    try {
      more = await fn();
    } catch (err) {
      if (err && err.name === 'AbortError') return;
      stopped = true;
      if (onError) onError(err);
      return;
    }
    if (more && !stopped) timer = setTimeout(tick, interval);
  };
  timer = setTimeout(tick, interval);
  return stop;
}
