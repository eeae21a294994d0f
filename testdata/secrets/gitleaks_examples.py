#!/usr/bin/env python3
"""Regenerates gitleaks-examples.jsonl from a gitleaks checkout.

gitleaks (MIT, see THIRD_PARTY_NOTICES.md) validates every rule of its default config with
true- and false-positive examples written as Go code in cmd/generate/config/rules/*.go: string
literals, plus samples built by `secrets.NewSecret(regex)` (a random string matching the
regex) and `utils.GenerateSampleSecrets(identifier, secret)` (the secret in 25 assignment
styles). Go is not needed: this script evaluates that small subset of Go itself — string
literals, `+`, `[]string{...}`, `map[string]string{...}`, `append`, `fmt.Sprintf` and the
generator helpers — with a fixed random seed, so the file is reproducible.

    python3 testdata/secrets/gitleaks_examples.py /path/to/gitleaks > testdata/secrets/gitleaks-examples.jsonl

Every rule function must evaluate; anything the evaluator does not understand is an error.
"""

import base64
import json
import random
import re
import re._parser as sre_parse  # Python 3.11+
import re._constants as sre_c
import sys
from pathlib import Path

RNG = random.Random(20261201)

# --- the generator helpers (cmd/generate/config/utils) -------------------------------------

def AlphaNumeric(n): return f"[a-z0-9]{{{n}}}"
def Hex(n): return f"[a-f0-9]{{{n}}}"
def Numeric(n): return f"[0-9]{{{n}}}"
def AlphaNumericExtendedShort(n): return f"[a-z0-9_-]{{{n}}}"
def AlphaNumericExtended(n): return f"[a-z0-9=_\\-]{{{n}}}"
def AlphaNumericExtendedLong(n): return f"[a-z0-9\\/=_\\+\\-]{{{n}}}"
def Hex8_4_4_4_12(): return "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

SAMPLES = [
    '{i}Token="{s}"', '{i}Token = "{s}"', '{i}Token={s}', '{i}Token = {s}',
    '{\n    "{i}_token": "{s}"\n}', '{"config.ini": "{I}_TOKEN={s}\\nBACKUP_ENABLED=true"}',
    '<{i}Token>\n    {s}\n</{i}Token>', '{i}_token: {s}', "{i}_token: '{s}'", '{i}_token: "{s}"',
    'string {i}Token = "{s}";', 'var {i}Token string = "{s}"', '{i}Token := "{s}"', '{i}Token := `{s}`',
    'String {i}Token = "{s}";', 'var {i}Token = "{s}"', '${i}Token .= "{s}"', "{i}Token = '{s}'",
    '{i}Token = "{s}"', 'System.setProperty("{I}_TOKEN", "{s}")', '  "{i}Token" => "{s}"',
    '{i}_TOKEN = "{s}"', '{i}_TOKEN := "{s}"', '{i}_TOKEN ::= "{s}"', '{i}_TOKEN :::= "{s}"', '{i}_TOKEN ?= "{s}"',
]


def fill(template, i, s):
    # strings.NewReplacer replaces in one pass, so a secret containing "{i}" stays as it is.
    return re.sub(r"\{[iIs]\}", lambda m: {"{i}": i, "{I}": i.upper(), "{s}": s}[m.group(0)], template)


def GenerateSampleSecrets(i, s): return [fill(t, i, s) for t in SAMPLES]
def GenerateSampleSecret(i, s): return f'{i}_api_token = "{s}"'


def NewSecret(regex):
    """A random string matching `regex` (reggen's behaviour: unbounded repeats add at most one)."""
    pattern = regex.replace("\\z", "\\Z")
    pattern = re.sub(r"\[\[:(\w+):\]\]", lambda m: {"alnum": "[a-zA-Z0-9]", "alpha": "[a-zA-Z]", "digit": "[0-9]"}[m.group(1)], pattern)
    tree = sre_parse.parse(pattern)
    return gen(tree)


ALL = [chr(c) for c in range(0x21, 0x7F)]
CATS = {
    sre_c.CATEGORY_DIGIT: "0123456789",
    sre_c.CATEGORY_WORD: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_",
    sre_c.CATEGORY_SPACE: " ",
}


def class_chars(items):
    chars, negate = set(), False
    for op, av in items:
        if op == sre_c.NEGATE:
            negate = True
        elif op == sre_c.LITERAL:
            chars.add(chr(av))
        elif op == sre_c.RANGE:
            chars.update(chr(c) for c in range(av[0], av[1] + 1))
        elif op == sre_c.CATEGORY:
            if av in CATS:
                chars.update(CATS[av])
            elif av == sre_c.CATEGORY_NOT_SPACE:
                chars.update(ALL)
            elif av == sre_c.CATEGORY_NOT_DIGIT:
                chars.update(c for c in ALL if not c.isdigit())
            elif av == sre_c.CATEGORY_NOT_WORD:
                chars.update(c for c in ALL if not (c.isalnum() or c == "_"))
            else:
                raise ValueError(f"category {av}")
        else:
            raise ValueError(f"class item {op}")
    if negate:
        chars = set(ALL) - chars
    return sorted(chars)


