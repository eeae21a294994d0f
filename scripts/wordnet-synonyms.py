#!/usr/bin/env python3
"""Generates crates/recall/data/synonyms.txt, the offline ranker's related-word table, from
WordNet 3.0 as Debian's `wordnet-base` package installs it (apt-get install wordnet-base).

Why a table and not a thesaurus crate: recall needs a few common senses per word, not every
sense WordNet knows ("main" has a sense "water main" and one "the high seas"), and it must be
small, fixed and reviewable. So, per single-word lemma:
  - only its senses that occur in WordNet's sense-tagged corpus (tagsense_cnt in index.<pos>;
    senses are listed most frequent first), at most MAX_SENSES of them, and its first sense
    when none is tagged but the word is tagged in another part of speech;
  - the other single-word lemmas of those synsets (synonyms), and the lemmas its senses are
    derivationally related to (`+` pointers: "encrypt" - "encryption", "slow" - "slowness");
  - words of three letters or more, letters only.
One line per word that has any: `word senses related related ...`, sorted, where `senses` is
how many senses WordNet knows for the word in all parts of speech (the ranker leaves out words
with too many: "set", "keep" and "call" relate to nearly anything). The ranker stems both sides
at load time with its own stemmer, so the table stays plain words.

Usage: scripts/wordnet-synonyms.py [/usr/share/wordnet] > crates/recall/data/synonyms.txt
"""
import collections
import re
import sys

import wordnet_files

WN = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/wordnet"
POS = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}
MAX_SENSES = 2
WORD = re.compile(r"^[a-z]{3,}$")


def data_lines(pos):
    """synset offset -> (lemmas, derivation targets as (pos, offset, target word number))."""
    out = {}
    for offset, lemmas, rest, _gloss in wordnet_files.synsets(WN, pos):
        p_cnt = int(rest[0])
        derived = []
        for k in range(p_cnt):
            sym, target, tpos, srctgt = rest[1 + 4 * k : 5 + 4 * k]
            if sym == "+":
                src, tgt = int(srctgt[:2], 16), int(srctgt[2:], 16)
                derived.append((src, "adj" if tpos in "as" else {"n": "noun", "v": "verb", "r": "adv"}[tpos], target, tgt))
        out[offset] = (lemmas, derived)
    return out


def main():
    data = {pos: data_lines(pos) for pos in POS}
    # word -> list of (pos, offset) of its chosen senses
    senses = collections.defaultdict(list)
    # word -> how many senses WordNet knows for it, over all parts of speech
    polysemy = collections.Counter()
    for pos in POS:
        for lemma, sense_count, tagged, offsets in wordnet_files.index_entries(WN, pos):
            if not WORD.match(lemma):
                continue
            polysemy[lemma] += sense_count
            if tagged == 0:
                continue
            for off in offsets[: min(tagged, MAX_SENSES)]:
                senses[lemma].append((pos, off))
    related = collections.defaultdict(set)
    for word, chosen in senses.items():
        for pos, off in chosen:
            lemmas, derived = data[pos][off]
            related[word].update(lemmas)
            mine = lemmas.index(word) + 1 if word in lemmas else 0
            for src, tpos, target, tgt in derived:
                if src not in (0, mine):
                    continue
                tl = data[tpos][target][0]
                if tgt:
                    related[word].add(tl[tgt - 1])
    for word in sorted(related):
        rel = sorted(w for w in related[word] if w != word and WORD.match(w))
        if rel:
            print(word, polysemy[word], " ".join(rel))


main()
