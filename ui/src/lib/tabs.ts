// A row of `role="tab"` buttons (`use:tabs` on their `role="tablist"`) behaves as screen readers
// announce it: ← → (and Home, End) move to the next tab and show it, and Tab leaves the row
// from the shown tab (the others carry tabindex -1 in the markup). Without this a reader who
// hears "tab, 1 of 2" presses → and nothing happens.

export function tabs(node: HTMLElement) {
  const onkey = (e: KeyboardEvent) => {
    if (!['ArrowLeft', 'ArrowRight', 'Home', 'End'].includes(e.key) || e.altKey || e.ctrlKey || e.metaKey) return;
    const all = [...node.querySelectorAll<HTMLElement>('[role="tab"]:not(:disabled)')];
    const at = all.indexOf(e.target as HTMLElement);
    if (at < 0 || !all.length) return;
    e.preventDefault();
    const to = e.key === 'Home' ? 0 : e.key === 'End' ? all.length - 1 : (at + (e.key === 'ArrowRight' ? 1 : -1) + all.length) % all.length;
    all[to].focus();
    all[to].click();
  };
  node.addEventListener('keydown', onkey);
  return { destroy: () => node.removeEventListener('keydown', onkey) };
}
