#!/usr/bin/env python3
"""Generates crates/recall/data/phrases.txt, the offline ranker's phrase table, from WordNet 3.0
as Debian's `wordnet-base` package installs it (apt-get install wordnet-base).

People often say in a phrase what a memory says in one word ("bring up to date" for "update",
"shut down" for "close"). WordNet knows such phrases two ways, and both are used:
  - multi-word lemmas: "shut_down" is a lemma of the synset whose one-word lemmas are "close"
    and "fold";
  - short definitions: the gloss of "update" (one of its senses) is "bring up to date".
Per synset among the common senses (those that occur in WordNet's sense-tagged corpus, at most
MAX_SENSES per lemma and part of speech, as scripts/wordnet-synonyms.py chooses them), each
multi-word lemma and each definition of two to MAX_WORDS plain words (the gloss split at `;`,
examples in quotes and parenthesised asides left out) becomes a phrase, related to the
synset's one-word lemmas (three letters or more, letters only).

One line per phrase: `phrase<TAB>word word ...`, sorted. Then, after a line `#irregular`, the
irregular forms WordNet lists (verb.exc, noun.exc, adj.exc) of the words the phrases use, one
`form<TAB>base` a line ("brought" - "bring"), so a phrase matches its inflected forms; the ranker
stems both sides with its own stemmer for the regular ones.

Usage: scripts/wordnet-phrases.py [/usr/share/wordnet] > crates/recall/data/phrases.txt
"""
import collections
import os
import re
import sys

import wordnet_files

WN = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/wordnet"
POS = ["noun", "verb", "adj", "adv"]
MAX_SENSES = 2
MAX_WORDS = 4
# Content words (not stop words) a phrase must have. With one, a phrase is that word with
# function words around it ("set up", "on the job"), as ambiguous as the word alone: "set up"
# stands for "found", "establish", "assemble", "piece" and "tack" in its two common senses.
MIN_CONTENT = int(os.environ.get("MIN_CONTENT", "2"))
WORD = re.compile(r"^[a-z]{3,}$")
PHRASE = re.compile(r"^[a-z]+(?: [a-z]+)+$")
# The ranker's stop words (NLTK's English list).
STOP_WORDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../crates/recall/data/stopwords-en.txt")


def data_lines(pos):
    """synset offset -> (lemmas, gloss)."""
    return {offset: (lemmas, gloss) for offset, lemmas, _rest, gloss in wordnet_files.synsets(WN, pos)}


def main():
    data = {pos: data_lines(pos) for pos in POS}
    stop = set(open(STOP_WORDS).read().split())

    def content_words(phrase):
        return sum(w not in stop for w in phrase.split())

    # The common senses of each lemma (one word or several), as (pos, offset).
    chosen = {}
    for pos in POS:
        for lemma, _sense_count, tagged, offsets in wordnet_files.index_entries(WN, pos):
            for off in offsets[: min(tagged, MAX_SENSES)]:
                chosen.setdefault(lemma, []).append((pos, off))
    phrases = collections.defaultdict(set)
    for lemma, senses in sorted(chosen.items()):
        phrase = lemma.replace("_", " ")
        for pos, off in senses:
            lemmas, gloss = data[pos][off]
            words = [l for l in lemmas if WORD.match(l)]
            if not words:
                continue
            if PHRASE.match(phrase):
                # A multi-word lemma: in its own common senses it means the synset's words.
                if len(phrase.split()) <= MAX_WORDS and content_words(phrase) >= MIN_CONTENT:
                    phrases[phrase].update(words)
                continue
            # A one-word lemma: its definitions in its common senses are phrases for it.
            for part in gloss.split(";"):
                part = re.sub(r"\([^)]*\)", "", part).strip()
                if part.startswith('"') or not PHRASE.match(part) or len(part.split()) > MAX_WORDS:
                    continue
                if content_words(part) >= MIN_CONTENT:
                    phrases[part].update(words)
    used = set()
    for p in sorted(phrases):
        used.update(p.split())
        print(p + "\t" + " ".join(sorted(phrases[p])))
    print("#irregular")
    forms = {}
    for pos in ["verb", "noun", "adj"]:
        with open(os.path.join(WN, pos + ".exc"), encoding="latin-1") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and parts[1] in used and parts[0].isalpha() and parts[0] not in forms:
                    forms[parts[0]] = parts[1]
    for form in sorted(forms):
        print(form + "\t" + forms[form])


main()