def gen(tree):
    out = []
    for op, av in tree:
        if op == sre_c.LITERAL:
            out.append(chr(av))
        elif op == sre_c.NOT_LITERAL:
            out.append(RNG.choice([c for c in ALL if c != chr(av)]))
        elif op == sre_c.ANY:
            out.append(RNG.choice(ALL))
        elif op == sre_c.IN:
            out.append(RNG.choice(class_chars(av)))
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None)):
            lo, hi, sub = av
            hi = lo + 1 if hi == sre_c.MAXREPEAT else hi
            out.extend(gen(sub) for _ in range(RNG.randint(lo, hi)))
        elif op == sre_c.SUBPATTERN:
            out.append(gen(av[-1]))
        elif op == sre_c.BRANCH:
            out.append(gen(RNG.choice(av[1])))
        elif op == sre_c.AT:
            pass
        elif op == sre_c.CATEGORY:
            out.append(RNG.choice(class_chars([(op, av)])))
        else:
            raise ValueError(f"regex op {op}")
    return "".join(out)


def new_plausible_secret(regex):
    """generic.go's newPlausibleSecret: retries until the secret has a digit 1-9 and no stopword."""
    stop = [w.lower() for w in GLOBALS["DefaultStopWords"]]
    while True:
        s = NewSecret(regex)
        if re.search("[1-9]", s) and not any(w in s.lower() for w in stop):
            return s


def generate_test_values():
    """jwt.go's generateTestValues: base64 of a JWT for every JOSE header parameter, four ways."""
    suffix = ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    src = (RULES_DIR / "jwt.go").read_text()
    block = re.search(r"headers := map\[string\]\[\]string\{\n(.*?)\n\t\}\n", src, re.S).group(1)
    out = []
    for key, values in re.findall(r'^\t\t"([^"]+)":\s*\{(.*?)\},?\s*$', block, re.M | re.S):
        for value in re.findall(r"`([^`]*)`", values):
            header = '{"%s":%s}' % (key, value)
            jwt = (base64.urlsafe_b64encode(header.encode()).decode().rstrip("=") + suffix).encode()
            std = base64.b64encode(jwt).decode()
            url = base64.urlsafe_b64encode(jwt).decode()
            out += [std, std.rstrip("="), url, url.rstrip("=")]
    if len(out) < 100:
        raise SyntaxError("jwt.go's header table was not read")
    return out


def Sprintf(fmt, *args):
    return re.sub(r"%[sdvq%]", lambda m, it=iter(args): "%" if m.group(0) == "%%" else (json.dumps(next(it)) if m.group(0) == "%q" else str(next(it))), fmt)


FUNCS = {
    "utils.AlphaNumeric": AlphaNumeric, "utils.Hex": Hex, "utils.Numeric": Numeric,
    "utils.AlphaNumericExtendedShort": AlphaNumericExtendedShort, "utils.AlphaNumericExtended": AlphaNumericExtended,
    "utils.AlphaNumericExtendedLong": AlphaNumericExtendedLong, "utils.Hex8_4_4_4_12": Hex8_4_4_4_12,
    "utils.GenerateSampleSecrets": GenerateSampleSecrets, "utils.GenerateSampleSecret": GenerateSampleSecret,
    "secrets.NewSecret": NewSecret, "fmt.Sprintf": Sprintf,
    "strings.Repeat": lambda s, n: s * n, "strings.ToUpper": str.upper, "strings.ToLower": str.lower,
    "b64.StdEncoding.EncodeToString": lambda b: base64.b64encode(b.encode()).decode(),
    "base64.StdEncoding.EncodeToString": lambda b: base64.b64encode(b.encode()).decode(),
    "[]byte": lambda s: s, "string": lambda s: s,
    "newPlausibleSecret": new_plausible_secret, "generateTestValues": generate_test_values,
}
RULES_DIR = Path(".")

# --- a tokenizer and evaluator for the subset of Go the examples are written in --------------

