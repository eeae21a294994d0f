#!/usr/bin/env python3
"""Fits the offline ranker's confidence model (mneme_recall::offline::Confidence) on labelled
recall prompts, and shows what each threshold would do. See docs/recall.md, "How sure the ranker is".

    scripts/recall-fit-confidence.py                      # fit on labels + heldout + heldout2, check on heldout3
    scripts/recall-fit-confidence.py --fit labels.json,heldout.json --check heldout2.json

Each prompt gives one example: the best memory the ranker weighed (the first it surfaces, or the
closest when it stays silent), with the model switched off (--tune min_confidence=0), labelled by
whether that memory is one of the prompt's relevant ones. The features are those of
Confidence::probability: ln(score), about words (capped at three, over three),
ln(body words + 1) / 6 and ln(prompt words). Plain batch gradient descent on the L2-regularised
log loss, fixed steps, no randomness: the same labels give the same weights. Standard library only.
"""
import argparse
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETS = os.path.join(ROOT, "testdata", "recall-eval")


def outcomes(files, tune=""):
    """The eval's outcomes for these label files, run as one set with the model off (and the
    ranker's other knobs as `tune` sets them)."""
    knobs = ",".join(k for k in [tune, "min_confidence=0"] if k)
    cmd = ["cargo", "run", "--locked", "-q", "-p", "mneme-recall", "--example", "eval", "--", "--json", "--tune", knobs]
    for f in files:
        cmd += ["--labels", os.path.join(SETS, f)]
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["reports"][0]["outcomes"]


def features(c):
    return [
        1.0,
        math.log(max(c["score"], 1e-3)),
        min(c["aboutWords"], 3) / 3,
        math.log(c["bodyWords"] + 1) / 6,
        math.log(max(c["promptWords"], 1)),
    ]


def fit(xs, ys, l2=0.01, steps=4000, rate=0.5):
    w = [0.0] * len(xs[0])
    for _ in range(steps):
        grad = [0.0] * len(w)
        for x, y in zip(xs, ys):
            z = max(-30.0, min(30.0, sum(a * b for a, b in zip(w, x))))
            err = 1 / (1 + math.exp(-z)) - y
            for i, xi in enumerate(x):
                grad[i] += err * xi
        # The bias is not regularised.
        for i in range(len(w)):
            w[i] -= rate * (grad[i] / len(xs) + (l2 * w[i] if i else 0.0))
    return w


def figures(outs, w, threshold):
    """recall@5, precision@5, silent share, paraphrase recall@5 with the model at `threshold`."""
    rec, prec, silent, para = [], [], [], []
    for o in outs:
        got = o["retrieved"]
        c = o.get("confidence")
        if got and c and 1 / (1 + math.exp(-sum(a * b for a, b in zip(w, features(c))))) < threshold:
            got = []
        rel = o["relevant"]
        if not rel:
            silent.append(0.0 if got else 1.0)
            continue
        hits = sum(1 for g in got if g in rel)
        rec.append(hits / len(rel))
        prec.append(hits / len(got) if got else 0.0)
        if o["kind"] == "paraphrase":
            para.append(hits / len(rel))
    mean = lambda a: sum(a) / len(a) if a else float("nan")
    return mean(rec), mean(prec), mean(silent), mean(para)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", default="labels.json,heldout.json,heldout2.json", help="label files to fit on (comma list, in testdata/recall-eval)")
    ap.add_argument("--check", default="heldout3.json", help="label files to report on without fitting (comma list; empty for none)")
    ap.add_argument("--tune", default="", help="other knobs of the ranker for both, as scripts/recall-eval.sh --tune takes them (e.g. min_words=1)")
    args = ap.parse_args()
    fit_files = [f for f in args.fit.split(",") if f]
    check_files = [f for f in args.check.split(",") if f]
    train = outcomes(fit_files, args.tune)
    rows = [(features(o["confidence"]), 1.0 if o["confidence"]["memory"] in o["relevant"] else 0.0) for o in train if o.get("confidence")]
    if not rows:
        sys.exit("no prompt had a memory to weigh; check the label files")
    w = fit([x for x, _ in rows], [y for _, y in rows])
    print(f"fitted on {', '.join(fit_files)} ({len(rows)} examples)")
    print("CONFIDENCE_WEIGHTS: [" + ", ".join(f"{v:.2f}" for v in w) + "]  (bias, ln score, about words, ln body words, ln prompt words)")
    check = outcomes(check_files, args.tune) if check_files else []
    print("threshold | fitted sets: recall@5 precision@5 silent paraphrase | " + (", ".join(check_files) if check else ""))
    for t in [0.0, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6]:
        line = f"{t:.2f}      | " + " ".join(f"{v:.3f}" for v in figures(train, w, t))
        if check:
            line += " | " + " ".join(f"{v:.3f}" for v in figures(check, w, t))
        print(line)


if __name__ == "__main__":
    main()
