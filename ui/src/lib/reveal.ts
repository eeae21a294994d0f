// A panel or form that appears because the user asked for it (New memory, Trash, Rename) is
// brought into view and given the keyboard: on a long page it would otherwise open below the
// fold while focus stays on the button. Escape inside it cancels, as in a dialog.

export function reveal(node: HTMLElement, oncancel?: () => void) {
  node.scrollIntoView?.({ block: 'nearest', behavior: 'smooth' });
  // A confirmation names the control to start on (its Cancel, not the destructive button).
  const first = node.querySelector<HTMLElement>('[data-autofocus]') ?? node.querySelector<HTMLElement>('input:not([type=hidden]), textarea, select, button');
  first?.focus({ preventScroll: true });
  const onkey = (e: KeyboardEvent) => {
    if (e.key === 'Escape' && oncancel) {
      e.preventDefault();
      e.stopPropagation();
      oncancel();
    }
  };
  node.addEventListener('keydown', onkey);
  return {
    update(next?: () => void) {
      oncancel = next;
    },
    destroy() {
      node.removeEventListener('keydown', onkey);
    },
  };
}