TOKEN = re.compile(r"""
    (?P<ws>[ \t\r]+) | (?P<nl>\n) | (?P<comment>//[^\n]*|/\*.*?\*/) |
    (?P<raw>`[^`]*`) | (?P<str>"(?:[^"\\\n]|\\.)*") | (?P<rune>'(?:[^'\\\n]|\\.)*') |
    (?P<num>\d+(?:\.\d+)?) | (?P<ident>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*) |
    (?P<op>\.\.\.|:=|\[\]|[-+*/%=(){}\[\],:;.!<>&|])
""", re.X | re.S)


def go_unquote(s):
    return json.loads('"' + re.sub(r"\\x([0-9a-fA-F]{2})", r"\\u00\1", s[1:-1]).replace("\\'", "'").replace("\\a", "\\u0007").replace("\\v", "\\u000b") + '"')


def tokenize(src):
    toks, pos = [], 0
    while pos < len(src):
        m = TOKEN.match(src, pos)
        if not m:
            raise SyntaxError(f"cannot tokenize at {src[pos:pos + 40]!r}")
        kind = m.lastgroup
        text = m.group(0)
        pos = m.end()
        if kind in ("ws", "comment"):
            if kind == "comment" and "\n" in text:
                toks.append(("nl", "\n"))
            continue
        if kind == "raw":
            toks.append(("s", text[1:-1].replace("\r", "")))
        elif kind == "str":
            toks.append(("s", go_unquote(text)))
        else:
            toks.append((kind, text))
    return toks


class Eval:
    def __init__(self, toks):
        self.t, self.i, self.env = toks, 0, {}

    def peek(self, k=0):
        return self.t[self.i + k] if self.i + k < len(self.t) else ("eof", "")

    def take(self, text=None):
        tok = self.peek()
        if text is not None and tok[1] != text:
            raise SyntaxError(f"expected {text!r}, got {tok!r}")
        self.i += 1
        return tok

    def skip_nl(self):
        while self.peek()[0] == "nl":
            self.i += 1

    def skip_balanced(self):
        """Skips an expression we do not evaluate (the rule literal), up to the end of line."""
        depth = 0
        while True:
            kind, text = self.take()
            if text in "({[" and kind == "op":
                depth += 1
            elif text in ")}]" and kind == "op":
                depth -= 1
            if kind == "eof" or (depth == 0 and self.peek()[0] in ("nl", "eof")):
                return

    def expr(self):
        v = self.unary()
        while self.peek()[1] == "+":
            self.take()
            self.skip_nl()
            v = v + self.unary()
        return v

    def unary(self):
        kind, text = self.peek()
        if kind == "s":
            self.take()
            return text
        if kind == "num":
            self.take()
            return int(text)
        if text == "[]":
            self.take()
            typ = self.take()[1]
            if self.peek()[1] == "(":
                self.take("(")
                v = self.expr()
                self.take(")")
                return v
            return self.items("}", typ)
        if text == "map":
            self.take()
            self.take("[")
            self.take()
            self.take("]")
            self.take()
            return self.items("}", "map")
        if kind == "ident":
            self.take()
            if self.peek()[1] == "(":
                return self.call(text)
            if text not in self.env:
                raise NameError(text)
            return self.env[text]
        raise SyntaxError(f"unexpected {text!r}")

    def items(self, close, typ):
        self.take("{")
        out = {} if typ == "map" else []
        while True:
            self.skip_nl()
            if self.peek()[1] == close:
                self.take()
                return out
            v = self.expr()
            if typ == "map":
                self.take(":")
                self.skip_nl()
                out[v] = self.expr()
            else:
                out.append(v)
            self.skip_nl()
            if self.peek()[1] == ",":
                self.take()

    def call(self, name):
        self.take("(")
        args = []
        while True:
            self.skip_nl()
            if self.peek()[1] == ")":
                self.take()
                break
            v = self.expr()
            if self.peek()[1] == "...":
                self.take()
                args.extend(v)
            else:
                args.append(v)
            self.skip_nl()
            if self.peek()[1] == ",":
                self.take()
        if name == "append":
            return list(args[0]) + args[1:]
        if name in FUNCS:
            return FUNCS[name](*args)
        raise NameError(f"function {name}")


def rule_functions(src):
    """(function name, body) for each `func X() *config.Rule`."""
    # A body runs to the next top-level func: a raw string may hold a `}` at the line start.
    parts = re.split(r"^(?=func )", src, flags=re.M)
    for part in parts:
        m = re.match(r"func (\w+)\(\) \*config\.Rule \{\n", part)
        if m:
            yield m.group(1), part[m.end():]


GLOBALS = {}


def package_vars(src):
    """Package-level `var x = <expr>` (example lists shared by several rules)."""
    for m in re.finditer(r"^var (\w+) = ", src, re.M):
        ev = Eval(tokenize(src[m.end():]))
        ev.env = GLOBALS
        try:
            GLOBALS[m.group(1)] = ev.expr()
        except (NameError, SyntaxError, ValueError):
            pass


