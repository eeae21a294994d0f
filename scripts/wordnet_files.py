"""Reading WordNet 3.0's database files as Debian's `wordnet-base` installs them, for the
generators of the offline ranker's tables (scripts/wordnet-synonyms.py, scripts/wordnet-phrases.py).
Format: wndb(5WN). Every file starts with a licence header whose lines begin with two spaces."""
import os
import re


def lines(wn, name):
    """The lines of one database file, without the licence header."""
    with open(os.path.join(wn, name), encoding="latin-1") as f:
        for line in f:
            if not line.startswith("  "):
                yield line


def synsets(wn, pos):
    """Each synset of `data.<pos>`: (offset, lemmas, the fields after the lemmas, gloss). Lemmas
    are lower-cased, without adjective markers like `(a)`."""
    for line in lines(wn, "data." + pos):
        head, _, gloss = line.partition(" | ")
        body = head.split()
        w_cnt = int(body[3], 16)
        lemmas = [re.sub(r"\(.*\)$", "", body[4 + 2 * i]).lower() for i in range(w_cnt)]
        yield body[0], lemmas, body[4 + 2 * w_cnt :], gloss.strip()


def index_entries(wn, pos):
    """Each lemma of `index.<pos>`: (lemma, its sense count, how many of its senses occur in the
    sense-tagged corpus, its synset offsets, most frequent first)."""
    for line in lines(wn, "index." + pos):
        parts = line.split()
        p_cnt = int(parts[3])
        yield parts[0], int(parts[2]), int(parts[5 + p_cnt]), parts[6 + p_cnt :]
