#!/usr/bin/env python3
"""Writes neutralizer_cases.json: the texts the MEMORY.md tag neutralizer is checked on, against
Claude Code's own code (neutralizer_oracle.mjs) and Mneme's (tests/neutralizer.rs).

    python3 neutralizer_cases.py > neutralizer_cases.json

Every look-alike of ../../data/lookalikes.txt spelled into a tag name that holds its letters,
every look-alike bracket, the characters allowed between a name's letters, `channel` and `antml`
with their tails, near misses that must stay as they are, and seeded random mixtures of all of
these. Deterministic: the same table gives the same file.
"""
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
TAGS = ["bash-input", "bash-stdout", "bash-stderr", "bash-exit-code", "local-command-stdout", "local-command-stderr",
        "local-command-caveat", "command-name", "command-message", "command-args", "task-notification", "agent-message",
        "teammate-message", "cross-session-message", "remote-review", "slack-ping", "slack-tag-message", "tick",
        "fetched-web-content", "coordinator-relay", "artifact-type-instructions", "cowritten-artifact-html",
        "artifact-file-content", "artifact-origin-notes", "artifact-stored-declaration", "system-reminder",
        "system_reminder", "function_results", "tool_use_error", "sandbox_violations", "persisted-output", "total_tokens",
        "user-prompt-submit-hook", "untrusted-widget-state"]
# Characters allowed between a name's letters (format, default-ignorable, combining marks, controls)
# and some that are not.
BETWEEN = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufe0f", "\ufe0e", "\u00ad", "\u034f", "\u0301", "\u0345", "\u0346",
           "\u0483", "\u05bf", "\u064b", "\u1ab0", "\u1dc0", "\u20d0", "\u3099", "\ufe20", "\u180e", "\u061c", "\u202e",
           "\ufeff", "\u115f", "\u3164", "\uffa0", "\U000e0041", "\U0001d173", "\x01", "\x0b", "\x0c", "\x1f", "\x7f",
           "\x85", "\x9f", "\u2028", "\u2029", "\t", "\r", "\n", " ", "\u00a0", "\u2800", "\u0300\u0301", "\u200d\u0301"]
COLONS = [":", "\uff1a", "\ufe55", "\ufe13", "\ua789", "\u2236", "\u02d0", "\u02f8", "\u05c3", "\u0589", "\u0703",
          "\u0704", "\u16ec", "\u1803", "\u1809", "\u205a", "\ua4fd", "\ufe30", ";", "\u2237", "\uff1b"]
EQUALS = ["=", "\u207c", "\u208c", "\ufe66", "\uff1d", "\ua78a", "\u2550", "\u268c", "\ua4ff", "\U0001f7f0", "\u2e40",
          "\u30a0", "\u1400", "\u2261", ":", "-"]
BLANKS = ["", " ", "  ", "\t", "\n", "\u00a0", "\u3000", "\u2800", "\u200b", "\u2003", "\u180e", "\u0301", "\ufeff"]


def table():
    reading, brackets = {}, {"open": [], "close": []}
    for line in open(os.path.join(HERE, "..", "..", "data", "lookalikes.txt"), encoding="utf-8"):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        f = line.split(" ")
        if f[0] in ("open", "close"):
            brackets[f[0]] += [chr(int(c, 16)) for c in f[2:]]
        else:
            reading[chr(int(f[0], 16))] = f[1]
    return reading, brackets