def examples_of(name, body):
    rule_id = re.search(r'RuleID:\s*"([^"]+)"', body)
    ev = Eval(tokenize(body))
    ev.env = dict(GLOBALS)
    result = None
    while ev.peek()[0] != "eof":
        ev.skip_nl()
        kind, text = ev.peek()
        if kind == "eof":
            break
        nxt = ev.peek(1)[1]
        if kind == "ident" and text in ("tps", "fps") and nxt in (":=", "="):
            ev.take()
            ev.take()
            ev.env[text] = ev.expr()
        elif kind == "ident" and nxt in (":=", "=") and text not in ("r",):
            # A helper variable (a generated secret reused by several examples); a value the
            # examples never use may be something else (a regex, a rule), which is skipped.
            start = ev.i
            ev.take()
            ev.take()
            try:
                ev.env[text] = ev.expr()
            except (NameError, SyntaxError):
                ev.i = start
                ev.skip_balanced()
        elif text == "var" and ev.peek(1)[1] == "(":
            ev.take()
            ev.take()
            while True:
                ev.skip_nl()
                if ev.peek()[1] == ")":
                    ev.take()
                    break
                var = ev.take()[1]
                ev.take("=")
                ev.env[var] = ev.expr()
        elif text == "var" and ev.peek(2)[1] == "=":
            ev.take()
            var = ev.take()[1]
            ev.take()
            ev.env[var] = ev.expr()
        elif kind == "ident" and text == "var" and ev.peek(1)[1] in ("tps", "fps"):
            ev.take()
            var = ev.take()[1]
            ev.skip_balanced()
            ev.env[var] = []
        elif text == "return" and ev.peek(1)[1] in ("utils.Validate", "utils.ValidateWithPaths"):
            ev.take()
            fn = ev.take()[1]
            ev.take("(")
            ev.take()  # r
            ev.take(",")
            tps = ev.expr()
            ev.take(",")
            fps = [] if ev.peek()[1] == "nil" else ev.expr()
            if ev.peek()[1] == "nil":
                ev.take()
            result = (tps, fps, fn == "utils.ValidateWithPaths")
            ev.skip_balanced()
        else:
            ev.skip_balanced()
    if result is None:
        raise SyntaxError(f"{name}: no Validate call")
    if not rule_id:
        raise SyntaxError(f"{name}: no RuleID")
    return rule_id.group(1), result


# Rules gitleaks ships without examples ("validate TODO"): samples built the same way from
# the rule's own secret pattern, marked as Mneme's in their source.
EXTRA = {
    "dropbox-short-lived-api-token": ("dropbox", r"sl\.[a-z0-9\-=_]{135}"),
    "dropbox-long-lived-api-token": ("dropbox", r"[a-z0-9]{11}(AAAAAAAAAA)[a-z0-9\-_=]{43}"),
}


def main():
    root = Path(sys.argv[1])
    rules_dir = root / "cmd/generate/config/rules"
    global RULES_DIR
    RULES_DIR = rules_dir
    for path in sorted(rules_dir.glob("*.go")):
        package_vars(path.read_text())
    config_ids = set(re.findall(r"^id = \"([^\"]+)\"", (root / "config/gitleaks.toml").read_text(), re.M))
    seen = set()
    for path in sorted(rules_dir.glob("*.go")):
        src = path.read_text()
        for name, body in rule_functions(src):
            if "Validate" not in body:
                continue
            rule, (tps, fps, with_paths) = examples_of(name, body)
            if rule not in config_ids:
                continue  # a generator function gitleaks' config does not use
            seen.add(rule)
            source = f"gitleaks:cmd/generate/config/rules/{path.name}:{name}"
            for expect, xs in (("secret", tps), ("clean", fps)):
                if with_paths:
                    for file_path, text in xs.items():
                        print(json.dumps({"rule": rule, "text": text, "path": file_path, "expect": expect, "source": source}, ensure_ascii=False))
                else:
                    for text in xs:
                        print(json.dumps({"rule": rule, "text": text, "expect": expect, "source": source}, ensure_ascii=False))

    for rule, (ident, pattern) in EXTRA.items():
        assert rule not in seen, f"gitleaks now has examples for {rule}"
        seen.add(rule)
        for text in GenerateSampleSecrets(ident, NewSecret(pattern)):
            print(json.dumps({"rule": rule, "text": text, "expect": "secret", "source": "mneme:generated from the rule's secret pattern"}))
    # Path-only rules have no content to scan.
    missing = config_ids - seen - {"pkcs12-file"}
    assert not missing, f"rules without examples: {sorted(missing)}"


if __name__ == "__main__":
    main()
