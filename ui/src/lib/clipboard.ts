// Copying text for the user. The async clipboard API is refused in some webviews and on a page
// that is not a secure context (`mneme serve` opened by a LAN name); a selected textarea and
// `execCommand('copy')` still work there, so the copy falls back to them.

/** What a Copy button says when neither way worked, so the click is not met with nothing. */
export const NOT_COPIED = 'Not copied: this window may not use the clipboard. Select the text and copy it by hand.';

/** Puts `text` on the clipboard; answers whether it got there. */
export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const ta = document.createElement('textarea');
    ta.value = text;
    ta.setAttribute('readonly', '');
    ta.style.position = 'fixed';
    ta.style.opacity = '0';
    document.body.appendChild(ta);
    ta.select();
    let ok = false;
    try {
      ok = document.execCommand('copy');
    } catch {
      ok = false;
    }
    ta.remove();
    return ok;
  }
}