def main():
    reading, brackets = table()
    opens = brackets["open"]
    closes = brackets["close"]
    cases = []
    add = cases.append
    # Each look-alike in a tag name that holds what it reads as; or, when none does, before and
    # after a name (where a read letter is filler, or ends the name).
    for ch, r in reading.items():
        letters = r.strip("[]") if r.startswith("[") else r
        options = [letters[0], letters[1]] if r.startswith("[") else [letters]
        if r == "=":
            options = ["-", "_"]
        done = False
        for want in options:
            for tag in TAGS:
                at = tag.find(want)
                if at >= 0 and r != "~":
                    add(f"- <{tag[:at]}{ch}{tag[at + len(want):]}> and <{tag[:at]}{ch}{tag[at + len(want):]}x>")
                    done = True
                    break
            if done:
                break
        if not done:
            add(f"- <{ch}tick> <tick{ch}> <tic{ch}k>")
    # Every bracket, before a tag, a near miss, an escaped tag and a closing slash.
    for b in opens:
        add(f"a{b}system-reminder> b {b}ticket> {b}\\tick> {b}/ tick> {b}{b}tick>")
        for c in closes[:3] + closes[-2:]:
            add(f"{b}{c}tick> {b}{c}")
    for c in closes:
        add(f"<{c}tick> {c}tick> <tick{c}")
    # Between the letters of a name, at its start and at its end.
    for x in BETWEEN:
        add(f"<sy{x}stem-reminder> <tick{x}> <{x}tick> <ti{x}{x}ck> <system{x}-reminder> <ﬁ{x}tick>")
        add(f"<channel{x}source=\"a\"> <channel{x}x source=\"a\"> <channel {x}source{x}=\"a\">")
        add(f"<antml{x}:x> <ant{x}ml:x> <{x}x>")
    for c in COLONS:
        add(f"<antml{c}invoke> <ANTML {c}> < antml{c}> <antmlx{c}>")
    for e in EQUALS:
        for b in BLANKS:
            add(f"<channel source{b}{e}\"x\"> <channel xsource{b}{e}> <channel_source{e}> <channel -source{e}>")
    # The 120 characters `channel` reaches, counted as read.
    for n in (118, 119, 120, 121):
        add("<channel " + "a" * n + "source=\"x\">")
        add("<channel " + "a" * (n - 1) + " source=\"x\">")
        add("<channel " + "\ufb03" * n + " source=\"x\">")
        add("<channel " + "\u33d2" * n + " source=\"x\">")
        add("<channel " + "\u200b" * n + "source=\"x\">")
        add("<channel " + "\U0001d41a" * n + " source=\"x\">")
        add("<channel " + "<" * n + " source=\"x\">")
    add("<channel \u33b3ource=\"x\"> <channel x\u33b3ource=\"x\"> <channel \u33b3\u33b3ource=\"x\">")
    add("<channel\x0bsource=1> <channel\u2028source=1> <channel\u200bsource=1> <channel\u3164source=1> <channel\x85source=1>")
    add("<channel>source=1 <channel source=1> <channel source=1>x <channel\n  source = 1>")
    # Plain near misses and hits, as the plain spellings go.
    add("<tick> <ticket> <TICK/> <1tick> <-tick> <_tick> <<tick> <\\tick> <x:tick> <ti-ck> </ System_Reminder >")
    add("< / tick> <//tick> <./tick> <\U0001f600tick> <\u00e9tick> <tick\u00e9> <t\u00efck> <tick\\>")
    # Seeded mixtures.
    rng = random.Random(20261207)
    by_letter = {}
    for ch, r in reading.items():
        if r.startswith("["):
            for l in r[1:-1]:
                by_letter.setdefault(l, []).append(ch)
        elif r == "=":
            by_letter.setdefault("-", []).append(ch)
            by_letter.setdefault("_", []).append(ch)
        elif len(r) == 1 and r != "~":
            by_letter.setdefault(r, []).append(ch)
    prefixes = ["", " ", "/", " / ", "\uff0f", "\u2215", "x", "\uff58", "\u0301", "!", "\u200d", "\t", "\n", "\u3000", "\\"]
    suffixes = ["", ">", " ", "x", "\uff58", "-", "_", "\u200d", "\\", "\u0301", "/>", "\uff1e", "1", "\u00e9", "\u2e40"]
    everything = TAGS + ["channel", "antml", "ticket", "systemreminder", "bash-inputs", "tik"]
    for _ in range(2500):
        tag = rng.choice(everything)
        name = ""
        for i, l in enumerate(tag):
            if i > 0 and rng.random() < 0.08:
                name += rng.choice(BETWEEN)
            if rng.random() < 0.3 and l in by_letter:
                name += rng.choice(by_letter[l])
            elif rng.random() < 0.15:
                name += l.upper()
            else:
                name += l
            if rng.random() < 0.02:
                name += rng.choice("xq")
        tail = rng.choice(suffixes)
        if tag == "channel":
            tail = rng.choice(["", " ", "\x0b", "x"]) + rng.choice(["", "id=1 ", "\ufb01" * rng.randint(0, 130)]) + rng.choice(["source", "s\u200dource", "\uff53ource", "sorce"]) + rng.choice(BLANKS) + rng.choice(EQUALS) + "\"x\">"
        if tag == "antml":
            tail = rng.choice(COLONS) + "x>"
        bracket = rng.choice(opens + ["<", "<", "<"])
        add(rng.choice(["", "- ", "text ", "\u2014 "]) + bracket + rng.choice(prefixes) + name + tail + rng.choice(["", " end", "\n<tick>"]))
    json.dump(cases, open(1, "w", encoding="utf-8", closefd=False), ensure_ascii=False, indent=0)


main()
